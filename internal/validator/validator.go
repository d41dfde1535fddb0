// Package validator checks DNSSEC data as a validating resolver must
// (RFC 4033-4035, RFC 5155, RFC 6840): the signatures of an RRset against
// its zone's keys, a zone's keys against the DS records its parent
// published (or a trust anchor), and the NSEC and NSEC3 proofs that a name
// or a type does not exist, that a wildcard answer was rightly
// synthesised, and that a delegation is unsigned.
//
// It holds no sockets and no chain state, as Unbound's validator module
// leaves fetching to the iterator: the resolver fetches the DS and DNSKEY
// records of each zone cut and asks the Validator about each step, so that
// every rule is tested with data signed in the test at any clock.
//
// Every signature check and NSEC3 hash counts against a Work, one per
// client query, with the limits the 2023-2024 validator CVEs taught
// (KeyTrap, CVE-2023-50387: signatures tried per RRset, keys tried per key
// tag, signature checks per query; CVE-2023-50868: NSEC3 iterations and
// hashes per query).
package validator

import (
	"fmt"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/wire"
)

// Limits bound the work of validation; each zero field takes its
// DefaultLimits value.
type Limits struct {
	// SigsPerRRset bounds the RRSIGs tried for one RRset (Unbound's
	// MAX_VALIDATE_RRSIGS after KeyTrap: 8).
	SigsPerRRset int
	// KeysPerTag bounds the keys tried for one signature when several
	// share its key tag and algorithm (PowerDNS Recursor's max-dnskeys: 2;
	// KeyTrap's colliding tags).
	KeysPerTag int
	// Checks bounds the signature verifications of one client query
	// (PowerDNS Recursor's max-signature-validations-per-query: 30).
	Checks int
	// NSEC3Insecure: NSEC3 records with more iterations make the answer
	// insecure (RFC 9276 §3.2; 50 as Knot Resolver and the issue).
	NSEC3Insecure int
	// NSEC3Bogus: NSEC3 records with more iterations make it bogus
	// (150, Unbound's highest val-nsec3-keysize-iterations).
	NSEC3Bogus int
	// Hashes bounds the NSEC3 hash computations (iterations + 1 each) of
	// one client query (PowerDNS Recursor's
	// max-nsec3-hash-computations-per-query: 600).
	Hashes int
}

// DefaultLimits are the limits used where a Limits field is zero.
var DefaultLimits = Limits{SigsPerRRset: 8, KeysPerTag: 2, Checks: 30, NSEC3Insecure: 50, NSEC3Bogus: 150, Hashes: 600}

// Options configure a Validator.
type Options struct {
	// Now is the clock signatures are checked against; nil means
	// time.Now. Tests set it to validate data whose signatures expired
	// in real time.
	Now    func() time.Time
	Limits Limits
}

// Validator checks DNSSEC data. It is safe for concurrent use: the state
// of one client query is its Work.
type Validator struct {
	now    func() time.Time
	limits Limits
	// verified are the signatures that verified, not computed again.
	verified sigCache
}

// New returns a Validator.
func New(opt Options) *Validator {
	v := &Validator{now: opt.Now, limits: opt.Limits}
	if v.now == nil {
		v.now = time.Now
	}
	d := DefaultLimits
	for _, l := range []struct {
		v   *int
		def int
	}{{&v.limits.SigsPerRRset, d.SigsPerRRset}, {&v.limits.KeysPerTag, d.KeysPerTag}, {&v.limits.Checks, d.Checks}, {&v.limits.NSEC3Insecure, d.NSEC3Insecure}, {&v.limits.NSEC3Bogus, d.NSEC3Bogus}, {&v.limits.Hashes, d.Hashes}} {
		if *l.v <= 0 {
			*l.v = l.def
		}
	}
	return v
}

// Work is the validation work done for one client query, bounded by the
// Validator's Limits. Not safe for concurrent use.
type Work struct {
	// Checks and Hashes count signature verifications and NSEC3 hash
	// computations (iterations + 1 per name hashed).
	Checks, Hashes int
	// Trace, when set, is told each signature considered and each DS
	// matched against the keys, as it is decided (tern resolve --trace).
	// Nil costs nothing: no event is built.
	Trace func(Event)
}

// Event is one decision of the validator, for a trace (Work.Trace).
type Event struct {
	// Zone is the zone whose keys or data were checked.
	Zone string
	// Text says what was checked and what came of it.
	Text string
}

