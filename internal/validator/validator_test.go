package validator

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/dnssec"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// testZone has what denial proofs must handle: a wildcard, an empty
// non-terminal (b.example.), a signed delegation (sub, with DS), an
// unsigned one (unsigned), a CNAME.
const testZone = `$TTL 3600
example. SOA ns.example. host.example. 1 7200 3600 1209600 300
example. NS ns.example.
ns.example. A 192.0.2.1
www.example. A 192.0.2.2
*.wild.example. A 192.0.2.3
a.b.example. TXT "below an empty non-terminal"
cname.example. CNAME www.example.
sub.example. NS ns.sub.example.
sub.example. DS 12345 13 2 0000000000000000000000000000000000000000000000000000000000000000
ns.sub.example. A 192.0.2.4
unsigned.example. NS ns.unsigned.example.
ns.unsigned.example. A 192.0.2.5
`

// signTime is when the test zones are signed; validation runs at
// checkTime, inside the signatures' validity.
var (
	signTime  = time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	checkTime = signTime.Add(24 * time.Hour)
)

// signedZone is testZone signed and served by Tern's authoritative engine,
// so that the validator sees the proofs a resolver would get.
type signedZone struct {
	worker *auth.Worker
	keys   []*dns.DNSKEY
	keySig []*dns.RRSIG
	ds     []*dns.DS
	// chain is every NSEC or NSEC3 record of the zone.
	chain []dns.RR
}

func signZone(t testing.TB, opts dnssec.Options) *signedZone {
	t.Helper()
	var rrs []dns.RR
	zp := dns.NewZoneParser(strings.NewReader(testZone), "example.", "")
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		rrs = append(rrs, rr)
	}
	if err := zp.Err(); err != nil {
		t.Fatal(err)
	}
	ksk, err := dnssec.GenerateKey("example.", dns.ZONE|dns.SEP, dns.ECDSAP256SHA256, 3600, nil)
	if err != nil {
		t.Fatal(err)
	}
	zsk, err := dnssec.GenerateKey("example.", dns.ZONE, dns.ED25519, 3600, map[uint16]bool{ksk.Tag(): true})
	if err != nil {
		t.Fatal(err)
	}
	signed, err := dnssec.SignZone(context.Background(), rrs, "example.", []*dnssec.Key{ksk, zsk}, opts, signTime)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, rr := range signed {
		fmt.Fprintln(&text, rr.String())
	}
	zn, err := zone.Read(strings.NewReader(text.String()), "example.", "example.")
	if err != nil {
		t.Fatal(err)
	}
	z := &signedZone{worker: auth.New(zone.NewSet(zn), auth.Options{}).NewWorker(true, 0), chain: denials(signed)}
	m := z.ask(t, "example.", dns.TypeDNSKEY)
	z.keys, z.keySig = rrsetOf[*dns.DNSKEY](m.Answer, "example.", dns.TypeDNSKEY)
	z.ds = []*dns.DS{ksk.DNSKEY.ToDS(dns.SHA256)}
	return z
}

// ask queries the zone with DO over TCP (no truncation).
func (z *signedZone) ask(t testing.TB, name string, qtype uint16) *dns.Msg {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion(name, qtype)
	q.SetEdns0(4096, true)
	pkt, err := q.Pack()
	if err != nil {
		t.Fatal(err)
	}
	out := z.worker.Answer(server.NewRequest(pkt, netip.MustParseAddrPort("192.0.2.9:53"), true, nil), make([]byte, 0, server.BufferSize))
	m := new(dns.Msg)
	if err := m.Unpack(out); err != nil {
		t.Fatal(err)
	}
	return m
}

// rrsetOf splits the records of name and type out of a section, with the
// RRSIGs covering them.
func rrsetOf[T dns.RR](section []dns.RR, name string, qtype uint16) ([]T, []*dns.RRSIG) {
	var rrs []T
	var sigs []*dns.RRSIG
	for _, rr := range section {
		if !equalNames(rr.Header().Name, name) {
			continue
		}
		if s, ok := rr.(*dns.RRSIG); ok && s.TypeCovered == qtype {
			sigs = append(sigs, s)
		} else if r, ok := rr.(T); ok && rr.Header().Rrtype == qtype {
			rrs = append(rrs, r)
		}
	}
	return rrs, sigs
}

