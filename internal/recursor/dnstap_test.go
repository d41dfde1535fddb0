package recursor

import (
	"bytes"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"
	"time"

	dt "github.com/dnstap/golang-dnstap"
	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cookie"
	"github.com/tern-dns/tern/internal/dnstap"
	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/rrl"
	"github.com/tern-dns/tern/internal/server"
)

// TestDnstapClient: with dnstap on (dnstap.Worker around the resolver's
// worker), each query is recorded as a CLIENT_QUERY and each answer
// made at once (refusal, local data) as a CLIENT_RESPONSE, allocating
// nothing; a deferred query's CLIENT_QUERY comes from the worker, its
// CLIENT_RESPONSE from the Reply when the resolution sends the answer.
func TestDnstapClient(t *testing.T) {
	file := filepath.Join(t.TempDir(), "d.fstrm")
	// The writer held until Close: its encoding would count in
	// AllocsPerRun's (process-wide) allocations.
	tap, err := dnstap.Open(dnstap.Options{File: file, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r := newRecursor(t, &fakeResolver{}, Options{})
	w := dnstap.NewWorker(r.NewWorker(false), tap, dnstap.Client, false)
	out := make([]byte, 0, server.BufferSize)
	for _, tc := range []struct {
		name string
		m    *dns.Msg
		from netip.AddrPort
	}{
		{"outside allow", query("www.example.tld.", dns.TypeA, true, true), outside},
		{"local data", query("www.local.test.", dns.TypeA, true, true), client},
	} {
		pkt, _ := tc.m.Pack()
		req := server.NewRequest(pkt, tc.from, false, nil)
		if n := testing.AllocsPerRun(100, func() { w.Answer(req, out) }); n != 0 {
			t.Errorf("%s: %v allocations with dnstap on", tc.name, n)
		}
	}
	pkt, _ := query("deferred.example.tld.", dns.TypeA, true, true).Pack()
	sent := make(chan []byte, 1)
	if resp := w.Answer(server.NewRequest(pkt, client, false, func(msg []byte) { sent <- append([]byte(nil), msg...) }), out); resp != nil {
		t.Fatalf("not deferred: %x", resp)
	}
	var answer []byte
	select {
	case answer = <-sent:
	case <-time.After(time.Minute):
		t.Fatal("the deferred answer never came")
	}
	r.Close() // the resolution's goroutine recorded before it ended
	if err := tap.Close(); err != nil {
		t.Fatal(err)
	}
	records, err := dnstap.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	types := map[dt.Message_Type]int{}
	for _, d := range records {
		types[d.GetMessage().GetType()]++
	}
	// AllocsPerRun answers each query once more than it counts.
	if types[dt.Message_CLIENT_QUERY] != 2*101+1 || types[dt.Message_CLIENT_RESPONSE] != 2*101+1 || len(types) != 2 {
		t.Errorf("messages by type %v, want 203 CLIENT_QUERY and 203 CLIENT_RESPONSE", types)
	}
	// The deferred query's CLIENT_QUERY (from the worker's ring) and
	// its answer's CLIENT_RESPONSE alone (from the shared ring); the
	// rings are written one after the other, not in time order.
	byType := map[dt.Message_Type]*dt.Message{}
	for _, d := range records {
		m := d.GetMessage()
		if string(m.GetQueryMessage()) == string(pkt) || string(m.GetResponseMessage()) == string(answer) {
			if byType[m.GetType()] != nil {
				t.Errorf("the deferred query's %v twice", m.GetType())
			}
			byType[m.GetType()] = m
		}
	}
	if q := byType[dt.Message_CLIENT_QUERY]; q == nil || string(q.GetQueryMessage()) != string(pkt) {
		t.Errorf("the deferred query: %v", q)
	}
	if a := byType[dt.Message_CLIENT_RESPONSE]; a == nil || string(a.GetResponseMessage()) != string(answer) || a.GetQueryMessage() != nil ||
		a.GetQueryPort() != uint32(client.Port()) {
		t.Errorf("the deferred answer: %v", a)
	}
}

// TestDnstapClientRecordsWhatIsSent: the resolver's listeners as tern
// serve builds them (dnstap around RRL around DNS cookies around the
// resolver) record each answer byte for byte as it is sent: with its
// COOKIE option, an RRL slip's truncated form, the cookie layer's
// BADCOOKIE, and a deferred answer with the COOKIE option its Reply
// added at send; every query is a CLIENT_QUERY, an RRL drop's too (no
// CLIENT_RESPONSE: nothing was sent). Over UDP and in batches (the
// server's way) and one at a time.
func TestDnstapClientRecordsWhatIsSent(t *testing.T) {
	for _, batched := range []bool{false, true} {
		name := "Answer"
		if batched {
			name = "AnswerBatch"
		}
		t.Run(name, func(t *testing.T) { recordsWhatIsSent(t, batched) })
	}
}

func recordsWhatIsSent(t *testing.T, batched bool) {
	r := newRecursor(t, &fakeResolver{}, Options{})
	// One answer a second, every second one dropped slipped.
	limited := rrl.Handler(cookie.Handler(r, cookie.NewKeys(), 1232), rrl.Config{Rate: 1, Window: 15 * time.Second, Slip: 2, IPv4Prefix: 24, IPv6Prefix: 56})
	path := filepath.Join(t.TempDir(), "d.fstrm")
	tap, err := dnstap.Open(dnstap.Options{File: path})
	if err != nil {
		t.Fatal(err)
	}
	w := dnstap.Handler(limited, tap, dnstap.Client).NewWorker(false)
	ask := func(name, opt string) []byte {
		m := query(name, dns.TypeA, true, true)
		m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: opt})
		pkt, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		return pkt
	}
	const cc = "0102030405060708"
	forged := cc + "01000000" + "00000001" + "0102030405060708"
	deferred := make(chan []byte, 1)
	deliver := func(msg []byte) { deferred <- bytes.Clone(msg) }
	var sent, queries [][]byte
	for i, c := range []struct {
		name, qname, opt string
		check            func(*dns.Msg) bool // nil: no answer now
	}{
		{"local data, with a server cookie", "www.local.test.", cc, func(m *dns.Msg) bool {
			return len(m.Answer) == 1 && dnstest.CookieOf(m) != "" && dnstest.CookieOf(m) != cc
		}},
		{"over the rate: dropped", "www.local.test.", cc, nil},
		{"over the rate: slipped", "www.local.test.", cc, func(m *dns.Msg) bool { return m.Truncated && len(m.Answer) == 0 }},
		{"forged server cookie: BADCOOKIE", "www.local.test.", forged, func(m *dns.Msg) bool { return m.Rcode == dns.RcodeBadCookie }},
		{"resolved: deferred", "deferred.example.tld.", cc, nil},
	} {
		pkt := ask(c.qname, c.opt)
		queries = append(queries, pkt)
		req := server.NewRequest(pkt, client, false, deliver)
		out := make([]byte, 0, server.BufferSize)
		if batched {
			outs := [][]byte{out}
			w.(server.Batcher).AnswerBatch(batchOf(req), outs)
			out = outs[0]
		} else {
			out = w.Answer(req, out)
		}
		if a := dnstest.Expect(t, fmt.Sprintf("%d %s", i, c.name), out, c.check); a != nil {
			sent = append(sent, a)
		}
	}
	select {
	case msg := <-deferred:
		m := new(dns.Msg)
		if err := m.Unpack(msg); err != nil || len(m.Answer) != 1 || dnstest.CookieOf(m) == "" || dnstest.CookieOf(m) == cc {
			t.Fatalf("the deferred answer %v (%v): want one record and a server cookie", m, err)
		}
		sent = append(sent, msg)
	case <-time.After(time.Minute):
		t.Fatal("the deferred answer never came")
	}
	r.Close() // the resolution's goroutine recorded before it ended
	if err := tap.Close(); err != nil {
		t.Fatal(err)
	}
	frames, err := dnstap.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var gotQ, gotR [][]byte
	for _, f := range frames {
		switch m := f.GetMessage(); m.GetType() {
		case dt.Message_CLIENT_QUERY:
			gotQ = append(gotQ, m.GetQueryMessage())
		case dt.Message_CLIENT_RESPONSE:
			gotR = append(gotR, m.GetResponseMessage())
		default:
			t.Errorf("a %v message", m.GetType())
		}
	}
	// The deferred answer is in the shared ring, written apart from the
	// worker's: compared in sorted order.
	for _, s := range [][][]byte{sent, queries, gotQ, gotR} {
		slices.SortFunc(s, bytes.Compare)
	}
	if !slices.EqualFunc(gotQ, queries, bytes.Equal) {
		t.Errorf("%d queries recorded, want the %d asked, byte for byte", len(gotQ), len(queries))
	}
	if len(gotR) != len(sent) {
		t.Fatalf("%d responses recorded, want the %d sent", len(gotR), len(sent))
	}
	for i := range sent {
		if !bytes.Equal(gotR[i], sent[i]) {
			t.Errorf("response recorded\n%x\nwant the one sent\n%x", gotR[i], sent[i])
		}
	}
}

// batchOf is req as a batch of one (copied: the server's batches
// are slices of Requests).
func batchOf(req *server.Request) []server.Request { return []server.Request{*req} }
