package zonedb

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/zone"
)

// syncPublished is a published that events may write while the test
// reads it.
type syncPublished struct {
	mu  sync.Mutex
	set *zone.Set
}

func (p *syncPublished) publish(s *zone.Set) { p.mu.Lock(); p.set = s; p.mu.Unlock() }

// serial is what p serves for origin: its serial, -1 unavailable or absent.
func (p *syncPublished) serial(t *testing.T, origin string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	z := p.set.Get(wireName(t, origin))
	if z == nil || z.Unavailable {
		return -1
	}
	return int(z.Serial)
}

// bound fails the test if done is not closed in a minute: an event
// waiting on another zone's would never close it (no timing is
// asserted: the minute only stops a deadlocked test).
func bound(t *testing.T, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s: still waiting after a minute", what)
	}
}

// twoZones is a Manager serving a.test. and b.test. (serial 1 each)
// from files under a test directory, and the files.
func twoZones(t *testing.T) (*Manager, *syncPublished, []config.Zone) {
	t.Helper()
	dir := t.TempDir()
	zones := []config.Zone{{Origin: "a.test.", File: filepath.Join(dir, "a.zone")}, {Origin: "b.test.", File: filepath.Join(dir, "b.zone")}}
	for _, zc := range zones {
		write(t, zc.File, zoneText(zc.Origin, 1))
	}
	var pub syncPublished
	m := New(zones, pub.publish, nil, nil)
	t.Cleanup(m.Close)
	if _, err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m, &pub, zones
}

// TestEventBlockedElsewhere: while an event of a.test. hangs (as a
// transfer from a primary that stopped answering does), b.test.'s
// reload, a reload of the whole configuration, an applied change and
// an AddZone all complete and are published, and the set stays
// readable; a.test.'s own reload waits for its event and runs after it.
// With the Manager's one lock of before, each of these waited for the
// hanging event.
func TestEventBlockedElsewhere(t *testing.T) {
	m, pub, zones := twoZones(t)
	ctx := context.Background()
	hang, hanging := make(chan struct{}), make(chan struct{})
	unhang := sync.OnceFunc(func() { close(hang) })
	t.Cleanup(unhang) // a failed bound leaves the event hanging otherwise
	aDone := make(chan error, 1)
	go func() {
		aDone <- m.Apply(ctx, "a.test.", func(context.Context, *zone.Zone) (*zone.Zone, *zone.Diff, error) {
			close(hanging)
			<-hang
			return nil, nil, errors.New("the transfer failed")
		})
	}()
	<-hanging

	write(t, zones[1].File, zoneText("b.test.", 2))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if s, err := m.ReloadZone(ctx, "b.test."); err != nil || s.Zone.Serial != 2 {
			t.Errorf("ReloadZone b.test.: %+v %v", s, err)
		}
	}()
	bound(t, "b.test.'s reload behind a.test.'s event", done)
	if got := pub.serial(t, "b.test."); got != 2 {
		t.Fatalf("b.test. serves %d, want 2", got)
	}

	// A reload of the configuration publishes b.test. at once, and a.test.
	// when its event has ended.
	write(t, zones[0].File, zoneText("a.test.", 3))
	write(t, zones[1].File, zoneText("b.test.", 3))
	reloaded := make(chan struct{})
	go func() {
		defer close(reloaded)
		if n, err := m.Reload(ctx, zones); n != 2 || err != nil {
			t.Errorf("Reload: %d serving, %v", n, err)
		}
	}()
	published := make(chan struct{})
	go func() {
		defer close(published)
		for pub.serial(t, "b.test.") != 3 {
			time.Sleep(time.Millisecond)
		}
	}()
	bound(t, "b.test. published by a reload while a.test. hangs", published)
	// Reload returns without waiting for a.test.'s event: a.test. says
	// it is loading, and serves the version it had.
	bound(t, "the reload while a.test. hangs", reloaded)
	if got := pub.serial(t, "a.test."); got != 1 {
		t.Errorf("a.test. reloaded during its own event: serial %d", got)
	}
	if s := m.entry("a.test.").stateNow(); !s.Loading || s.Zone.Serial != 1 {
		t.Errorf("a.test. while its reload waits: loading %v, serial %d", s.Loading, s.Zone.Serial)
	}
	if s := m.entry("b.test.").stateNow(); s.Loading {
		t.Errorf("b.test. says loading after the reload")
	}

	// Another zone comes and goes meanwhile.
	dir := filepath.Dir(zones[0].File)
	c := config.Zone{Origin: "c.test.", File: filepath.Join(dir, "c.zone")}
	write(t, c.File, zoneText("c.test.", 5))
	added := make(chan struct{})
	go func() {
		defer close(added)
		if err := m.AddZone(ctx, c); err != nil {
			t.Error(err)
		}
	}()
	bound(t, "AddZone while a.test. hangs", added)
	if got := pub.serial(t, "c.test."); got != 5 {
		t.Errorf("c.test. added: serves %d, want 5", got)
	}

	unhang()
	if err := <-aDone; err == nil || err.Error() != "the transfer failed" {
		t.Errorf("a.test.'s event: %v", err)
	}
	// a.test.'s reload runs in its own event once the hung one ended.
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		for pub.serial(t, "a.test.") != 3 || m.entry("a.test.").stateNow().Loading {
			time.Sleep(time.Millisecond)
		}
	}()
	bound(t, "a.test.'s reload once its event ended", loaded)
}

