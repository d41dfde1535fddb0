package signed

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnssec"
)

// The hierarchy's addresses, as offsets from its first: one server per
// level, so that no parent and child share an address (a server
// answers from the deepest zone it holds, never with the referral).
const (
	// AddrRoot serves the root: RSA/SHA-256, NSEC.
	AddrRoot = 0
	// AddrNSEC serves nsec.: ECDSA P-256, NSEC.
	AddrNSEC = 1
	// AddrNSEC3 serves nsec3.: Ed25519, NSEC3 with opt-out.
	AddrNSEC3 = 2
	// AddrLeaves serves every zone below the TLDs.
	AddrLeaves = 3
	// Addrs is the number of addresses the hierarchy takes.
	Addrs = 4
)

// zoneSpec is one zone of the layout: how it is signed, and how it is
// broken.
type zoneSpec struct {
	origin string
	server int
	// text is the zone's records; {N} stands for the address at offset
	// N. children are the delegations whose DS records (as their specs
	// give them) are added to it.
	text     string
	children []string
	// alg signs the zone with one new key (0: unsigned); flags are
	// that key's DNSKEY flags (0: 257); opts the signer's options;
	// window, when set, gives the signatures' inception and
	// expiration from the signing time.
	alg    uint8
	flags  uint16
	opts   dnssec.Options
	window func(now time.Time) (time.Time, time.Time)
	// extraKeys are published beside the zone's key.
	extraKeys func(k *dnssec.Key) ([]*dnssec.Key, error)
	// parentDS replaces the DS records the parent publishes (default:
	// the SHA-256 DS of the zone's key).
	parentDS func() ([]*dns.DS, error)
	// resign changes the records it selects after signing; they are
	// signed again (a defect of content with valid signatures).
	resign func(dns.RR) bool
	// publish adds records to an unsigned zone and gives the parent's
	// DS records.
	publish func(origin string) ([]dns.RR, []*dns.DS)
	// tamper changes the signed zone (a defect the signatures show).
	tamper func([]dns.RR) ([]dns.RR, error)
}

// leafText is the content of every leaf zone: an address, a TXT, a
// wildcard.
const leafText = `@ SOA ns1 hostmaster 1 3600 900 604800 300
@ NS ns1
ns1 A {3}
www A 192.0.2.1
www TXT "www"
*.wild A 192.0.2.2
`

// Leaves are the zones below the TLDs, by origin: what each is for.
var Leaves = map[string]string{
	"good.nsec.":        "ECDSA P-256, NSEC: secure answers, NXDOMAIN, NODATA, wildcard",
	"rsa.nsec.":         "RSA/SHA-256, NSEC3 without opt-out: secure",
	"ed.nsec3.":         "Ed25519, NSEC, below an NSEC3 opt-out TLD: secure",
	"p384.nsec3.":       "ECDSA P-384, NSEC3: secure",
	"rsa512.nsec.":      "RSA/SHA-512, NSEC: secure",
	"gost.nsec.":        "signed, but its parent's DS is of digest type 3 (GOST) alone: insecure (RFC 4035 §5.2, RFC 6840 §5.2)",
	"unsigned.nsec.":    "unsigned, its DS absence proved by NSEC: insecure",
	"optout.nsec3.":     "unsigned, left out of its parent's opt-out NSEC3 chain: insecure",
	"unsupported.nsec.": "a DS and DNSKEY of algorithm 253 (private) alone: insecure (RFC 4035 §5.2)",
	"badsig.nsec.":      "www A changed after signing: bogus signature",
	"expired.nsec.":     "signatures expired three days ago",
	"future.nsec.":      "signatures valid in three days",
	"nosig.nsec.":       "www A without its RRSIG",
	"wrongds.nsec.":     "the parent's DS is another key's",
	"nozonebit.nsec.":   "the key the DS names has no Zone Key bit (flags 1)",
	"nonsec.nsec.":      "NSEC records removed: NXDOMAIN and wildcard answers without proof",
	"badnsec3.nsec.":    "NSEC3 chain hashed with salt aabbccdd, its records say no salt (signed again)",
	"iter500.nsec.":     "NSEC3 with 500 iterations",
	"collide.nsec.":     "a second KSK with the same key tag and algorithm, which signs nothing",
}

