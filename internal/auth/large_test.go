package auth

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/zone"
)

// largeMXResponder serves mx.test., whose name many.mx.test. holds one
// RRset of 1000 MX records; every exchange has an A and an AAAA record,
// so that over TCP the answer fills 64 KiB: the MX set, then as many
// addresses as fit. It is the shape of the harness's large-tcp workload
// (bench/cmd/benchtool: genLarge).
func largeMXResponder(tb testing.TB) *Responder {
	tb.Helper()
	var sb strings.Builder
	sb.WriteString("$ORIGIN mx.test.\n$TTL 3600\n@ SOA ns1 host 1 2 3 4 60\n@ NS ns1\nns1 A 192.0.2.1\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&sb, "many MX %d mx%04d\nmx%04d A 10.0.%d.%d\nmx%04d AAAA 2001:db8::%x\n", i, i, i, i>>8, i&255, i, i)
	}
	z, err := zone.Read(strings.NewReader(sb.String()), "mx.zone", "mx.test.")
	if err != nil {
		tb.Fatal(err)
	}
	return New(zone.NewSet(z), Options{})
}

// TestLargeAnswer checks the 1000-MX answer over TCP: every MX record,
// addresses up to the 64 KiB limit, and the names decode to what the
// zone holds (the compression pointers point at the right suffixes).
func TestLargeAnswer(t *testing.T) {
	r := largeMXResponder(t)
	pkt, _ := query("many.mx.test.", dns.TypeMX).Pack()
	var s Scratch
	out := r.Answer(&s, pkt, make([]byte, 0, BufferSize), true)
	if len(out) < 60000 || len(out) > 65535 {
		t.Errorf("answer is %d bytes, want close to 64 KiB", len(out))
	}
	resp := new(dns.Msg)
	if err := resp.Unpack(out); err != nil {
		t.Fatal(err)
	}
	if resp.Rcode != dns.RcodeSuccess || resp.Truncated || len(resp.Answer) != 1000 {
		t.Fatalf("rcode %d tc %v, %d answers", resp.Rcode, resp.Truncated, len(resp.Answer))
	}
	for i, rr := range resp.Answer {
		mx, ok := rr.(*dns.MX)
		if want := fmt.Sprintf("mx%04d.mx.test.", i); !ok || mx.Mx != want || mx.Hdr.Name != "many.mx.test." {
			t.Fatalf("answer %d: %v, want MX %s", i, rr, want)
		}
	}
	if len(resp.Extra) < 1000 {
		t.Errorf("%d additional records, want at least the 1000 A records' worth", len(resp.Extra))
	}
	for _, rr := range resp.Extra {
		var i int
		if _, err := fmt.Sscanf(rr.Header().Name, "mx%04d.mx.test.", &i); err != nil {
			t.Fatalf("additional owner %q", rr.Header().Name)
		}
		switch a := rr.(type) {
		case *dns.A:
			if want := fmt.Sprintf("10.0.%d.%d", i>>8, i&255); a.A.String() != want {
				t.Fatalf("%s A %s, want %s", a.Hdr.Name, a.A, want)
			}
		case *dns.AAAA:
			if want := net.ParseIP(fmt.Sprintf("2001:db8::%x", i)); !a.AAAA.Equal(want) {
				t.Fatalf("%s AAAA %s, want %s", a.Hdr.Name, a.AAAA, want)
			}
		default:
			t.Fatalf("additional %v", rr)
		}
	}
}

// BenchmarkLargeAnswer answers the 1000-MX question over TCP (about
// 64 KiB): the cost of name compression with thousands of names in one
// message.
func BenchmarkLargeAnswer(b *testing.B) {
	r := largeMXResponder(b)
	m := query("many.mx.test.", dns.TypeMX)
	pkt, _ := m.Pack()
	var s Scratch
	out := make([]byte, 0, BufferSize)
	b.ReportAllocs()
	for b.Loop() {
		if r.Answer(&s, pkt, out, true) == nil {
			b.Fatal("no answer")
		}
	}
}
