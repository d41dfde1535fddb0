package validator

import (
	"testing"

	"github.com/miekg/dns"
)

// FuzzValidate feeds the validator what an authority could send: any
// message, its records taken as keys, signatures and proofs for its
// question. Nothing may panic, and the work stays within the limits. The
// seeds are real answers of the signed test zone (NSEC and NSEC3).
func FuzzValidate(f *testing.F) {
	for _, c := range chains[:2] {
		z := signZone(f, c.opts)
		for _, q := range []struct {
			name  string
			qtype uint16
		}{{"www.example.", dns.TypeA}, {"nope.example.", dns.TypeA}, {"x.wild.example.", dns.TypeA}, {"unsigned.example.", dns.TypeDS}, {"example.", dns.TypeDNSKEY}} {
			m := z.ask(f, q.name, q.qtype)
			pkt, err := m.Pack()
			if err != nil {
				f.Fatal(err)
			}
			f.Add(pkt)
		}
	}
	v := atCheckTime()
	f.Fuzz(func(t *testing.T, pkt []byte) {
		m := new(dns.Msg)
		if m.Unpack(pkt) != nil || len(m.Question) != 1 {
			return
		}
		q := m.Question[0]
		zone := "example."
		var keys []*dns.DNSKEY
		var sigs []*dns.RRSIG
		var ds []*dns.DS
		for _, rr := range append(append(m.Answer, m.Ns...), m.Extra...) {
			switch rr := rr.(type) {
			case *dns.DNSKEY:
				keys = append(keys, rr)
			case *dns.RRSIG:
				sigs = append(sigs, rr)
				zone = rr.SignerName
			case *dns.DS:
				ds = append(ds, rr)
			}
		}
		w := &Work{}
		v.VerifyKeys(zone, keys, sigs, ds, w)
		var answer []dns.RR
		for _, rr := range m.Answer {
			if rr.Header().Rrtype != dns.TypeRRSIG {
				answer = append(answer, rr)
			}
		}
		if dns.IsRRset(answer) {
			if r, sig := v.VerifyRRset(answer, sigs, keys, zone, w); r.Secure() && sig != nil {
				v.ProveWildcard(q.Name, sig.Labels, zone, m.Ns, w)
			}
		}
		v.ProveWildcard(q.Name, uint8(len(pkt)), zone, m.Ns, w)
		v.ProveDenial(NXDomain, q.Name, q.Qtype, zone, m.Ns, w)
		v.ProveDenial(NoData, q.Name, q.Qtype, zone, m.Ns, w)
		if w.Checks > DefaultLimits.Checks || w.Hashes > DefaultLimits.Hashes {
			t.Fatalf("work %+v beyond the limits", *w)
		}
	})
}