// TestEventsOneAtATime: events of one zone posted from many goroutines
// at once, run inline, queued or timed (changes applied, events done
// directly, timed events, amid reloads and installs), never run at the
// same time; every one runs.
func TestEventsOneAtATime(t *testing.T) {
	m, pub, zones := twoZones(t)
	ctx := context.Background()
	e := m.entry("a.test.")
	var running, most, ran atomic.Int32
	enter := func() {
		n := running.Add(1)
		for {
			old := most.Load()
			if n <= old || most.CompareAndSwap(old, n) {
				break
			}
		}
		ran.Add(1)
		time.Sleep(100 * time.Microsecond) // let another start, if it could
		running.Add(-1)
	}
	z, err := zone.Load(zones[0].File, "a.test.")
	if err != nil {
		t.Fatal(err)
	}
	const n = 60
	var wg, timed sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var err error
			switch i % 5 {
			case 0:
				err = m.Apply(ctx, "a.test.", func(_ context.Context, served *zone.Zone) (*zone.Zone, *zone.Diff, error) {
					enter()
					return served, nil, nil
				})
			case 1:
				err = e.do(ctx, func(context.Context) error { enter(); return nil })
			case 2:
				timed.Add(1)
				e.at(fmt.Sprint("test", i), 0, func(context.Context) { enter(); timed.Done() })
			case 3:
				_, err = m.ReloadZone(ctx, "a.test.")
			case 4:
				err = m.Install(ctx, "a.test.", z)
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	timed.Wait()
	if want := int32(3 * n / 5); most.Load() != 1 || ran.Load() != want {
		t.Errorf("at most %d events ran at once (want 1), %d ran (want %d)", most.Load(), ran.Load(), want)
	}
	if got := pub.serial(t, "a.test."); got != 1 {
		t.Errorf("a.test. serial %d", got)
	}
}

// TestEventsConcurrentAcrossZones: an event of each of two zones runs
// at the same time (each waits for the other to have started).
func TestEventsConcurrentAcrossZones(t *testing.T) {
	m, _, _ := twoZones(t)
	ctx := context.Background()
	var started sync.WaitGroup
	started.Add(2)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, origin := range []string{"a.test.", "b.test."} {
		wg.Go(func() {
			err := m.Apply(ctx, origin, func(_ context.Context, served *zone.Zone) (*zone.Zone, *zone.Diff, error) {
				started.Done()
				started.Wait()
				return served, nil, nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	bound(t, "two zones' events at once", done)
}

// TestAddRemoveZone: a zone added at run time is served and listed,
// survives a reload of the configuration, and goes with RemoveZone (as
// a configured one does, until the next reload); adding one served
// already, or one whose file does not load, fails and changes nothing.
func TestAddRemoveZone(t *testing.T) {
	m, pub, zones := twoZones(t)
	ctx := context.Background()
	dir := filepath.Dir(zones[0].File)
	c := config.Zone{Origin: "C.test", File: filepath.Join(dir, "c.zone")}
	write(t, c.File, zoneText("c.test.", 7))
	if err := m.AddZone(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := pub.serial(t, "c.test."); got != 7 {
		t.Fatalf("added c.test.: %d", got)
	}
	if err := m.AddZone(ctx, c); !errors.Is(err, ErrExists) {
		t.Errorf("added twice: %v", err)
	}
	bad := config.Zone{Origin: "d.test.", File: filepath.Join(dir, "d.zone")}
	write(t, bad.File, brokenText("d.test."))
	if err := m.AddZone(ctx, bad); err == nil || pub.serial(t, "d.test.") != -1 || m.Served("d.test.") != nil {
		t.Errorf("a broken zone added: %v", err)
	}
	if _, err := m.Reload(ctx, zones[:1]); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range m.States() {
		got = append(got, fmt.Sprint(s.Origin, s.Dynamic))
	}
	if fmt.Sprint(got) != "[a.test.false c.test.true]" {
		t.Errorf("after a reload without b.test.: %v", got)
	}
	for _, s := range m.States() {
		if one, ok := m.State(strings.ToUpper(s.Origin)); !ok || !reflect.DeepEqual(one, s) {
			t.Errorf("State(%s): %+v %v, States has %+v", s.Origin, one, ok, s)
		}
	}
	if s, ok := m.State("b.test."); ok {
		t.Errorf("State(b.test.) after its reload away: %+v", s)
	}
	if pub.serial(t, "b.test.") != -1 || pub.serial(t, "c.test.") != 7 {
		t.Errorf("after a reload: b.test. %d, c.test. %d", pub.serial(t, "b.test."), pub.serial(t, "c.test."))
	}
	for _, origin := range []string{"c.test.", "a.test."} {
		if err := m.RemoveZone(origin); err != nil {
			t.Fatal(err)
		}
		if pub.serial(t, origin) != -1 {
			t.Errorf("%s served after RemoveZone", origin)
		}
	}
	if err := m.RemoveZone("c.test."); !errors.Is(err, ErrNoZone) {
		t.Errorf("removed twice: %v", err)
	}
	if err := m.Install(ctx, "c.test.", nil); !errors.Is(err, ErrNoZone) {
		t.Errorf("Install into a removed zone: %v", err)
	}
}

// TestRemovedStaysRemoved: a zone removed while one of its events runs
// (an UPDATE's change being made, a reload or a transfer's install
// queued behind it) is not served again when those events end: what
// they stage for it after the removal is dropped, not published by the
// next flush, and Apply reports the zone gone rather than its change
// served. Before, the zone came back into the published set (its data,
// or a SERVFAIL placeholder) after RemoveZone had taken it out, and an
// added zone stayed there for good.
func TestRemovedStaysRemoved(t *testing.T) {
	for _, queued := range []string{"", "reload", "install"} {
		t.Run("apply"+map[bool]string{true: "+" + queued}[queued != ""], func(t *testing.T) {
			m, pub, zones := twoZones(t)
			ctx := context.Background()
			write(t, zones[0].File, zoneText("a.test.", 5))
			next, err := zone.Read(strings.NewReader(zoneText("a.test.", 6)), "a.zone", "a.test.")
			if err != nil {
				t.Fatal(err)
			}
			release, applied := heldApply(t, m, "a.test.", next)
			e := m.entry("a.test.")
			other := make(chan error, 1)
			switch queued {
			case "reload":
				go func() { _, err := m.ReloadZone(ctx, "a.test."); other <- err }()
			case "install":
				go func() { other <- m.Install(ctx, "a.test.", next) }()
			default:
				other <- nil
			}
			if queued != "" {
				// Queued behind the change (no timing: the minute
				// only stops a test that never sees it).
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
					e.mu.Lock()
					n := len(e.queue)
					e.mu.Unlock()
					if n > 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the second event never queued")
					}
				}
			}
			if err := m.RemoveZone("a.test."); err != nil {
				t.Fatal(err)
			}
			release()
			if err := <-applied; !errors.Is(err, ErrNoZone) {
				t.Errorf("Apply across its zone's removal: %v, want the zone gone", err)
			}
			<-other
			// Another zone's change publishes whatever is staged.
			if err := m.Apply(ctx, "b.test.", func(_ context.Context, served *zone.Zone) (*zone.Zone, *zone.Diff, error) {
				return served, nil, nil
			}); err != nil {
				t.Fatal(err)
			}
			pub.mu.Lock()
			z := pub.set.Get(wireName(t, "a.test."))
			pub.mu.Unlock()
			if z != nil {
				t.Errorf("a.test. served after its removal: serial %d, unavailable %v", z.Serial, z.Unavailable)
			}
			if m.Served("a.test.") != nil {
				t.Error("a.test. listed after its removal")
			}
		})
	}
}

// TestEventEndsWithZone: the context of a zone's event running (a
// transfer waiting on a primary) ends when the zone is removed and when
// the Manager is closed, and the zone accepts no event after; the other
// zone's events are unaffected by a.test.'s removal.
func TestEventEndsWithZone(t *testing.T) {
	for _, end := range []string{"remove", "close"} {
		t.Run(end, func(t *testing.T) {
			m, _, _ := twoZones(t)
			e := m.entry("a.test.")
			started, done := make(chan struct{}), make(chan struct{})
			var err error
			go func() {
				defer close(done)
				err = e.do(context.Background(), func(ctx context.Context) error {
					close(started)
					<-ctx.Done()
					return ctx.Err()
				})
			}()
			bound(t, "event start", started)
			switch end {
			case "remove":
				if err := m.RemoveZone("a.test."); err != nil {
					t.Fatal(err)
				}
				ran := false
				if err := m.entry("b.test.").do(context.Background(), func(context.Context) error { ran = true; return nil }); err != nil || !ran {
					t.Errorf("b.test.'s event after a.test. removed: ran %v, %v", ran, err)
				}
			case "close":
				m.Close()
			}
			bound(t, "event end", done)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("event: %v, want its context canceled", err)
			}
			if err := e.do(context.Background(), func(context.Context) error { return nil }); !errors.Is(err, errGone) {
				t.Errorf("event after the zone ended: %v, want errGone", err)
			}
		})
	}
}

// heldApply starts m.Apply of a change to origin that makes next, and
// returns once the change is being made, held there until release is
// called; applied then gets Apply's error.
func heldApply(t *testing.T, m *Manager, origin string, next *zone.Zone) (release func(), applied <-chan error) {
	t.Helper()
	changing, held := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- m.Apply(context.Background(), origin, func(context.Context, *zone.Zone) (*zone.Zone, *zone.Diff, error) {
			close(changing)
			<-held
			return next, nil, nil
		})
	}()
	bound(t, "the change begun", changing)
	return func() { close(held) }, done
}
