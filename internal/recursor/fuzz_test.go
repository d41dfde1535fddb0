package recursor

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/server"
)

// FuzzAnswer sends arbitrary packets through the resolver's answer path,
// from a client inside allow and one outside, over UDP (with a response
// cache) and TCP: no panic, and every answer, given now or deferred, is a
// well-formed DNS response with the query's ID.
func FuzzAnswer(f *testing.F) {
	for _, m := range []*dns.Msg{
		query("www.example.tld.", dns.TypeA, true, false), query("www.example.tld.", dns.TypeA, true, true),
		query("www.local.test.", dns.TypeA, false, true), query("www.sub.local.test.", dns.TypeA, true, false),
		query("fail.example.tld.", dns.TypeA, true, true), query("big.example.tld.", dns.TypeA, true, false),
		query("stale.example.tld.", dns.TypeA, true, true), query("example.tld.", dns.TypeAXFR, true, false),
	} {
		p, _ := m.Pack()
		f.Add(p, false)
		f.Add(p, true)
	}
	r := newRecursor(f, &fakeResolver{}, Options{ResponseCache: 64})
	workers := map[bool]server.Worker{false: r.NewWorker(false), true: r.NewWorker(true)}
	out := make([]byte, 0, server.BufferSize)
	f.Fuzz(func(t *testing.T, pkt []byte, tcp bool) {
		check := func(resp []byte) {
			if resp == nil {
				return
			}
			m := new(dns.Msg)
			if err := m.Unpack(resp); err != nil {
				t.Fatalf("response %x to %x does not unpack: %v", resp, pkt, err)
			}
			if !m.Response || len(pkt) < 2 || m.Id != binary.BigEndian.Uint16(pkt) {
				t.Fatalf("response %v to %x", m, pkt)
			}
		}
		for _, from := range []netip.AddrPort{client, outside} {
			got := make(chan []byte, 1)
			req := server.NewRequest(pkt, from, tcp, func(msg []byte) { got <- append([]byte(nil), msg...) })
			resp := workers[tcp].Answer(req, out)
			check(resp)
			if resp == nil {
				select {
				case msg := <-got:
					check(msg)
				default: // dropped, or still resolving: the fake answers at once, Close waits
				}
			}
		}
	})
}