// denials are the NSEC and NSEC3 records of a section.
func denials(section []dns.RR) []dns.RR {
	var out []dns.RR
	for _, rr := range section {
		if t := rr.Header().Rrtype; t == dns.TypeNSEC || t == dns.TypeNSEC3 {
			out = append(out, rr)
		}
	}
	return out
}

func atCheckTime() *Validator { return New(Options{Now: func() time.Time { return checkTime }}) }

// chains are the three ways testZone is signed.
var chains = []struct {
	name string
	opts dnssec.Options
}{
	{"NSEC", dnssec.Options{}},
	{"NSEC3", dnssec.Options{NSEC3: true}},
	{"NSEC3 opt-out", dnssec.Options{NSEC3: true, OptOut: true}},
}

// TestSignedAnswers: what Tern's signer signs and its authoritative
// server answers validates: the keys from the DS, positive answers (and a
// wildcard's with its proof), NXDOMAIN, NODATA at a name, at an empty
// non-terminal and at a wildcard, the DS of a signed delegation and the
// absence of one at an unsigned delegation (with Opt-Out: proved by the
// Opt-Out span, OptOut set).
func TestSignedAnswers(t *testing.T) {
	for _, c := range chains {
		z := signZone(t, c.opts)
		v := atCheckTime()
		w := &Work{}
		r, keys := v.VerifyKeys("example.", z.keys, z.keySig, z.ds, w)
		if !r.Secure() || len(keys) != 2 {
			t.Fatalf("%s: keys %v, %d usable", c.name, r, len(keys))
		}
		for _, q := range []struct {
			name  string
			qtype uint16
		}{{"www.example.", dns.TypeA}, {"sub.example.", dns.TypeDS}, {"x.wild.example.", dns.TypeA}, {"cname.example.", dns.TypeCNAME}} {
			m := z.ask(t, q.name, q.qtype)
			rrs, sigs := rrsetOf[dns.RR](m.Answer, q.name, q.qtype)
			r, sig := v.VerifyRRset(rrs, sigs, keys, "example.", w)
			if !r.Secure() {
				t.Errorf("%s: %s %s: %v", c.name, q.name, dns.TypeToString[q.qtype], r)
				continue
			}
			if int(sig.Labels) < dns.CountLabel(q.name) {
				if r := v.ProveWildcard(q.name, sig.Labels, "example.", denials(m.Ns), w); !r.Secure() {
					t.Errorf("%s: wildcard answer %s: %v", c.name, q.name, r)
				}
			} else if q.name == "x.wild.example." {
				t.Errorf("%s: %s: signature labels %d, want a wildcard's", c.name, q.name, sig.Labels)
			}
		}
		for _, q := range []struct {
			name   string
			qtype  uint16
			claim  Denial
			optOut bool // the proof is an Opt-Out span (NSEC3 opt-out chains only)
		}{
			{"nope.example.", dns.TypeA, NXDomain, true},
			{"deep.nope.example.", dns.TypeA, NXDomain, true},
			{"www.example.", dns.TypeTXT, NoData, false},
			{"b.example.", dns.TypeA, NoData, false},
			{"x.wild.example.", dns.TypeTXT, NoData, false},
			{"unsigned.example.", dns.TypeDS, NoData, true},
		} {
			m := z.ask(t, q.name, q.qtype)
			wantRcode := dns.RcodeSuccess
			if q.claim == NXDomain {
				wantRcode = dns.RcodeNameError
			}
			if m.Rcode != wantRcode {
				t.Fatalf("%s: %s: rcode %d", c.name, q.name, m.Rcode)
			}
			proof := denials(m.Ns)
			for _, rr := range proof {
				nrrs, nsigs := rrsetOf[dns.RR](m.Ns, rr.Header().Name, rr.Header().Rrtype)
				if r, _ := v.VerifyRRset(nrrs, nsigs, keys, "example.", w); !r.Secure() {
					t.Errorf("%s: %s: denial record %s: %v", c.name, q.name, rr.Header().Name, r)
				}
			}
			r := v.ProveDenial(q.claim, q.name, q.qtype, "example.", proof, w)
			wantOptOut := q.optOut && c.opts.OptOut
			if !r.Secure() || r.OptOut != wantOptOut {
				t.Errorf("%s: %s %s: %v (opt-out %v), want secure (opt-out %v)", c.name, q.name, dns.TypeToString[q.qtype], r, r.OptOut, wantOptOut)
			}
		}
		if w.Checks == 0 || w.Checks > 30 {
			t.Errorf("%s: %d signature checks", c.name, w.Checks)
		}
	}
}