// layout is the hierarchy, children before parents.
func layout() []zoneSpec {
	leaf := func(origin string, alg uint8) zoneSpec {
		return zoneSpec{origin: origin, server: AddrLeaves, text: leafText, alg: alg}
	}
	var zones []zoneSpec
	add := func(s zoneSpec) { zones = append(zones, s) }
	add(leaf("good.nsec.", dns.ECDSAP256SHA256))
	s := leaf("rsa.nsec.", dns.RSASHA256)
	s.opts.NSEC3 = true
	add(s)
	add(leaf("ed.nsec3.", dns.ED25519))
	s = leaf("p384.nsec3.", dns.ECDSAP384SHA384)
	s.opts.NSEC3 = true
	add(s)
	add(leaf("rsa512.nsec.", dns.RSASHA512))
	s = leaf("gost.nsec.", dns.ED25519)
	s.parentDS = func() ([]*dns.DS, error) { return []*dns.DS{gostDS("gost.nsec.")}, nil }
	add(s)
	add(leaf("unsigned.nsec.", 0))
	add(leaf("optout.nsec3.", 0))
	s = leaf("unsupported.nsec.", 0)
	s.publish = privateKey
	add(s)
	s = leaf("badsig.nsec.", dns.ED25519)
	s.tamper = func(rrs []dns.RR) ([]dns.RR, error) {
		for _, rr := range rrs {
			if a, ok := rr.(*dns.A); ok && a.Hdr.Name == "www.badsig.nsec." {
				a.A = net.IPv4(192, 0, 2, 66)
			}
		}
		return rrs, nil
	}
	add(s)
	// Three days: beyond Unbound's clock skew allowance (val-sig-skew-max,
	// a day), so that it too sees them out of their window.
	s = leaf("expired.nsec.", dns.ED25519)
	s.window = func(now time.Time) (time.Time, time.Time) {
		return now.Add(-33 * 24 * time.Hour), now.Add(-3 * 24 * time.Hour)
	}
	add(s)
	s = leaf("future.nsec.", dns.ED25519)
	s.window = func(now time.Time) (time.Time, time.Time) {
		return now.Add(3 * 24 * time.Hour), now.Add(33 * 24 * time.Hour)
	}
	add(s)
	s = leaf("nosig.nsec.", dns.ED25519)
	s.tamper = func(rrs []dns.RR) ([]dns.RR, error) {
		return drop(rrs, func(rr dns.RR) bool {
			sig, ok := rr.(*dns.RRSIG)
			return ok && sig.TypeCovered == dns.TypeA && sig.Hdr.Name == "www.nosig.nsec."
		}), nil
	}
	add(s)
	s = leaf("wrongds.nsec.", dns.ED25519)
	s.parentDS = func() ([]*dns.DS, error) {
		other, err := dnssec.GenerateKey("wrongds.nsec.", dnssec.FlagsKSK, dns.ED25519, 3600, nil)
		if err != nil {
			return nil, err
		}
		return []*dns.DS{other.DNSKEY.ToDS(dns.SHA256)}, nil
	}
	add(s)
	s = leaf("nozonebit.nsec.", dns.ED25519)
	s.flags = dns.SEP
	add(s)
	s = leaf("nonsec.nsec.", dns.ED25519)
	s.tamper = func(rrs []dns.RR) ([]dns.RR, error) {
		return drop(rrs, func(rr dns.RR) bool {
			sig, ok := rr.(*dns.RRSIG)
			return rr.Header().Rrtype == dns.TypeNSEC || ok && sig.TypeCovered == dns.TypeNSEC
		}), nil
	}
	add(s)
	s = leaf("badnsec3.nsec.", dns.ED25519)
	s.opts = dnssec.Options{NSEC3: true, NSEC3Salt: "aabbccdd"}
	s.resign = func(rr dns.RR) bool {
		n, ok := rr.(*dns.NSEC3)
		if ok {
			n.Salt, n.SaltLength = "", 0
		}
		return ok
	}
	add(s)
	s = leaf("iter500.nsec.", dns.ED25519)
	s.opts = dnssec.Options{NSEC3: true, NSEC3Iterations: 500}
	add(s)
	s = leaf("collide.nsec.", dns.ED25519)
	s.extraKeys = func(k *dnssec.Key) ([]*dnssec.Key, error) {
		decoy, err := collidingKey(k.DNSKEY)
		return []*dnssec.Key{{DNSKEY: decoy}}, err
	}
	add(s)

	var nsec, nsec3 []string
	for _, z := range zones {
		if dns.IsSubDomain("nsec3.", z.origin) {
			nsec3 = append(nsec3, z.origin)
		} else {
			nsec = append(nsec, z.origin)
		}
	}
	add(zoneSpec{origin: "nsec.", server: AddrNSEC, alg: dns.ECDSAP256SHA256, children: nsec,
		text: "@ SOA ns1 hostmaster 1 3600 900 604800 600\n@ NS ns1\nns1 A {1}\n" + delegations(nsec)})
	add(zoneSpec{origin: "nsec3.", server: AddrNSEC3, alg: dns.ED25519, children: nsec3,
		opts: dnssec.Options{NSEC3: true, OptOut: true},
		text: "@ SOA ns1 hostmaster 1 3600 900 604800 600\n@ NS ns1\nns1 A {2}\n" + delegations(nsec3)})
	add(zoneSpec{origin: ".", server: AddrRoot, alg: dns.RSASHA256, children: []string{"nsec.", "nsec3."},
		text: `$TTL 86400
. SOA a.root. hostmaster.root. 1 1800 900 604800 3600
. NS a.root.
a.root. A {0}
nsec. NS ns1.nsec.
ns1.nsec. A {1}
nsec3. NS ns1.nsec3.
ns1.nsec3. A {2}
`})
	return zones
}

