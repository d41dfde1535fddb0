package auth

import (
	"runtime"
	"time"

	"github.com/tern-dns/tern/internal/dnstap"
	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/server"
)

// TapInto makes w record each answer into tap (the [dnstap] output) as
// an AUTH_QUERY and an AUTH_RESPONSE message, through a ring of w's own
// that goes back to tap when w is no longer used; nil: none, which
// costs one nil check per answer.
func (w *Worker) TapInto(tap *dnstap.Tap) {
	if tap == nil {
		w.tap = nil
		return
	}
	w.tap = tap.NewRing()
	runtime.AddCleanup(w, tap.Release, w.tap)
}

// record copies req's query and resp, its answer, into w's dnstap ring;
// a dropped query (no answer) is not recorded. A record the ring has
// no room for is counted as a DropDnstap.
func (w *Worker) record(req *server.Request, resp []byte) {
	if resp == nil {
		return
	}
	if !w.tap.Record(dnstap.Auth, req.Remote(), req.Local(), w.tcp, req.Packet, resp, time.Now().UnixNano()) && w.m != nil {
		w.m.Dropped(metrics.DropDnstap)
	}
}