// TestWrongDenials: proofs that do not prove what is claimed are bogus,
// with the reason: a NODATA proof offered for an NXDOMAIN and the
// reverse, the proof of another name, a delegation's proof offered for
// names below it or its other types, a proof with its wildcard denial
// removed, a NODATA whose record shows the type, a wildcard answer with
// no proof, nothing at all.
func TestWrongDenials(t *testing.T) {
	for _, c := range chains {
		z := signZone(t, c.opts)
		v := atCheckTime()
		nodata := denials(z.ask(t, "www.example.", dns.TypeTXT).Ns)
		nx := denials(z.ask(t, "nope.example.", dns.TypeA).Ns)
		target, other := proofNotCovering(t, z)
		referral := denials(z.ask(t, "unsigned.example.", dns.TypeA).Ns)
		apexDS := denials(z.ask(t, "example.", dns.TypeDS).Ns)
		for _, tc := range []struct {
			what  string
			claim Denial
			name  string
			qtype uint16
			proof []dns.RR
			ede   uint16
			// optOut: with an Opt-Out chain the names left out of it
			// cannot be denied: the right answer is then an Opt-Out
			// proof, which the caller does not authenticate (RFC 5155
			// §9.2).
			optOut bool
		}{
			{"NXDOMAIN from a NODATA proof", NXDomain, "www.example.", dns.TypeA, nodata, wire.EDEDNSSECBogus, false},
			{"NODATA for a type that exists", NoData, "www.example.", dns.TypeA, nodata, wire.EDEDNSSECBogus, false},
			{"NXDOMAIN from nothing", NXDomain, "nope.example.", dns.TypeA, nil, wire.EDENSECMissing, false},
			{"NXDOMAIN for an existing name", NXDomain, "www.example.", dns.TypeTXT, nx, 0, false},
			{"NXDOMAIN with the proof of another name", NXDomain, target, dns.TypeA, other, 0, false},
			// RFC 6840 §4.1: the parent side's NSEC at a delegation
			// proves neither the absence of names below it nor of
			// types other than DS.
			{"NXDOMAIN below a delegation", NXDomain, "x.unsigned.example.", dns.TypeA, referral, 0, false},
			{"NXDOMAIN below a delegation, whole chain", NXDomain, "x.unsigned.example.", dns.TypeA, append(referral, z.chain...), 0, true},
			// The DS of a zone is its parent's: the child's apex
			// record cannot deny it.
			{"NODATA for DS from the child's apex", NoData, "example.", dns.TypeDS, append(apexDS, z.chain...), 0, false},
			{"NODATA at a delegation", NoData, "unsigned.example.", dns.TypeA, referral, 0, false},
			{"NXDOMAIN without the wildcard's denial", NXDomain, "nope.example.", dns.TypeA, withoutWildcardDenial(t, nx, "nope.example."), wire.EDENSECMissing, false},
		} {
			r := v.ProveDenial(tc.claim, tc.name, tc.qtype, "example.", tc.proof, &Work{})
			if tc.optOut && c.opts.OptOut {
				if !r.Secure() || !r.OptOut {
					t.Errorf("%s: %s: %v, want an Opt-Out proof", c.name, tc.what, r)
				}
				continue
			}
			if r.Security != cache.Bogus || tc.ede != 0 && r.EDE != tc.ede {
				t.Errorf("%s: %s: %v (EDE %d), want bogus (EDE %d)", c.name, tc.what, r, r.EDE, tc.ede)
			}
		}
		if r := v.ProveWildcard("x.wild.example.", 2, "example.", nil, &Work{}); r.Security != cache.Bogus || r.EDE != wire.EDENSECMissing {
			t.Errorf("%s: wildcard answer without proof: %v (EDE %d)", c.name, r, r.EDE)
		}
	}
}

