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
// data) as a CLIENT_RESPONSE, allocating nothing; a deferred query is
// recorded as its CLIENT_QUERY alone.
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
	if resp := w.Answer(server.NewRequest(pkt, client, false, func([]byte) {}), out); resp != nil {
		t.Fatalf("not deferred: %x", resp)
	}
	if err := tap.Close(); err != nil {
		t.Fatal(err)
	}
	records, err := dnstap.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	types := map[dt.Message_Type]int{}
	var last *dt.Message
	for _, d := range records {
		last = d.GetMessage()
		types[last.GetType()]++
	}
	// AllocsPerRun answers each query once more than it counts.
	if types[dt.Message_CLIENT_QUERY] != 2*101+1 || types[dt.Message_CLIENT_RESPONSE] != 2*101 || len(types) != 2 {
		t.Errorf("messages by type %v, want 203 CLIENT_QUERY and 202 CLIENT_RESPONSE", types)
	}
	if last.GetType() != dt.Message_CLIENT_QUERY || string(last.GetQueryMessage()) != string(pkt) {
		t.Errorf("last message (the deferred query): %v", last)
	}
}