// delegations are the NS records and glue of leaf zones, served at
// AddrLeaves.
func delegations(children []string) string {
	var b strings.Builder
	for _, c := range children {
		fmt.Fprintf(&b, "%s NS ns1.%s\nns1.%s A {3}\n", c, c, c)
	}
	return b.String()
}

// drop returns rrs without the records out selects.
func drop(rrs []dns.RR, out func(dns.RR) bool) []dns.RR {
	var keep []dns.RR
	for _, rr := range rrs {
		if !out(rr) {
			keep = append(keep, rr)
		}
	}
	return keep
}

// privateKey is a DNSKEY of algorithm 253 (PRIVATEDNS, RFC 4034 §A.1.1:
// the key starts with the name of the algorithm's definer) and its
// SHA-256 DS: an algorithm no validator implements.
func privateKey(origin string) ([]dns.RR, []*dns.DS) {
	key := append([]byte("\x07private\x07example\x00"), make([]byte, 32)...)
	rand.Read(key[len(key)-32:])
	k := &dns.DNSKEY{Hdr: dns.RR_Header{Name: origin, Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: 3600},
		Flags: dnssec.FlagsKSK, Protocol: 3, Algorithm: dns.PRIVATEDNS, PublicKey: base64.StdEncoding.EncodeToString(key)}
	return []dns.RR{k}, []*dns.DS{k.ToDS(dns.SHA256)}
}

// collidingKey returns a DNSKEY with k's flags, algorithm and key tag
// but another public key (random, its last two bytes chosen for the
// tag), which signs nothing: a validator must try every key of the tag
// (RFC 4035 §5.3.1: the tag does not name one key), within KeyTrap's
// bound.
func collidingKey(k *dns.DNSKEY) (*dns.DNSKEY, error) {
	pub, _ := base64.StdEncoding.DecodeString(k.PublicKey)
	decoy := *k
	b := make([]byte, len(pub))
	rand.Read(b)
	for w := range 1 << 16 {
		b[len(b)-2], b[len(b)-1] = byte(w>>8), byte(w)
		decoy.PublicKey = base64.StdEncoding.EncodeToString(b)
		if decoy.KeyTag() == k.KeyTag() {
			return &decoy, nil
		}
	}
	return nil, fmt.Errorf("no key colliding with %d of %s: its length is odd", k.KeyTag(), k.Hdr.Name)
}

// gostDS is a DS of digest type 3 (GOST R 34.11-94, RFC 5933), which
// neither Go nor RFC 8624 §3.3 asks a validator to compute: its digest
// is never checked, so random bytes do.
func gostDS(origin string) *dns.DS {
	digest := make([]byte, 32)
	rand.Read(digest)
	return &dns.DS{Hdr: dns.RR_Header{Name: origin, Rrtype: dns.TypeDS, Class: dns.ClassINET, Ttl: 3600},
		KeyTag: 1, Algorithm: dns.ED25519, DigestType: dns.GOST94, Digest: fmt.Sprintf("%x", digest)}
}
