package main

import (
	"runtime/debug"
	"testing"
)

// TestServeGCPercent: tern serve sets the collector's GOGC to
// serveGCPercent, unless the environment sets GOGC (the runtime has then
// applied the operator's value, which must stay).
func TestServeGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	setGCPercent()
	if got := debug.SetGCPercent(100); got != serveGCPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, serveGCPercent)
	}
	t.Setenv("GOGC", "77")
	debug.SetGCPercent(77) // as the runtime did from the environment
	setGCPercent()
	if got := debug.SetGCPercent(100); got != 77 {
		t.Errorf("GOGC=77: GC percent %d, want the operator's 77", got)
	}
}

// TestProcsFloor: an authoritative-only server gets one P more than its
// UDP workers (so that one is always idle and sysmon leaves the workers
// waiting in recvmmsg alone), unless GOMAXPROCS is set, a resolver runs,
// or it has that many already; never more than maxProcsCap.
func TestProcsFloor(t *testing.T) {
	for _, c := range []struct {
		name           string
		workers, procs int
		resolver       bool
		env            string
		want           int
	}{
		{"pinned, one worker", 1, 1, false, "", 2},
		{"two CPUs, two workers", 2, 2, false, "", 3},
		{"17 addresses", 17, 1, false, "", 18},
		{"enough already", 2, 8, false, "", 0},
		{"exactly enough", 2, 3, false, "", 0},
		{"resolver", 1, 1, true, "", 0},
		{"GOMAXPROCS set", 1, 1, false, "1", 0},
		{"no listeners", 0, 1, false, "", 0},
		{"capped", 1000, 4, false, "", maxProcsCap},
	} {
		if got := procsFloor(c.workers, c.procs, c.resolver, c.env); got != c.want {
			t.Errorf("%s: procsFloor(%d, %d, %v, %q) = %d, want %d", c.name, c.workers, c.procs, c.resolver, c.env, got, c.want)
		}
	}
}
