package zonedb

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/zone"
)

// entry is one zone of the Manager and the queue of its events, as Knot
// organises a zone's work (load, reload, refresh, expire, notify,
// re-sign, flush): the events of one zone run one at a time, in the
// order they were posted, and those of different zones concurrently, so
// that a transfer hanging on one zone never delays another zone's
// reload, nor the query path (which reads only what is published).
type entry struct {
	origin string // the Manager's key: a lowercase FQDN

	// events counts the events queued or running, of every zone
	// (Close waits for them).
	events *sync.WaitGroup

	mu      sync.Mutex
	queue   []func()
	running bool // an event runs (on some goroutine)
	// dynamic: added at run time (AddZone), not by the configuration; a
	// reload of the configuration leaves it. Set once, at creation;
	// beside running and gone in one word (an entry of 136 bytes took
	// a 144-byte block).
	dynamic bool
	// gone: removed, or the Manager closed: no event is accepted, and
	// the context of the event running has ended.
	gone bool
	// stop ends the context of the event running (run), nil when none:
	// close calls it, so that a transfer in progress stops. A zone
	// keeps no context of its own, whose cancellation would cost each
	// of a hundred thousand zones a map of children and a channel
	// (about 600 bytes) for as long as it is served.
	stop   context.CancelFunc
	timers map[string]*time.Timer // the timed events, one per kind; nil when none

	// Owned by the zone's events (one at a time).
	signed *signedZone

	// Written by the zone's events, read by anyone.
	conf   atomic.Pointer[config.Zone] // the settings last loaded
	served atomic.Pointer[zone.Zone]   // the version served (nil: none yet)
	state  atomic.Pointer[loadState]
	resign atomic.Int64 // when signing needs work next (Unix ns), 0: never
	// loading counts the reloads of the zone posted and not yet done
	// (waiting for another event of the zone, a transfer, to end).
	loading atomic.Int32
}

// newEntry returns the entry of zone zc (kept, not copied); closed is the Manager's
// context, which has ended when the Manager is closed (the entry is then
// gone from the start: Close closed the others).
func newEntry(closed context.Context, events *sync.WaitGroup, zc *config.Zone, dynamic bool) *entry {
	e := &entry{origin: originKey(zc.Origin), dynamic: dynamic, events: events}
	e.gone = closed.Err() != nil
	e.conf.Store(zc)
	e.state.Store(&loadState{})
	return e
}

// eventKey marks the context of a running event with its zone, so that
// what the event calls on the same zone (Install from a secondary's
// refresh) runs within it instead of waiting for it to end.
type eventKey struct{}

// start runs fn as an event of e: on this goroutine when e is idle,
// else queued behind e's events (run by the goroutine running them).
// It reports false, running nothing, when the zone is gone.
func (e *entry) start(fn func()) bool {
	e.mu.Lock()
	if e.gone {
		e.mu.Unlock()
		return false
	}
	e.events.Add(1)
	inner := fn
	fn = func() {
		defer e.events.Done()
		inner()
	}
	if e.running {
		e.queue = append(e.queue, fn)
		e.mu.Unlock()
		return true
	}
	e.running = true
	e.mu.Unlock()
	fn()
	e.next()
	return true
}

// next hands e's queued events to a goroutine of their own, or marks e
// idle: the goroutine that ran an event inline goes back to its caller.
func (e *entry) next() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.queue) == 0 {
		e.running = false
		return
	}
	go e.drain()
}

// drain runs e's queued events until there are none.
func (e *entry) drain() {
	for {
		e.mu.Lock()
		if len(e.queue) == 0 {
			e.running = false
			e.mu.Unlock()
			return
		}
		fn := e.queue[0]
		e.queue[0] = nil
		e.queue = e.queue[1:]
		e.mu.Unlock()
		fn()
	}
}

// do runs fn as an event of e and returns its result once it ran: at
// once when called from one of e's events, else after e's events
// posted before it. fn's context ends with ctx or with the zone.
func (e *entry) do(ctx context.Context, fn func(ctx context.Context) error) error {
	if ctx.Value(eventKey{}) == e {
		return fn(ctx)
	}
	done := make(chan error, 1)
	ok := e.start(func() { done <- e.run(ctx, fn) })
	if !ok {
		return errGone
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// The event still runs when its turn comes, with ctx ended.
		return ctx.Err()
	}
}

// run calls fn with a context that ends with ctx or with the zone (when
// it is removed or the Manager closed), and marks it as e's event. Events
// run one at a time (start), so e.stop is the one running's; should one
// ever run within another, the outer's is put back after it.
func (e *entry) run(ctx context.Context, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancel(context.WithValue(ctx, eventKey{}, e))
	defer cancel()
	e.mu.Lock()
	outer := e.stop
	e.stop = cancel
	if e.gone {
		cancel()
	}
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.stop = outer
		if e.gone && outer != nil {
			outer()
		}
		e.mu.Unlock()
	}()
	return fn(ctx)
}

// at makes fn an event of e at t (the Manager's clock is not consulted:
// d is how long from now), replacing the event of that kind already
// timed: each kind of timed event is pending at most once per zone, as
// Knot's zone events are. d <= 0 runs it at once (on another goroutine).
func (e *entry) at(kind string, d time.Duration, fn func(ctx context.Context)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gone {
		return
	}
	if t := e.timers[kind]; t != nil {
		t.Stop()
	}
	if e.timers == nil {
		e.timers = map[string]*time.Timer{}
	}
	e.timers[kind] = time.AfterFunc(max(d, 0), func() {
		e.start(func() {
			_ = e.run(context.Background(), func(ctx context.Context) error { fn(ctx); return nil })
		})
	})
}

// cancelTimer removes e's timed event of kind, if any.
func (e *entry) cancelTimer(kind string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t := e.timers[kind]; t != nil {
		t.Stop()
		delete(e.timers, kind)
	}
}

// removed reports whether e was closed: removed, or its Manager closed.
func (e *entry) removed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.gone
}

// close stops e: its timers, the context of its events, and any event
// posted from now on. Events already queued still run (they find their
// context ended).
func (e *entry) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gone = true
	if e.stop != nil {
		e.stop()
	}
	for _, t := range e.timers {
		t.Stop()
	}
	e.timers = nil
}

// loadState is what the Manager remembers of a zone's loads for State.
type loadState struct {
	loaded time.Time // when the version served was loaded or signed
	err    error     // the last load's failure; nil when it succeeded
	// expired: a secondary past its SOA expire (Expire), until Install.
	expired bool
}