// proofNotCovering returns a name that does not exist and the NXDOMAIN
// proof of another name, one with no record that covers the first
// (miekg/dns's NSEC3.Cover as the oracle for NSEC3), so that it cannot
// prove its absence. (Every NXDOMAIN proof holds the denial of the
// wildcard, which covers a good part of a small zone's names.)
func proofNotCovering(t *testing.T, z *signedZone) (string, []dns.RR) {
	t.Helper()
	names := []string{"nope.example.", "zzz.example.", "aaa.example.", "mmm.example.", "c.example.", "q.example.", "x.example.", "ww.example.", "n1.example.", "n2.example.", "n3.example."}
	for _, name := range names {
		for _, other := range names {
			proof := denials(z.ask(t, other, dns.TypeA).Ns)
			covers := false
			for _, rr := range proof {
				switch rr := rr.(type) {
				case *dns.NSEC:
					covers = covers || nsecCovers(rr, name)
				case *dns.NSEC3:
					covers = covers || rr.Cover(name)
				}
			}
			if !covers {
				return name, proof
			}
		}
	}
	t.Fatal("every candidate's proof covers every other candidate")
	return "", nil
}

// withoutWildcardDenial drops from an NXDOMAIN proof for name the records
// that deny nothing but the wildcard (keeping those that cover name).
func withoutWildcardDenial(t *testing.T, proof []dns.RR, name string) []dns.RR {
	t.Helper()
	var out []dns.RR
	for _, rr := range proof {
		switch rr := rr.(type) {
		case *dns.NSEC:
			if nsecCovers(rr, name) {
				out = append(out, rr)
			}
		case *dns.NSEC3:
			// Keep the closest encloser's match and the next closer's
			// cover: the records that hash-match or cover name or its
			// parent chain, not the one covering "*.example.".
			if rr.Cover(name) || rr.Match("example.") {
				out = append(out, rr)
			}
		}
	}
	if len(out) == len(proof) {
		t.Fatalf("NXDOMAIN proof for %s: no record only about the wildcard (%d records)", name, len(proof))
	}
	return out
}

// TestBrokenSignatures: each way an RRset or a zone's keys fail has its
// RFC 8914 code: a changed record (6), expired (7) and not yet valid (8)
// signatures, no RRSIG (10), a signature by a key the zone does not have
// (9), a DS matching no key (9), a key without the Zone Key bit (11), a
// matching SHA-1 DS ignored beside a SHA-256 one (RFC 4509 §3); DS
// records of an unsupported algorithm (1) or digest type (2) make the
// zone insecure.
func TestBrokenSignatures(t *testing.T) {
	z := signZone(t, dnssec.Options{})
	v := atCheckTime()
	_, keys := v.VerifyKeys("example.", z.keys, z.keySig, z.ds, &Work{})
	m := z.ask(t, "www.example.", dns.TypeA)
	rrs, sigs := rrsetOf[dns.RR](m.Answer, "www.example.", dns.TypeA)
	changed := []dns.RR{dns.Copy(rrs[0])}
	changed[0].(*dns.A).A = []byte{192, 0, 2, 66}
	at := func(t time.Time) *Validator { return New(Options{Now: func() time.Time { return t }}) }
	badDS := *z.ds[0]
	badDS.Digest = strings.Repeat("00", 32)
	unknownAlg := *z.ds[0]
	unknownAlg.Algorithm = 200
	gost := *z.ds[0]
	gost.DigestType = 3
	// RFC 4509 §3: with a SHA-256 DS present, a SHA-1 one is ignored,
	// even one that matches.
	var ksk *dns.DNSKEY
	for _, k := range z.keys {
		if k.KeyTag() == z.ds[0].KeyTag {
			ksk = k
		}
	}
	sha1DS := ksk.ToDS(dns.SHA1)
	for _, tc := range []struct {
		what string
		r    Result
		sec  cache.Security
		ede  uint16
	}{
		{"changed record", first(v.VerifyRRset(changed, sigs, keys, "example.", &Work{})), cache.Bogus, wire.EDEDNSSECBogus},
		{"expired", first(at(signTime.Add(365*24*time.Hour)).VerifyRRset(rrs, sigs, keys, "example.", &Work{})), cache.Bogus, wire.EDESignatureExpired},
		{"not yet valid", first(at(signTime.Add(-24*time.Hour)).VerifyRRset(rrs, sigs, keys, "example.", &Work{})), cache.Bogus, wire.EDESignatureNotYetValid},
		{"no RRSIG", first(v.VerifyRRset(rrs, nil, keys, "example.", &Work{})), cache.Bogus, wire.EDERRSIGsMissing},
		{"unknown key", first(v.VerifyRRset(rrs, sigs, nil, "example.", &Work{})), cache.Bogus, wire.EDEDNSKEYMissing},
		{"DS matches no key", first(v.VerifyKeys("example.", z.keys, z.keySig, []*dns.DS{&badDS}, &Work{})), cache.Bogus, wire.EDEDNSKEYMissing},
		{"no zone key bit", noZoneBit(t, v), cache.Bogus, wire.EDENoZoneKeyBitSet},
		{"SHA-1 DS beside a wrong SHA-256 one", first(v.VerifyKeys("example.", z.keys, z.keySig, []*dns.DS{sha1DS, &badDS}, &Work{})), cache.Bogus, wire.EDEDNSKEYMissing},
		{"SHA-1 DS alone", first(v.VerifyKeys("example.", z.keys, z.keySig, []*dns.DS{sha1DS}, &Work{})), cache.Secure, 0},
		{"unsupported algorithm", first(v.VerifyKeys("example.", z.keys, z.keySig, []*dns.DS{&unknownAlg}, &Work{})), cache.Insecure, wire.EDEUnsupportedDNSKEYAlgorithm},
		{"unsupported digest", first(v.VerifyKeys("example.", z.keys, z.keySig, []*dns.DS{&gost}, &Work{})), cache.Insecure, wire.EDEUnsupportedDSDigestType},
	} {
		if tc.r.Security != tc.sec || tc.r.EDE != tc.ede {
			t.Errorf("%s: %v (EDE %d), want security %d EDE %d", tc.what, tc.r, tc.r.EDE, tc.sec, tc.ede)
		}
	}
}

