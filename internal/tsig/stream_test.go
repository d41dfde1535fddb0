package tsig

import (
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// streamOf returns n responses to q (signed with qmac) as messages on the
// wire and the offset of each one's TSIG record (-1: none): signed by
// miekg/dns's TsigGenerate with alg and sec where sign(i) says so, each
// MAC chained to the last signed one's.
func streamOf(t *testing.T, q *dns.Msg, qmac, alg, sec string, n int, sign func(i int) bool, at time.Time) ([][]byte, []int) {
	t.Helper()
	var msgs [][]byte
	var offs []int
	prev := qmac
	signedOnce := false
	for i := range n {
		m := new(dns.Msg)
		m.SetReply(q)
		m.Extra = nil
		m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: "a.example.test.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: []byte{192, 0, 2, byte(i)}}}
		unsigned, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		if !sign(i) {
			msgs, offs = append(msgs, unsigned), append(offs, -1)
			continue
		}
		m.SetTsig("xfr.", alg, Fudge, at.Unix())
		// TsigGenerate's timersOnly covers the messages since the
		// last signed one only when it is given them: sign the
		// concatenation's MAC by hand instead for unsigned runs.
		wire, mac, err := dns.TsigGenerate(m, sec, prev, signedOnce)
		if err != nil {
			t.Fatal(err)
		}
		prev, signedOnce = mac, true
		msgs, offs = append(msgs, wire), append(offs, len(unsigned))
	}
	return msgs, offs
}

func TestStream(t *testing.T) {
	q := new(dns.Msg)
	q.SetQuestion("example.test.", dns.TypeAXFR)
	q.SetTsig("xfr.", dns.HmacSHA256, Fudge, time.Now().Unix())
	_, qmac, err := dns.TsigGenerate(q, secret, "", false)
	if err != nil {
		t.Fatal(err)
	}
	other := "b3RoZXIgc2VjcmV0IG9mIHRoZSBzYW1lIGxlbmd0aCEh"
	all := func(int) bool { return true }
	now := time.Now()
	for _, tc := range []struct {
		name   string
		secret string
		n      int
		sign   func(int) bool
		at     time.Time
		err    string // "" the stream verifies; else a part of Next's or Done's error
	}{
		{"every message signed", secret, 5, all, now, ""},
		{"one message", secret, 1, all, now, ""},
		{"another secret", other, 3, all, now, "does not verify"},
		{"first unsigned", secret, 3, func(i int) bool { return i > 0 }, now, "not signed"},
		{"last unsigned", secret, 3, func(i int) bool { return i < 2 }, now, "last message"},
		{"an hour late", secret, 2, all, now.Add(-time.Hour), "BADTIME"},
	} {
		msgs, offs := streamOf(t, q, qmac, dns.HmacSHA256, tc.secret, tc.n, tc.sign, tc.at)
		s, err := NewStream(Key{Name: "XFR", Algorithm: "hmac-sha256", Secret: secret}, mustHex(t, qmac))
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			before := string(m)
			if err = s.Next(m, offs[i]); err != nil {
				break
			}
			if string(m) != before {
				t.Errorf("%s: Next changed message %d", tc.name, i)
			}
		}
		if err == nil {
			err = s.Done()
		}
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}

// TestStreamUnsignedRuns: messages without TSIG between signed ones (RFC
// 8945 §5.3.1) are covered by the next signed message's MAC, as Signer
// would not make them: the MAC is computed here over the run, by hand.
func TestStreamUnsignedRuns(t *testing.T) {
	kr := NewKeyring([]Key{{Name: "xfr.", Algorithm: "hmac-sha256", Secret: secret}})
	qwire, at, qmac := signedQuery(t, "xfr.", dns.HmacSHA256, secret, time.Now())
	r, err := kr.Verify(qwire, at)
	if err != nil || r.Error != 0 {
		t.Fatal(err, r.Error)
	}
	for _, run := range []int{0, 1, 99, 100} {
		// A signer that leaves run messages unsigned between signed
		// ones: Signer.Sign over the concatenation of the run and the
		// message gives the MAC RFC 8945 §5.3.1 specifies.
		signer := r.Signer()
		s, err := NewStream(Key{Name: "xfr.", Algorithm: "hmac-sha256", Secret: secret}, mustHex(t, qmac))
		if err != nil {
			t.Fatal(err)
		}
		msg := func(i int) []byte {
			m := new(dns.Msg)
			m.SetQuestion("example.test.", dns.TypeAXFR)
			m.Response = true
			m.Question = nil
			m.Id = 7
			m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: "a.example.test.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: []byte{192, 0, 2, byte(i)}}}
			w, _ := m.Pack()
			return w
		}
		m0 := msg(0)
		first, _ := signer.Sign(append([]byte(nil), m0...))
		if err := s.Next(first, len(m0)); err != nil {
			t.Fatalf("run %d: first message: %v", run, err)
		}
		var pending []byte
		var failed error
		for i := range run {
			m := msg(i + 1)
			pending = append(pending, m...)
			if failed = s.Next(m, -1); failed != nil {
				break
			}
		}
		if run > maxUnsigned {
			if failed == nil || !strings.Contains(failed.Error(), "in a row") {
				t.Errorf("run %d: %v, want an error", run, failed)
			}
			continue
		}
		if failed != nil {
			t.Fatalf("run %d: %v", run, failed)
		}
		// The closing message, signed over the run and itself: its
		// header is the one the MAC covers last, so sign the run
		// with the closing message's bytes appended, then cut.
		last := msg(run + 2)
		whole, err := signer.Sign(append(append([]byte(nil), pending...), last...))
		if err != nil {
			t.Fatal(err)
		}
		signedLast := whole[len(pending):]
		// Sign counted the ARCOUNT in the run's first header: put it
		// in the closing message's.
		fixed := append(append([]byte(nil), last...), signedLast[len(last):]...)
		fixed[11]++
		if err := s.Next(fixed, len(last)); err != nil {
			t.Errorf("run %d: closing message: %v", run, err)
		}
		if err := s.Done(); err != nil {
			t.Errorf("run %d: %v", run, err)
		}
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b := make([]byte, len(s)/2)
	for i := range b {
		var v byte
		for _, c := range s[2*i : 2*i+2] {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= byte(c - '0')
			case c >= 'a' && c <= 'f':
				v |= byte(c - 'a' + 10)
			default:
				t.Fatalf("not hex: %q", s)
			}
		}
		b[i] = v
	}
	return b
}
