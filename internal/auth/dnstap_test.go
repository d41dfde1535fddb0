package auth

import (
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/tern-dns/tern/internal/dnstap"
	"github.com/tern-dns/tern/internal/server"
)

// TestDnstapZeroAllocs: with dnstap on (a dnstap.Worker around the
// Worker, as tern serve puts it around cookies and RRL), answering (UDP batches and TCP
// answers) still allocates nothing, the records filling the worker's
// ring and then dropped (and counted), never waited for; everything
// queued is written at Close.
func TestDnstapZeroAllocs(t *testing.T) {
	r := New(cacheResponder(t).Zones(), Options{})
	pkts := cacheQueries(t)
	// The writer does not drain during the test: its encoding would
	// count among AllocsPerRun's allocations (they are the process's).
	tap, err := dnstap.Open(dnstap.Options{File: filepath.Join(t.TempDir(), "d.fstrm"), Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	udp := dnstap.NewWorker(r.NewWorker(false, 0), tap, dnstap.Auth, false)
	tb := newTestBatch(len(pkts))
	if n := testing.AllocsPerRun(50, func() { tb.answer(udp, pkts) }); n != 0 {
		t.Errorf("udp: %v allocations per batch with dnstap on, want 0", n)
	}
	tcp := dnstap.NewWorker(r.NewWorker(true, 0), tap, dnstap.Auth, true)
	req := server.NewRequest(pkts[0], netip.MustParseAddrPort("192.0.2.7:5353"), true, nil)
	out := make([]byte, 0, BufferSize)
	if n := testing.AllocsPerRun(100, func() {
		if tcp.Answer(req, out) == nil {
			t.Fatal("no answer")
		}
	}); n != 0 {
		t.Errorf("tcp: %v allocations per answer with dnstap on, want 0", n)
	}
	answered := uint64(51*len(pkts) + 101) // AllocsPerRun runs once more
	if err := tap.Close(); err != nil {
		t.Fatal(err)
	}
	// A ring holds 512 records: the UDP worker's rest were dropped,
	// the TCP worker's 101 all kept.
	if w, d := tap.Written(), tap.Dropped(); w != 2*(512+101) || w/2+d != answered {
		t.Errorf("%d messages written, %d records dropped, of %d answers (want %d written)", w, d, answered, 2*(512+101))
	}
}
