package resolve

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/upstream"
)

// script is an Exchanger whose servers answer the i-th query with the
// i-th packet of a fuzzer's stream (length-prefixed messages, taken in
// turn and again from the first): every upstream answer the resolver
// parses comes from the fuzzer.
type script struct {
	packets [][]byte
	n       int
}

func (s *script) Exchange(ctx context.Context, server netip.AddrPort, q dns.Question) (*dns.Msg, error) {
	s.n++
	if len(s.packets) == 0 {
		return nil, context.DeadlineExceeded
	}
	p := s.packets[(s.n-1)%len(s.packets)]
	// upstream.Client's parser, with the name asked as its hint.
	m, err := upstream.Unpack(p, q.Name)
	if err != nil {
		return nil, fmt.Errorf("unparseable: %w", err)
	}
	// What upstream.Validate guarantees.
	m.Response, m.Question = true, []dns.Question{q}
	return m, nil
}

// FuzzResolve resolves a name through servers that answer whatever the
// fuzzer says: no panic, the query budget holds, and the result holds
// only records of class IN owned by the name asked or by a name of its
// CNAME chain.
func FuzzResolve(f *testing.F) {
	add := func(ms ...*dns.Msg) {
		var stream []byte
		for _, m := range ms {
			p, err := m.Pack()
			if err != nil {
				f.Fatal(err)
			}
			stream = binary.BigEndian.AppendUint16(stream, uint16(len(p)))
			stream = append(stream, p...)
		}
		f.Add(stream)
	}
	w := world(f)
	add(w.answers[key{root, "com.", 0}], w.answers[key{gtld, "example.com.", 0}], w.answers[key{exCom, "www.example.com.", dns.TypeA}])
	add(w.answers[key{root, "com.", 0}], w.answers[key{gtld, "example.com.", 0}], answer(f, "www.example.com. 300 IN CNAME www.example.net."),
		w.answers[key{root, "net.", 0}], w.answers[key{gtld, "example.net.", 0}], w.answers[key{exNet, "www.example.net.", dns.TypeA}])
	add(referral(f, []string{"com. 172800 IN NS ns.example.net."}), w.answers[key{exCom, "nx.example.com.", 0}])
	add(answer(f, "www.example.com. 300 IN A 192.0.2.1", "www.example.org. 300 IN A 192.0.2.3"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		s := &script{}
		for len(stream) >= 2 {
			l := int(binary.BigEndian.Uint16(stream))
			stream = stream[2:]
			if l > len(stream) {
				l = len(stream)
			}
			s.packets = append(s.packets, stream[:l])
			stream = stream[l:]
		}
		r := New(s, Options{Hints: []Server{{Name: "a.root.", Addrs: []netip.Addr{netip.MustParseAddr(root)}}}})
		res, err := r.Resolve(context.Background(), "www.example.com.", dns.TypeA)
		if s.n > DefaultLimits.Queries || res.Queries != s.n {
			t.Fatalf("%d queries sent, %d counted, limit %d", s.n, res.Queries, DefaultLimits.Queries)
		}
		if err != nil {
			if res.Rcode != dns.RcodeServerFailure || len(res.Answer) != 0 {
				t.Fatalf("error %v with %s and %d records", err, dns.RcodeToString[res.Rcode], len(res.Answer))
			}
			return
		}
		chain := map[string]bool{"www.example.com.": true}
		for _, rr := range res.Answer {
			h := rr.Header()
			if h.Class != dns.ClassINET || !chain[dns.CanonicalName(h.Name)] {
				t.Fatalf("answer record %v: not IN, or not owned by a name of the chain %v", rr, chain)
			}
			if cn, ok := rr.(*dns.CNAME); ok {
				chain[dns.CanonicalName(cn.Target)] = true
			}
		}
	})
}