func first[T any](r Result, _ T) Result { return r }

// noZoneBit signs a DNSKEY RRset with a key whose Zone Key bit is clear
// and checks it against that key's DS.
func noZoneBit(t *testing.T, v *Validator) Result {
	t.Helper()
	k, err := dnssec.GenerateKey("example.", dns.SEP, dns.ED25519, 3600, nil)
	if err != nil {
		t.Fatal(err)
	}
	sig := &dns.RRSIG{Hdr: dns.RR_Header{Name: "example.", Rrtype: dns.TypeRRSIG, Class: dns.ClassINET, Ttl: 3600},
		Inception: uint32(signTime.Unix()), Expiration: uint32(signTime.Add(30 * 24 * time.Hour).Unix()),
		KeyTag: k.Tag(), SignerName: "example.", Algorithm: dns.ED25519}
	if err := sig.Sign(k.Signer, []dns.RR{k.DNSKEY}); err != nil {
		t.Fatal(err)
	}
	r, _ := v.VerifyKeys("example.", []*dns.DNSKEY{k.DNSKEY}, []*dns.RRSIG{sig}, []*dns.DS{k.DNSKEY.ToDS(dns.SHA256)}, &Work{})
	return r
}

// TestKeyTrapLimits: KeyTrap (CVE-2023-50387) data costs a bounded number
// of signature checks: keys sharing one key tag are tried KeysPerTag at
// most, signatures of one RRset SigsPerRRset at most, and a query's
// checks stop at Checks.
func TestKeyTrapLimits(t *testing.T) {
	z := signZone(t, dnssec.Options{})
	v := atCheckTime()
	m := z.ask(t, "www.example.", dns.TypeA)
	rrs, sigs := rrsetOf[dns.RR](m.Answer, "www.example.", dns.TypeA)
	sig := sigs[0]

	// Ten keys with the signature's tag and algorithm, none the signer.
	colliding := collidingKeys(t, sig.KeyTag, sig.Algorithm, 10)
	w := &Work{}
	if r, _ := v.VerifyRRset(rrs, []*dns.RRSIG{sig}, colliding, "example.", w); r.Security != cache.Bogus || w.Checks != DefaultLimits.KeysPerTag {
		t.Errorf("colliding keys: %v after %d checks, want bogus after %d", r, w.Checks, DefaultLimits.KeysPerTag)
	}

	// Twenty signatures that fail, each with its own key.
	var many []*dns.RRSIG
	var manyKeys []*dns.DNSKEY
	for i := range 20 {
		k := collidingKeys(t, uint16(1000+i), dns.ED25519, 1)[0]
		s := *sig
		s.KeyTag, s.Algorithm = k.KeyTag(), k.Algorithm
		many = append(many, &s)
		manyKeys = append(manyKeys, k)
	}
	w = &Work{}
	if r, _ := v.VerifyRRset(rrs, many, manyKeys, "example.", w); r.Security != cache.Bogus || w.Checks != DefaultLimits.SigsPerRRset {
		t.Errorf("many signatures: %v after %d checks, want bogus after %d", r, w.Checks, DefaultLimits.SigsPerRRset)
	}

	// A query that has spent its checks gets no more.
	_, keys := v.VerifyKeys("example.", z.keys, z.keySig, z.ds, &Work{})
	w = &Work{Checks: DefaultLimits.Checks}
	if r, _ := v.VerifyRRset(rrs, sigs, keys, "example.", w); r.Security != cache.Bogus || w.Checks != DefaultLimits.Checks {
		t.Errorf("spent query: %v after %d checks", r, w.Checks)
	}
}

