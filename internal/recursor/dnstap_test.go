package recursor

import (
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	dt "github.com/dnstap/golang-dnstap"
	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstap"
	"github.com/tern-dns/tern/internal/server"
)

// TestDnstapClient: with dnstap on, the resolver's workers record each
// query as a CLIENT_QUERY and each answer made at once (refusal, local
// data) as a CLIENT_RESPONSE, allocating nothing; a deferred query's
// CLIENT_QUERY comes from the worker, its CLIENT_RESPONSE from the
// resolution when it sends the answer.
func TestDnstapClient(t *testing.T) {
	file := filepath.Join(t.TempDir(), "d.fstrm")
	// The writer held until Close: its encoding would count in
	// AllocsPerRun's (process-wide) allocations.
	tap, err := dnstap.Open(dnstap.Options{File: file, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r := newRecursor(t, &fakeResolver{}, Options{})
	r.TapInto(tap)
	w := r.NewWorker(false)
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
