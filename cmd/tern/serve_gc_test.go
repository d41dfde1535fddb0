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