// collidingKeys makes n Ed25519-shaped DNSKEYs of example. with key tag
// tag and algorithm alg: the tag is a 16-bit sum of the RDATA (RFC 4034
// Appendix B), so the public key's last two octets are set to reach it.
func collidingKeys(t *testing.T, tag uint16, alg uint8, n int) []*dns.DNSKEY {
	t.Helper()
	var out []*dns.DNSKEY
	raw := make([]byte, 32)
	for i := 0; len(out) < n && i < 1000; i++ {
		raw[0], raw[1] = byte(i), byte(i>>8)
		raw[30], raw[31] = 0, 0
		k := &dns.DNSKEY{Hdr: dns.RR_Header{Name: "example.", Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: 3600},
			Flags: dns.ZONE, Protocol: 3, Algorithm: alg, PublicKey: base64.StdEncoding.EncodeToString(raw)}
		w0 := tag - k.KeyTag()
		for _, w := range []uint16{w0, w0 - 1, w0 + 1} {
			raw[30], raw[31] = byte(w>>8), byte(w)
			k.PublicKey = base64.StdEncoding.EncodeToString(raw)
			if k.KeyTag() == tag {
				out = append(out, k)
				break
			}
		}
	}
	if len(out) < n {
		t.Fatalf("found %d keys with tag %d", len(out), tag)
	}
	return out
}

// TestNSEC3Iterations: NSEC3 records with more iterations than RFC 9276's
// limits make a denial insecure (over 50) or bogus (over 150), with EDE
// 27, before any hash is computed; under them, a query's hashes are
// bounded (a name of many labels under a 50-iteration chain runs out).
func TestNSEC3Iterations(t *testing.T) {
	v := atCheckTime()
	chain := func(iter uint16) []dns.RR {
		// Two records spanning the whole hash space of example.
		h1 := dns.HashName("example.", dns.SHA1, iter, "")
		return []dns.RR{&dns.NSEC3{Hdr: dns.RR_Header{Name: strings.ToLower(h1) + ".example.", Rrtype: dns.TypeNSEC3, Class: dns.ClassINET, Ttl: 300},
			Hash: dns.SHA1, Iterations: iter, NextDomain: h1, TypeBitMap: []uint16{dns.TypeNS, dns.TypeSOA}}}
	}
	for _, tc := range []struct {
		iter uint16
		sec  cache.Security
	}{{100, cache.Insecure}, {500, cache.Bogus}} {
		w := &Work{}
		r := v.ProveDenial(NXDomain, "nope.example.", dns.TypeA, "example.", chain(tc.iter), w)
		if r.Security != tc.sec || r.EDE != wire.EDEUnsupportedNSEC3Iterations || w.Hashes != 0 {
			t.Errorf("%d iterations: %v (EDE %d), %d hashes", tc.iter, r, r.EDE, w.Hashes)
		}
	}
	// Under the limit the single record matches the apex and covers
	// every other hash: a valid NXDOMAIN proof for a short name, and for
	// a long one more hashes than a query may compute.
	w := &Work{}
	if r := v.ProveDenial(NXDomain, "nope.example.", dns.TypeA, "example.", chain(50), w); !r.Secure() {
		t.Errorf("50 iterations: %v", r)
	}
	long := strings.Repeat("a.", 20) + "example."
	w = &Work{}
	if r := v.ProveDenial(NXDomain, long, dns.TypeA, "example.", chain(50), w); r.Security != cache.Bogus || w.Hashes > DefaultLimits.Hashes {
		t.Errorf("20 labels at 50 iterations: %v after %d hashes", r, w.Hashes)
	}
}
