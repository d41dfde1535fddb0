package cookie_test

import (
	"net/netip"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cookie"
	"github.com/tern-dns/tern/internal/server"
)

// FuzzCookie feeds queries to the COOKIE option parser and to a Worker
// over the authoritative engine: nothing panics, an option found lies
// within the query, and every response unpacks with the query's ID.
func FuzzCookie(f *testing.F) {
	cc := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	for _, opt := range [][]byte{nil, cc, cc[:7], make([]byte, 24), make([]byte, 41)} {
		f.Add(query(f, opt, true))
	}
	f.Add(query(f, nil, false))
	fx := newFixture(f)
	f.Fuzz(func(t *testing.T, pkt []byte) {
		if opt, ok := cookie.Find(pkt); ok {
			if len(opt) > len(pkt) {
				t.Fatalf("option of %d bytes in a query of %d", len(opt), len(pkt))
			}
			fx.keys.Check(opt, netip.MustParseAddr(client), 1)
		}
		for _, tcp := range []bool{false, true} {
			req := server.NewRequest(pkt, netip.AddrPortFrom(netip.MustParseAddr(client), 53), tcp, nil)
			resp := fx.w.Answer(req, make([]byte, 0, server.BufferSize))
			if resp == nil {
				continue
			}
			r := new(dns.Msg)
			if err := r.Unpack(resp); err != nil {
				t.Fatalf("response % x does not unpack: %v", resp, err)
			}
			if len(pkt) >= 2 && r.Id != uint16(pkt[0])<<8|uint16(pkt[1]) {
				t.Fatalf("response ID %d", r.Id)
			}
		}
	})
}
