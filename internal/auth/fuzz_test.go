package auth

import (
	"bytes"
	"testing"

	"github.com/miekg/dns"
)

// FuzzAnswer sends arbitrary packets through the whole answer path: no
// panic, and every answer is a well-formed DNS response with the query's ID.
func FuzzAnswer(f *testing.F) {
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"www.example.test.", dns.TypeA}, {"a.example.test.", dns.TypeA}, {"x.dn.example.test.", dns.TypeA},
		{"x.wild.example.test.", dns.TypeMX}, {"www.sub.example.test.", dns.TypeA}, {"example.test.", dns.TypeANY},
	} {
		m := query(q.name, q.qtype)
		p, _ := m.Pack()
		f.Add(p)
		m.SetEdns0(1232, true)
		p, _ = m.Pack()
		f.Add(p)
	}
	// Transfers and TSIG: AXFR and IXFR (refused: no ACL), a signed
	// query (BADKEY: no keys, so the answer carries no time and stays
	// the same from call to call), a TSIG out of place.
	for _, m := range []*dns.Msg{query("example.test.", dns.TypeAXFR), query("www.example.test.", dns.TypeAXFR), ixfrQuery("example.test.", 0)} {
		p, _ := m.Pack()
		f.Add(p)
	}
	m := query("www.example.test.", dns.TypeA)
	m.SetTsig("xfr.", dns.HmacSHA256, 300, 1796320000)
	if p, _, err := dns.TsigGenerate(m, testSecret, "", false); err == nil {
		f.Add(p)
		misplaced := append([]byte(nil), p...)
		misplaced[7], misplaced[11] = 1, 0 // the TSIG counted in the answer section
		f.Add(misplaced)
	}
	r := testResponder(f, Options{NSID: []byte("n"), Chaos: true, ID: "id", Version: "v"})
	var s, cached, ahead Scratch
	var a Ahead
	cached.UseCache(NewCache(DefaultCacheSize))
	ahead.UseCache(NewCache(DefaultCacheSize))
	out := make([]byte, 0, BufferSize)
	out2 := make([]byte, 0, BufferSize)
	f.Fuzz(func(t *testing.T, pkt []byte) {
		tcp := len(pkt)%2 == 0
		resp := r.Answer(&s, pkt, out, tcp)
		// The cache, once it holds the answer (the second time a
		// question is seen), must give the same bytes.
		for i := 0; i < 3; i++ {
			if got := r.Answer(&cached, pkt, out2, tcp); !bytes.Equal(got, resp) {
				t.Fatalf("cached answer %d differs\nquery % x\ncached   % x\nuncached % x", i, pkt, got, resp)
			}
		}
		// So must the batch path, for UDP.
		if !tcp {
			r.Start(&ahead, &a, pkt)
			for j := 0; j < Steps; j++ {
				r.Step(&ahead, &a)
			}
			if got := r.AnswerAhead(&ahead, &a, pkt, out2); !bytes.Equal(got, resp) {
				t.Fatalf("AnswerAhead differs\nquery % x\nahead  % x\nAnswer % x", pkt, got, resp)
			}
		}
		if resp == nil {
			return
		}
		var m dns.Msg
		if err := m.Unpack(resp); err != nil {
			t.Fatalf("unparseable response: %v\nquery % x\nresponse % x", err, pkt, resp)
		}
		if m.Id != uint16(pkt[0])<<8|uint16(pkt[1]) || !m.Response {
			t.Fatalf("bad header %v", m.MsgHdr)
		}
	})
}
