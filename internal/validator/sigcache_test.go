package validator

import (
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/dnssec"
	"github.com/tern-dns/tern/internal/wire"
)

// TestVerifiedSignatures: a signature that verified is not computed
// again for the same data by the same key (Work.Checks does not grow),
// the owner's case and a wildcard expansion's name included (the signed
// data is the same, RFC 4034 §6.2, RFC 4035 §5.3.2); changed data is
// computed and bogus, and a remembered signature outside its validity
// window is still refused.
func TestVerifiedSignatures(t *testing.T) {
	z := signZone(t, dnssec.Options{})
	now := checkTime
	v := New(Options{Now: func() time.Time { return now }})
	_, keys := v.VerifyKeys("example.", z.keys, z.keySig, z.ds, &Work{})
	m := z.ask(t, "www.example.", dns.TypeA)
	rrs, sigs := rrsetOf[dns.RR](m.Answer, "www.example.", dns.TypeA)
	upper := []dns.RR{dns.Copy(rrs[0])}
	upper[0].Header().Name = "WWW.Example."
	changed := []dns.RR{dns.Copy(rrs[0])}
	changed[0].(*dns.A).A = []byte{192, 0, 2, 66}
	wildA := z.ask(t, "a.wild.example.", dns.TypeA)
	wildB := z.ask(t, "b.wild.example.", dns.TypeA)
	aRRs, aSigs := rrsetOf[dns.RR](wildA.Answer, "a.wild.example.", dns.TypeA)
	bRRs, bSigs := rrsetOf[dns.RR](wildB.Answer, "b.wild.example.", dns.TypeA)
	w := &Work{}
	for _, tc := range []struct {
		what   string
		rrs    []dns.RR
		sigs   []*dns.RRSIG
		at     time.Time
		sec    cache.Security
		ede    uint16
		checks int
	}{
		{"first", rrs, sigs, checkTime, cache.Secure, 0, 1},
		{"again", rrs, sigs, checkTime, cache.Secure, 0, 1},
		{"owner in other case", upper, sigs, checkTime, cache.Secure, 0, 1},
		{"changed record", changed, sigs, checkTime, cache.Bogus, wire.EDEDNSSECBogus, 2},
		{"changed record again", changed, sigs, checkTime, cache.Bogus, wire.EDEDNSSECBogus, 3},
		{"expired since", rrs, sigs, signTime.Add(365 * 24 * time.Hour), cache.Bogus, wire.EDESignatureExpired, 3},
		{"wildcard expansion", aRRs, aSigs, checkTime, cache.Secure, 0, 4},
		{"another expansion of it", bRRs, bSigs, checkTime, cache.Secure, 0, 4},
	} {
		now = tc.at
		r, _ := v.VerifyRRset(tc.rrs, tc.sigs, keys, "example.", w)
		if r.Security != tc.sec || r.EDE != tc.ede || w.Checks != tc.checks {
			t.Errorf("%s: %v (EDE %d), %d checks; want security %d EDE %d, %d checks", tc.what, r, r.EDE, w.Checks, tc.sec, tc.ede, tc.checks)
		}
	}
}
