package upstream

import (
	"testing"

	"github.com/miekg/dns"
)

// FuzzValidate feeds arbitrary packets to the check every upstream answer
// goes through: no panic, and whatever is accepted matches the query.
func FuzzValidate(f *testing.F) {
	q := new(dns.Msg)
	q.SetQuestion(question.Name, question.Qtype)
	q.Id = 4242
	for _, r := range []*dns.Msg{answer(q, "192.0.2.1"), new(dns.Msg).SetRcode(q, dns.RcodeNameError)} {
		p, _ := r.Pack()
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		r, err := Validate(pkt, q.Id, question)
		if err != nil {
			return
		}
		if !r.Response || r.Id != q.Id {
			t.Fatalf("accepted %v", r)
		}
		if len(r.Question) == 0 {
			if r.Rcode != dns.RcodeFormatError && r.Rcode != dns.RcodeNotImplemented {
				t.Fatalf("accepted an answer without a question: %v", r)
			}
			return
		}
		if got := r.Question[0]; dns.CanonicalName(got.Name) != question.Name || got.Qtype != question.Qtype || got.Qclass != question.Qclass {
			t.Fatalf("accepted the answer to %v", got)
		}
	})
}