// sigText describes sig for a trace: what it covers, its signer, key
// tag, algorithm and validity window (RFC 4034 §3.1).
func sigText(sig *dns.RRSIG) string {
	return fmt.Sprintf("RRSIG %s %s by %s key %d alg %s, valid %s to %s", sig.Hdr.Name, dns.TypeToString[sig.TypeCovered],
		sig.SignerName, sig.KeyTag, dns.AlgorithmToString[sig.Algorithm], dns.TimeToString(sig.Inception), dns.TimeToString(sig.Expiration))
}

// Result is the outcome of a check.
type Result struct {
	// Security is Secure, Insecure (provably unsigned, or signed only
	// with what this validator does not support, RFC 4035 §5.2) or
	// Bogus.
	Security cache.Security
	// EDE is the RFC 8914 INFO-CODE saying why, when not Secure.
	EDE uint16
	// Text says it in words (the EDE's EXTRA-TEXT).
	Text string
	// OptOut is set on a denial proved only by an Opt-Out NSEC3 (RFC
	// 5155 §9.2): the delegation it covers may be unsigned.
	OptOut bool
}

// Secure reports whether r is Secure.
func (r Result) Secure() bool { return r.Security == cache.Secure }

// String tells r's security status and, unless secure, why.
func (r Result) String() string {
	switch r.Security {
	case cache.Secure:
		if r.OptOut {
			return "secure (opt-out)"
		}
		return "secure"
	case cache.Insecure:
		return "insecure: " + r.Text
	case cache.Bogus:
		return "bogus: " + r.Text
	}
	return "unchecked"
}

var secure = Result{Security: cache.Secure}

func bogus(ede uint16, format string, args ...any) Result {
	return Result{Security: cache.Bogus, EDE: ede, Text: fmt.Sprintf(format, args...)}
}

func insecure(ede uint16, format string, args ...any) Result {
	return Result{Security: cache.Insecure, EDE: ede, Text: fmt.Sprintf(format, args...)}
}

// Supported reports whether alg is a DNSKEY algorithm this validator
// verifies (RFC 8624 §3.1's MUST and RECOMMENDED validation algorithms,
// through Go's crypto as miekg/dns calls it). Data signed only with
// others is insecure, not bogus (RFC 4035 §5.2).
func Supported(alg uint8) bool {
	switch alg {
	case dns.RSASHA1, dns.RSASHA1NSEC3SHA1, dns.RSASHA256, dns.RSASHA512,
		dns.ECDSAP256SHA256, dns.ECDSAP384SHA384, dns.ED25519:
		return true
	}
	return false
}

// supportedDigest reports whether a DS digest type is one this validator
// computes (RFC 8624 §3.3: SHA-1, SHA-256, SHA-384; not GOST).
func supportedDigest(t uint8) bool {
	return t == dns.SHA1 || t == dns.SHA256 || t == dns.SHA384
}

// equalNames compares two presentation names, case-insensitively.
func equalNames(a, b string) bool { return strings.EqualFold(dns.Fqdn(a), dns.Fqdn(b)) }

// below reports whether name is at or below zone.
func below(name, zone string) bool { return dns.IsSubDomain(zone, name) }

// canonicalLess is the canonical order of RFC 4034 §6.1.
func canonicalLess(a, b string) bool { return wire.CanonicalLess(a, b) }

