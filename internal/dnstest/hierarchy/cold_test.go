package hierarchy_test

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/dnstest/hierarchy"
)

// BenchmarkColdServed is one cold resolution as a client of `tern
// serve`'s resolver sees it (the res-cold workload, one query at a
// time): the client's query for a new name below hierarchy.WildZone over
// UDP, the recursor's worker deferring it, the resolution (one upstream
// query, the answer cached), the client's answer built and sent, the
// response cached. Client and authorities run in this process: their
// work is in the numbers too, the same for every version of the
// resolver.
func BenchmarkColdServed(b *testing.B) {
	r := hierarchy.WildResolver(b)
	lo := netip.MustParseAddr("127.0.0.1")
	addr := hierarchy.StartRecursor(b, netip.AddrPortFrom(lo, uint16(dnstest.FreePort(b, lo.String()))), r)
	conn, err := net.Dial("udp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	// The query, whose name's eight hex digits are rewritten for each.
	m := new(dns.Msg).SetQuestion("c00000000."+hierarchy.WildZone, dns.TypeA)
	m.SetEdns0(1232, false)
	q, err := m.Pack()
	if err != nil {
		b.Fatal(err)
	}
	const digits = 12 + 2 // header, length octet, 'c'
	buf := make([]byte, 4096)
	n := uint32(0)
	ask := func() {
		n++
		for i := range 8 {
			q[digits+i] = "0123456789abcdef"[n>>(28-4*i)&15]
		}
		binary.BigEndian.PutUint16(q, uint16(n))
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Write(q); err != nil {
			b.Fatal(err)
		}
		for {
			k, err := conn.Read(buf)
			if err != nil {
				b.Fatal(err)
			}
			if k < 12 || binary.BigEndian.Uint16(buf) != uint16(n) {
				continue // a late answer to an earlier query
			}
			if rcode, an := buf[3]&15, binary.BigEndian.Uint16(buf[6:]); rcode != dns.RcodeSuccess || an != 1 {
				b.Fatalf("answer: rcode %d, %d records", rcode, an)
			}
			return
		}
	}
	ask() // the delegation, cached
	b.ReportAllocs()
	for b.Loop() {
		ask()
	}
}
