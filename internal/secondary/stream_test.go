package secondary

import (
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// answer packs a response of ID 1 to a transfer of b.test. holding rrs
// (presentation form, origin b.test.); q adds the question.
func answer(t testing.TB, q bool, rcode int, rrs ...string) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.Id, m.Response, m.Compress, m.Rcode = 1, true, true, rcode
	if q {
		m.Question = []dns.Question{{Name: "b.test.", Qtype: dns.TypeAXFR, Qclass: dns.ClassINET}}
	}
	for _, s := range rrs {
		rr, err := dns.NewRR("$ORIGIN b.test.\n" + s)
		if err != nil {
			t.Fatal(err)
		}
		m.Answer = append(m.Answer, rr)
	}
	p, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func soaRR(serial int) string { return fmt.Sprintf("@ 300 SOA ns1 h %d 1 1 3600 300", serial) }

// TestTransferReader: where an answer ends (RFC 5936 §2.2, RFC 1995 §4),
// and the messages refused, one message after another.
func TestTransferReader(t *testing.T) {
	a := "www 300 A 192.0.2.1"
	for _, tc := range []struct {
		name    string
		ixfr    bool
		from    uint32
		msgs    [][]byte
		records int    // records read once the answer ends
		err     string // "": it ends at its last message without error
	}{
		{"AXFR in one message", false, 0, [][]byte{answer(t, true, 0, soaRR(5), a, soaRR(5))}, 3, ""},
		{"AXFR of one record per message", false, 0, [][]byte{answer(t, true, 0, soaRR(5)), answer(t, false, 0, a), answer(t, false, 0, soaRR(5))}, 3, ""},
		{"IXFR: nothing newer", true, 5, [][]byte{answer(t, true, 0, soaRR(5))}, 1, ""},
		{"IXFR: a newer SOA alone in the first message (one record per message)", true, 4, [][]byte{answer(t, true, 0, soaRR(5)), answer(t, false, 0, a), answer(t, false, 0, soaRR(5))}, 3, ""},
		{"IXFR: differences", true, 4, [][]byte{answer(t, true, 0, soaRR(6), soaRR(4), a, soaRR(5)), answer(t, false, 0, soaRR(5), soaRR(6), a, soaRR(6))}, 8, ""},
		{"records after the closing SOA", false, 0, [][]byte{answer(t, true, 0, soaRR(5), soaRR(5), a)}, 0, "after the closing SOA"},
		{"an empty first message", false, 0, [][]byte{answer(t, true, 0)}, 0, "does not open with"},
		{"not opening with the SOA", false, 0, [][]byte{answer(t, true, 0, a, soaRR(5))}, 0, "does not open with"},
		{"an SOA of another zone", false, 0, [][]byte{answer(t, true, 0, soaRR(5), "x.b.test. 300 SOA ns1 h 5 1 1 1 1")}, 0, "an SOA of x.b.test."},
		{"REFUSED", false, 0, [][]byte{answer(t, true, dns.RcodeRefused)}, 0, "answered REFUSED"},
		{"another ID", false, 0, [][]byte{func() []byte { m := answer(t, true, 0, soaRR(5)); m[1] = 9; return m }()}, 0, "ID"},
		{"not a response", false, 0, [][]byte{func() []byte { m := answer(t, true, 0, soaRR(5)); m[2] &^= 0x80; return m }()}, 0, "not a response"},
		{"another zone's question", false, 0, [][]byte{func() []byte {
			m := new(dns.Msg)
			m.Id, m.Response = 1, true
			m.SetQuestion("c.test.", dns.TypeAXFR)
			m.Id, m.Response = 1, true
			p, _ := m.Pack()
			return p
		}()}, 0, "answering for c.test."},
		{"trailing bytes", false, 0, [][]byte{append(answer(t, true, 0, soaRR(5), soaRR(5)), 0)}, 0, "bytes after"},
		{"short", false, 0, [][]byte{{0, 1, 0x80}}, 0, "shorter than its header"},
	} {
		tr := transferReader{id: 1, origin: originWire("b.test."), ixfr: tc.ixfr, from: tc.from}
		var done bool
		var err error
		for i, m := range tc.msgs {
			if done {
				t.Errorf("%s: ended before message %d", tc.name, i)
				break
			}
			if done, err = tr.message(m); err != nil {
				break
			}
		}
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && (!done || len(tr.recs.list) != tc.records):
			t.Errorf("%s: done %v with %d records, want the end with %d", tc.name, done, len(tr.recs.list), tc.records)
		}
	}
}

// FuzzTransferReader feeds a message (and the same again) to a
// transfer's reader: never a panic, and records read are whole.
func FuzzTransferReader(f *testing.F) {
	f.Add(answer(f, true, 0, soaRR(5), "www 300 A 192.0.2.1", "@ 300 MX 10 www", soaRR(5)), false)
	f.Add(answer(f, true, 0, soaRR(6), soaRR(4), "www 300 A 192.0.2.1", soaRR(5)), true)
	f.Add(answer(f, false, 0, "@ 300 NS ns1", "ns1 300 AAAA 2001:db8::1"), false)
	f.Fuzz(func(t *testing.T, msg []byte, ixfr bool) {
		tr := transferReader{id: 1, origin: originWire("b.test."), ixfr: ixfr, from: 4}
		for range 2 {
			if done, err := tr.message(msg); err != nil || done {
				break
			}
		}
		for _, r := range tr.recs.list {
			if len(r.Tail) < 10 || len(r.Tail) != 10+int(r.Tail[8])<<8+int(r.Tail[9]) || len(r.Owner) == 0 || r.Owner[len(r.Owner)-1] != 0 {
				t.Fatalf("a record read badly: owner %x tail %x", r.Owner, r.Tail)
			}
		}
	})
}