// VerifyRRset checks that rrset (one RRset, of zone) is signed by one of
// sigs with one of keys, the zone's DNSKEYs already validated (RFC 4035
// §5.3). It returns the signature that verified: its Labels field tells
// whether the RRset was synthesised from a wildcard (RFC 4035 §5.3.4),
// which then needs ProveWildcard.
func (v *Validator) VerifyRRset(rrset []dns.RR, sigs []*dns.RRSIG, keys []*dns.DNSKEY, zone string, w *Work) (Result, *dns.RRSIG) {
	if len(rrset) == 0 {
		return bogus(wire.EDEDNSSECBogus, "empty RRset"), nil
	}
	h := rrset[0].Header()
	what := fmt.Sprintf("%s %s", h.Name, dns.TypeToString[h.Rrtype])
	now := v.now()
	// The most telling reason seen, for when nothing verifies: a
	// signature out of its validity period or keys that cannot be used
	// say more than "bogus".
	why := bogus(wire.EDERRSIGsMissing, "%s: no RRSIG by %s", what, zone)
	tried := 0
	for _, sig := range sigs {
		// RFC 4035 §5.3.1: the signature covers this RRset, is by the
		// zone, and has no more labels than the owner.
		if sig.TypeCovered != h.Rrtype || !equalNames(sig.Hdr.Name, h.Name) || !equalNames(sig.SignerName, zone) || int(sig.Labels) > dns.CountLabel(h.Name) {
			if w.Trace != nil {
				w.Trace(Event{zone, sigText(sig) + ": not taken (not this RRset's, or not by " + zone + ")"})
			}
			continue
		}
		if tried == v.limits.SigsPerRRset {
			return v.traced(w, zone, bogus(wire.EDEDNSSECBogus, "%s: more than %d signatures tried", what, v.limits.SigsPerRRset)), nil
		}
		tried++
		if !Supported(sig.Algorithm) {
			if why.EDE == wire.EDERRSIGsMissing {
				why = bogus(wire.EDEUnsupportedDNSKEYAlgorithm, "%s: signed with unsupported algorithm %d", what, sig.Algorithm)
			}
			if w.Trace != nil {
				w.Trace(Event{zone, sigText(sig) + ": unsupported algorithm, not checked"})
			}
			continue
		}
		if !sig.ValidityPeriod(now) {
			// RFC 4034 §3.1.5: serial arithmetic (RFC 1982 §3.2).
			if wire.SerialCompare(sig.Inception, uint32(now.Unix())) > 0 {
				why = bogus(wire.EDESignatureNotYetValid, "%s: signature by key %d not valid before %s", what, sig.KeyTag, dns.TimeToString(sig.Inception))
			} else {
				why = bogus(wire.EDESignatureExpired, "%s: signature by key %d expired %s", what, sig.KeyTag, dns.TimeToString(sig.Expiration))
			}
			if w.Trace != nil {
				w.Trace(Event{zone, sigText(sig) + ": outside its validity window at " + dns.TimeToString(uint32(now.Unix()))})
			}
			continue
		}
		n := 0
		for _, k := range keys {
			if k.Algorithm != sig.Algorithm || k.KeyTag() != sig.KeyTag || !equalNames(k.Hdr.Name, zone) {
				continue
			}
			// RFC 4034 §2.1.1: without the Zone Key bit a key must
			// not verify RRSIGs; RFC 5011 §2.1: nor when revoked,
			// except its own DNSKEY RRset.
			if k.Flags&dns.ZONE == 0 || k.Protocol != 3 {
				why = bogus(wire.EDENoZoneKeyBitSet, "%s: key %d has no Zone Key bit", what, sig.KeyTag)
				if w.Trace != nil {
					w.Trace(Event{zone, sigText(sig) + ": its key has no Zone Key bit, not used"})
				}
				continue
			}
			if k.Flags&dns.REVOKE != 0 && h.Rrtype != dns.TypeDNSKEY {
				continue
			}
			if n == v.limits.KeysPerTag {
				break
			}
			n++
			key, keyed := sigKey(sig, k, rrset)
			if keyed && v.verified.has(key) {
				if w.Trace != nil {
					w.Trace(Event{zone, sigText(sig) + ": verified (the same signature by the same key over the same data verified before)"})
				}
				return secure, sig
			}
			if w.Checks >= v.limits.Checks {
				return v.traced(w, zone, bogus(wire.EDEDNSSECBogus, "%s: more than %d signature checks for one query", what, v.limits.Checks)), nil
			}
			w.Checks++
			if sig.Verify(k, rrset) == nil {
				if keyed {
					v.verified.add(key)
				}
				if w.Trace != nil {
					w.Trace(Event{zone, sigText(sig) + ": verified"})
				}
				return secure, sig
			}
			why = bogus(wire.EDEDNSSECBogus, "%s: signature by key %d does not verify", what, sig.KeyTag)
			if w.Trace != nil {
				w.Trace(Event{zone, sigText(sig) + ": does not verify"})
			}
		}
		if n == 0 && why.EDE == wire.EDERRSIGsMissing {
			why = bogus(wire.EDEDNSKEYMissing, "%s: no DNSKEY %d/%d in %s", what, sig.Algorithm, sig.KeyTag, zone)
			if w.Trace != nil {
				w.Trace(Event{zone, sigText(sig) + ": no usable DNSKEY with its tag and algorithm"})
			}
		}
	}
	return why, nil
}

// traced tells w's trace of r, a check given up at a limit, and returns it.
func (v *Validator) traced(w *Work, zone string, r Result) Result {
	if w.Trace != nil {
		w.Trace(Event{zone, r.Text})
	}
	return r
}

