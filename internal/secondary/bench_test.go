package secondary

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/zone"
)

// packedPrimary answers every TCP connection with the same packed
// transfer stream (length-prefixed messages), so a benchmark of the
// secondary's side pays nothing for the primary's.
func packedPrimary(tb testing.TB, stream []byte) netip.AddrPort {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var n [2]byte
				if _, err := io.ReadFull(c, n[:]); err != nil {
					return
				}
				q := make([]byte, binary.BigEndian.Uint16(n[:]))
				if _, err := io.ReadFull(c, q); err != nil {
					return
				}
				// Each message carries the query's ID.
				out := append([]byte(nil), stream...)
				for off := 0; off < len(out); {
					ln := int(binary.BigEndian.Uint16(out[off:]))
					copy(out[off+2:off+4], q[:2])
					off += 2 + ln
				}
				c.Write(out)
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).AddrPort()
}

// hostRecords are the zone b.test. of n A records (and its SOA of
// serial and NS), without the closing SOA.
func hostRecords(n int, serial uint32) []dns.RR {
	soa, _ := dns.NewRR(fmt.Sprintf("b.test. 300 IN SOA ns1.b.test. h.b.test. %d 3600 1 3600 300", serial))
	ns, _ := dns.NewRR("b.test. 300 NS ns1.b.test.")
	rrs := []dns.RR{soa, ns}
	for i := range n {
		rrs = append(rrs, host(i, 300))
	}
	return rrs
}

func host(i int, ttl uint32) dns.RR {
	return &dns.A{Hdr: dns.RR_Header{Name: fmt.Sprintf("h%d.b.test.", i), Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: ttl}, A: net.IPv4(10, byte(i>>16), byte(i>>8), byte(i))}
}

// packStream packs rrs as a transfer's messages of 400 records each,
// each framed with its length.
func packStream(tb testing.TB, rrs []dns.RR) []byte {
	var out []byte
	for len(rrs) > 0 {
		m := new(dns.Msg)
		m.SetAxfr("b.test.")
		m.Response = true
		m.Compress = true
		k := min(len(rrs), 400)
		m.Answer = rrs[:k]
		rrs = rrs[k:]
		p, err := m.Pack()
		if err != nil {
			tb.Fatal(err)
		}
		out = binary.BigEndian.AppendUint16(out, uint16(len(p)))
		out = append(out, p...)
	}
	return out
}

// BenchmarkTransferIn takes a 100,000-record zone by AXFR: served-ms is
// the time until the zone is compiled (what serving waits for), the rest
// storing its copy.
func BenchmarkTransferIn(b *testing.B) {
	rrs := hostRecords(100000, 1)
	addr := packedPrimary(b, packStream(b, append(rrs, rrs[0])))
	s := New(&fakeStore{}, nil, Options{Timeout: 10 * time.Second})
	z := Zone{Origin: "b.test.", File: filepath.Join(b.TempDir(), "b.test.zone"), Primaries: []Primary{{Remote: "p", Addr: addr}}}
	b.ReportAllocs()
	var served time.Duration
	for b.Loop() {
		start := time.Now()
		nz, rrs, how, err := s.transfer(context.Background(), z, z.Primaries[0], nil, 0)
		if err != nil || nz == nil || nz.Records != 100002 {
			b.Fatal(err)
		}
		served += time.Since(start)
		if err := storeCopy(z, z.Primaries[0], how, rrs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(served.Milliseconds())/float64(b.N), "served-ms/op")
}

// BenchmarkIXFRIn applies a one-record IXFR (a host's TTL changed) to a
// served 100,000-record zone.
func BenchmarkIXFRIn(b *testing.B) {
	rrs := hostRecords(100000, 1)
	recs := wireRecords(b, rrs)
	served, err := zone.CompileRecords("b.test.", "b", recs)
	if err != nil {
		b.Fatal(err)
	}
	soa2, _ := dns.NewRR("b.test. 300 IN SOA ns1.b.test. h.b.test. 2 3600 1 3600 300")
	addr := packedPrimary(b, packStream(b, []dns.RR{soa2, rrs[0], host(7, 300), soa2, host(7, 60), soa2}))
	s := New(&fakeStore{}, nil, Options{Timeout: 10 * time.Second})
	z := Zone{Origin: "b.test.", File: filepath.Join(b.TempDir(), "b.test.zone"), Primaries: []Primary{{Remote: "p", Addr: addr}}}
	b.ReportAllocs()
	var took time.Duration
	for b.Loop() {
		start := time.Now()
		nz, rrs, how, err := s.transfer(context.Background(), z, z.Primaries[0], served, 1)
		if err != nil || nz == nil || how != "IXFR" || nz.Serial != 2 {
			b.Fatal(how, err)
		}
		took += time.Since(start)
		if err := storeCopy(z, z.Primaries[0], how, rrs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "served-ms/op")
}