// VerifyKeys validates zone's DNSKEY RRset: a key it holds matches one of
// ds (the parent's DS RRset, validated, or a trust anchor in DS form) and
// signs it (RFC 4035 §5.2). It returns the zone's keys then usable for
// its other RRsets. When no DS uses an algorithm and digest type this
// validator supports, the zone is Insecure (RFC 4035 §5.2, RFC 6840
// §5.2); DS records of digest type SHA-1 are ignored when SHA-256 or
// SHA-384 ones are there (RFC 4509 §3).
func (v *Validator) VerifyKeys(zone string, dnskeys []*dns.DNSKEY, sigs []*dns.RRSIG, ds []*dns.DS, w *Work) (Result, []*dns.DNSKEY) {
	strong := false
	for _, d := range ds {
		if Supported(d.Algorithm) && (d.DigestType == dns.SHA256 || d.DigestType == dns.SHA384) {
			strong = true
		}
	}
	var usable []*dns.DS
	unsupportedAlg := false
	for _, d := range ds {
		switch {
		case !Supported(d.Algorithm):
			unsupportedAlg = true
			if w.Trace != nil {
				w.Trace(Event{zone, dsText(d) + ": unsupported algorithm, not used"})
			}
		case !supportedDigest(d.DigestType), strong && d.DigestType == dns.SHA1:
			if w.Trace != nil {
				w.Trace(Event{zone, dsText(d) + ": digest type not used (unsupported, or SHA-1 beside a stronger one)"})
			}
		default:
			usable = append(usable, d)
		}
	}
	if len(usable) == 0 {
		if unsupportedAlg {
			return insecure(wire.EDEUnsupportedDNSKEYAlgorithm, "%s: DS only for unsupported algorithms", zone), nil
		}
		return insecure(wire.EDEUnsupportedDSDigestType, "%s: DS only with unsupported digest types", zone), nil
	}
	if len(dnskeys) == 0 {
		return bogus(wire.EDEDNSKEYMissing, "%s: no DNSKEY records", zone), nil
	}
	rrset := make([]dns.RR, len(dnskeys))
	for i, k := range dnskeys {
		rrset[i] = k
	}
	var entry []*dns.DNSKEY
	why := bogus(wire.EDEDNSKEYMissing, "%s: no DNSKEY matches the DS records", zone)
	for _, d := range usable {
		n, matched := 0, 0
		for _, k := range dnskeys {
			if k.Algorithm != d.Algorithm || k.KeyTag() != d.KeyTag {
				continue
			}
			if n == v.limits.KeysPerTag {
				break
			}
			n++
			kd := k.ToDS(d.DigestType)
			if kd == nil || !strings.EqualFold(kd.Digest, d.Digest) {
				if w.Trace != nil {
					w.Trace(Event{zone, fmt.Sprintf("%s: DNSKEY %d (flags %d) has its tag and algorithm, not its digest", dsText(d), k.KeyTag(), k.Flags)})
				}
				continue
			}
			matched++
			if k.Flags&dns.ZONE == 0 {
				why = bogus(wire.EDENoZoneKeyBitSet, "%s: DNSKEY %d matches a DS but has no Zone Key bit", zone, d.KeyTag)
				if w.Trace != nil {
					w.Trace(Event{zone, fmt.Sprintf("%s: matches DNSKEY %d (flags %d), which has no Zone Key bit: not used", dsText(d), k.KeyTag(), k.Flags)})
				}
				continue
			}
			if w.Trace != nil {
				w.Trace(Event{zone, fmt.Sprintf("%s: matches DNSKEY %d (flags %d) by tag, algorithm and digest", dsText(d), k.KeyTag(), k.Flags)})
			}
			entry = append(entry, k)
		}
		if matched == 0 && w.Trace != nil {
			w.Trace(Event{zone, dsText(d) + ": matches no DNSKEY"})
		}
	}
	if len(entry) == 0 {
		return why, nil
	}
	if r, _ := v.VerifyRRset(rrset, sigs, entry, zone, w); !r.Secure() {
		return r, nil
	}
	var keys []*dns.DNSKEY
	for _, k := range dnskeys {
		if k.Flags&dns.ZONE != 0 && k.Flags&dns.REVOKE == 0 {
			keys = append(keys, k)
		}
	}
	return secure, keys
}

// dsText describes d for a trace: key tag, algorithm, digest type (RFC
// 4034 §5.1).
func dsText(d *dns.DS) string {
	return fmt.Sprintf("DS %d alg %s digest %s", d.KeyTag, dns.AlgorithmToString[d.Algorithm], dns.HashToString[d.DigestType])
}

// set reports whether r holds an outcome (the zero Result holds none).
func (r Result) set() bool { return r.Security != cache.Unchecked }
