// Package secondary keeps secondary zones: each is fetched by AXFR
// (RFC 5936), then followed by IXFR (RFC 1995; AXFR when that fails),
// from the first of its primaries that answers, checked by
// the zone reader, stored atomically and served, then kept fresh on its
// SOA timers (RFC 1034 §4.3.5, RFC 1035 §3.3.13): a SOA query every
// refresh interval and a transfer only when the primary's serial is
// newer (RFC 1982), a retry interval after a failure, and no data
// (SERVFAIL) once expire has passed without a successful refresh; an
// accepted NOTIFY (Refresh) refreshes at once. A
// transfer that fails, or yields a zone that does not load, changes
// nothing: the version served stays. The refresh and the expiry are
// timed events of the zone in the Store (one at a time with its other
// work, concurrently with other zones'), and the timers are stored
// atomically beside the copy, so that a restart refreshes when due.
package secondary

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/durable"
	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/tsig"
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// Primary is one address a zone is fetched from.
type Primary struct {
	// Remote is the [[remote]]'s name, for the log.
	Remote string
	Addr   netip.AddrPort
	// Key signs the SOA query and the transfer request and verifies the
	// answers (RFC 8945); nil: unsigned.
	Key *tsig.Key
}

// Zone is one secondary zone.
type Zone struct {
	Origin string // a lowercase FQDN
	// File is where the transferred copy is kept.
	File      string
	Primaries []Primary
}

// Store is the served set, as the secondaries change it. A zone's
// refresh and expiry run as events of the zone (At), so that they never
// run beside its other work (a reload, an applied change), and a
// refresh hanging on one zone holds no other zone back.
type Store interface {
	// Served returns the version served: nil or Unavailable when none.
	Served(origin string) *zone.Zone
	// Install serves a new version; called from the zone's event (ctx
	// is the event's).
	Install(ctx context.Context, origin string, z *zone.Zone) error
	// Expire serves no data for origin (SERVFAIL) until the next
	// Install; called from the zone's event.
	Expire(ctx context.Context, origin string, why error) error
	// At makes fn an event of the zone origin d from now, replacing
	// the pending one of that kind; false when origin is not served.
	At(origin, kind string, d time.Duration, fn func(ctx context.Context)) bool
}

// Options are the timing; the zero value takes the defaults.
type Options struct {
	// Timeout bounds one SOA query, and each read of a transfer
	// (default 10s).
	Timeout time.Duration
	// FirstRetry is how long to wait before trying again when there is
	// no SOA to take the retry interval from: no copy yet (default 30s).
	FirstRetry time.Duration
	// MinRefresh is the shortest refresh or retry interval used, however
	// small the SOA's (default 1s): a primary is not polled in a loop.
	MinRefresh time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Metrics counts the refreshes and transfers; nil: none.
	Metrics *metrics.Set
}

func (o *Options) defaults() {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.FirstRetry <= 0 {
		o.FirstRetry = 30 * time.Second
	}
	if o.MinRefresh <= 0 {
		o.MinRefresh = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// The kinds of a secondary zone's timed events.
const (
	eventRefresh = "refresh"
	eventExpire  = "expire"
)

// Secondaries keeps the secondary zones fresh: each zone's refresh and
// expiry are timed events of the zone in the Store.
type Secondaries struct {
	store Store
	log   *slog.Logger
	opts  Options

	// mu guards zones (Add, Remove, Set); the zones' events never take it.
	mu    sync.Mutex
	zones map[string]*zoneRun
}

// zoneRun is one secondary zone's state: its settings, and the timers
// its events keep (read by Timers).
type zoneRun struct {
	z   Zone
	log *slog.Logger
	// full makes the next refresh an AXFR whatever the serials.
	full atomic.Bool
	// gone: the zone was removed or its settings replaced: its events
	// still pending do nothing.
	gone atomic.Bool

	mu     sync.Mutex
	timers Timers
}

// Timers are a secondary zone's refresh times (RFC 1035 §3.3.13's
// refresh, retry and expire applied), kept beside the stored copy so
// that a restart refreshes when due.
type Timers struct {
	// LastRefresh is when the primary last confirmed the version
	// served (a transfer, or a SOA query finding the serial current);
	// zero when none has since the version was stored or expired.
	LastRefresh time.Time `json:"last-refresh,omitzero"`
	// NextRefresh is when the next SOA query is due (zero: one is
	// running now).
	NextRefresh time.Time `json:"next-refresh,omitzero"`
	// Expires is when the version served stops being served without a
	// successful refresh (RFC 1035 §3.3.13); zero when nothing is served.
	Expires time.Time `json:"expires,omitzero"`
}

// Refresh makes the zone origin refresh at once (an accepted NOTIFY,
// RFC 1996 §3.11, or tern ctl refresh: a SOA query, and a transfer when
// the serial is newer). It never blocks: the refresh is the zone's
// event, replacing the one timed (a request while one waits is one
// refresh). It reports whether origin is a secondary zone here.
func (s *Secondaries) Refresh(origin string) bool {
	zr := s.zoneRun(origin)
	if zr == nil {
		return false
	}
	if zr.full.Load() {
		zr.log.Info("secondary: retransfer requested (tern ctl retransfer)")
	} else {
		zr.log.Info("secondary: refresh requested (NOTIFY or tern ctl refresh)")
	}
	s.schedule(zr, eventRefresh, 0)
	return true
}

// Retransfer makes the zone origin transferred whole (AXFR) at once,
// whatever the serials (tern ctl retransfer, as knotc
// zone-retransfer). It never blocks, and reports whether origin is a
// secondary zone here.
func (s *Secondaries) Retransfer(origin string) bool {
	zr := s.zoneRun(origin)
	if zr == nil {
		return false
	}
	zr.full.Store(true)
	return s.Refresh(origin)
}

// Timers returns the refresh times of origin, and whether it is a
// secondary zone here.
func (s *Secondaries) Timers(origin string) (Timers, bool) {
	zr := s.zoneRun(origin)
	if zr == nil {
		return Timers{}, false
	}
	zr.mu.Lock()
	defer zr.mu.Unlock()
	return zr.timers, true
}

// zoneRun is origin's run, nil when origin is not a secondary zone.
func (s *Secondaries) zoneRun(origin string) *zoneRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.zones[origin]
}

// New returns Secondaries that change store; Set or Add starts zones.
func New(store Store, log *slog.Logger, opts Options) *Secondaries {
	opts.defaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Secondaries{store: store, log: log, opts: opts, zones: map[string]*zoneRun{}}
}

// Set makes zones the secondary zones (at start, and on each reload):
// zones no longer among them stop, new ones start (Add), and those
// whose settings are unchanged go on as they were, timers and all.
func (s *Secondaries) Set(zones []Zone) {
	keep := make(map[string]bool, len(zones))
	for _, z := range zones {
		keep[z.Origin] = true
		s.Add(z)
	}
	s.mu.Lock()
	var gone []string
	for origin := range s.zones {
		if !keep[origin] {
			gone = append(gone, origin)
		}
	}
	s.mu.Unlock()
	for _, origin := range gone {
		s.Remove(origin)
	}
}

// Add starts keeping z fresh (a zone added, or its settings changed;
// the same settings again change nothing). The first refresh is when
// the timers stored beside the copy say it is due (at once when past,
// or without timers or a copy); a copy stored past its expiry is
// expired at once (RFC 1035 §3.3.13), whatever its file's time.
func (s *Secondaries) Add(z Zone) {
	s.mu.Lock()
	old := s.zones[z.Origin]
	if old != nil && reflect.DeepEqual(old.z, z) {
		s.mu.Unlock()
		return
	}
	if old != nil {
		old.gone.Store(true)
	}
	zr := &zoneRun{z: z, log: s.log.With("zone", z.Origin)}
	s.zones[z.Origin] = zr
	s.mu.Unlock()

	now := s.opts.Now()
	soa := soaOf(s.store.Served(z.Origin))
	var first time.Duration // at once
	if soa != nil {
		t, err := readTimers(z.File)
		switch {
		case err == nil && !t.LastRefresh.IsZero():
			zr.timers = t
			first = t.NextRefresh.Sub(now)
			// RFC 1035 §3.3.13: expire counts from the last refresh,
			// across restarts.
			s.schedule(zr, eventExpire, t.LastRefresh.Add(seconds(soa.Expire)).Sub(now))
		case errors.Is(err, os.ErrNotExist):
			// A copy stored before timers were (an older Tern): it was
			// current when written, at the latest; refreshed at once.
			if fi, serr := os.Stat(z.File); serr == nil {
				zr.timers.LastRefresh = fi.ModTime()
				zr.timers.Expires = fi.ModTime().Add(seconds(soa.Expire))
				s.schedule(zr, eventExpire, zr.timers.Expires.Sub(now))
			}
		case err != nil:
			zr.log.Warn("secondary: stored timers unreadable, refreshing at once", "err", err)
		}
	}
	if old != nil {
		// New settings (primaries, file): a refresh with them now.
		first = 0
	}
	s.schedule(zr, eventRefresh, first)
}

// Remove stops keeping origin fresh.
func (s *Secondaries) Remove(origin string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if zr := s.zones[origin]; zr != nil {
		zr.gone.Store(true)
		delete(s.zones, origin)
	}
}

// Close stops every zone's refresh.
func (s *Secondaries) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for origin, zr := range s.zones {
		zr.gone.Store(true)
		delete(s.zones, origin)
	}
}

// schedule times zr's event of kind d from now.
func (s *Secondaries) schedule(zr *zoneRun, kind string, d time.Duration) {
	fn := s.refreshEvent
	if kind == eventExpire {
		fn = s.expireEvent
	}
	s.store.At(zr.z.Origin, kind, d, func(ctx context.Context) {
		if !zr.gone.Load() {
			fn(ctx, zr)
		}
	})
}

// refreshEvent refreshes zr's zone (an event of the zone) and times the
// next refresh (and, after a success, the expiry), storing the timers.
func (s *Secondaries) refreshEvent(ctx context.Context, zr *zoneRun) {
	zr.mu.Lock()
	zr.timers.NextRefresh = time.Time{}
	zr.mu.Unlock()
	began := time.Now()
	err := s.refresh(ctx, zr.z, zr.full.Swap(false), zr.log)
	if ctx.Err() != nil {
		return // removed, or the server stops
	}
	s.opts.Metrics.ZoneEvent(zr.z.Origin, metrics.Refresh, err, time.Since(began))
	now := s.opts.Now()
	soa := soaOf(s.store.Served(zr.z.Origin))
	zr.mu.Lock()
	t := zr.timers
	zr.mu.Unlock()
	var wait time.Duration
	if err == nil {
		t.LastRefresh = now
		wait = s.interval(soa, func(s *dns.SOA) uint32 { return s.Refresh })
		if soa != nil {
			s.schedule(zr, eventExpire, seconds(soa.Expire))
		}
	} else {
		wait = s.interval(soa, func(s *dns.SOA) uint32 { return s.Retry })
		if soa != nil {
			zr.log.Warn(fmt.Sprintf("secondary: refresh failed, serial %d stays served", soa.Serial), "retry-in", wait, "err", err)
		} else {
			zr.log.Warn("secondary: transfer failed, no data to serve (SERVFAIL)", "retry-in", wait, "err", err)
		}
	}
	t.NextRefresh = now.Add(wait)
	t.Expires = time.Time{}
	if soa != nil && !t.LastRefresh.IsZero() {
		t.Expires = t.LastRefresh.Add(seconds(soa.Expire))
	}
	s.setTimers(zr, t)
	s.schedule(zr, eventRefresh, wait)
}

// expireEvent stops serving zr's zone when it has not been refreshed
// within its SOA expire (RFC 1035 §3.3.13: it is no longer
// authoritative): answered SERVFAIL until a transfer succeeds.
func (s *Secondaries) expireEvent(ctx context.Context, zr *zoneRun) {
	soa := soaOf(s.store.Served(zr.z.Origin))
	zr.mu.Lock()
	t := zr.timers
	zr.mu.Unlock()
	now := s.opts.Now()
	if soa == nil || t.LastRefresh.IsZero() || now.Before(t.LastRefresh.Add(seconds(soa.Expire))) {
		return // refreshed since, or nothing to expire
	}
	why := fmt.Errorf("expired: not refreshed since %s (SOA expire %ds)", t.LastRefresh.Format(time.RFC3339), soa.Expire)
	if err := s.store.Expire(ctx, zr.z.Origin, why); err != nil {
		return
	}
	zr.log.Error("secondary: expired, answered SERVFAIL until a transfer succeeds", "err", why)
	t.LastRefresh, t.Expires = time.Time{}, time.Time{}
	s.setTimers(zr, t)
}

// setTimers makes t zr's timers, and stores them beside the zone's copy
// (atomically: a crash leaves the old timers or the new). A failure is
// logged: a restart then refreshes at once.
func (s *Secondaries) setTimers(zr *zoneRun, t Timers) {
	zr.mu.Lock()
	zr.timers = t
	zr.mu.Unlock()
	if err := writeTimers(zr.z.File, t); err != nil {
		zr.log.Warn("secondary: timers not stored (a restart refreshes at once)", "err", err)
	}
}

// TimersPath is where the timers of the zone stored in file are kept.
func TimersPath(file string) string { return file + ".timers" }

// writeTimers stores t beside file, atomically.
func writeTimers(file string, t Timers) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := durable.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return durable.WriteFile(TimersPath(file), append(b, '\n'), 0o644)
}

// readTimers reads the timers stored beside file.
func readTimers(file string) (Timers, error) {
	var t Timers
	b, err := os.ReadFile(TimersPath(file))
	if err != nil {
		return t, err
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return t, fmt.Errorf("%s: %w", TimersPath(file), err)
	}
	return t, nil
}

// interval is the SOA field get as a duration, FirstRetry without a SOA,
// never below MinRefresh.
func (s *Secondaries) interval(soa *dns.SOA, get func(*dns.SOA) uint32) time.Duration {
	d := s.opts.FirstRetry
	if soa != nil {
		d = seconds(get(soa))
	}
	return max(d, s.opts.MinRefresh)
}

func seconds(n uint32) time.Duration { return time.Duration(n) * time.Second }

// soaOf is the SOA of z, nil when z has no data.
func soaOf(z *zone.Zone) *dns.SOA {
	if z == nil || z.Unavailable || z.SOA == nil {
		return nil
	}
	rr, err := z.SOARecord().Unpack()
	if err != nil {
		return nil
	}
	soa, _ := rr.(*dns.SOA)
	return soa
}

// refresh asks the primaries in turn until one answers: its serial is
// compared with the one served, and the zone transferred when newer (or
// when nothing is served). full skips the comparison: an AXFR whatever
// the serials. It returns nil when one primary answered and the zone is
// current after it, else every primary's failure.
func (s *Secondaries) refresh(ctx context.Context, z Zone, full bool, log *slog.Logger) error {
	served := s.store.Served(z.Origin)
	have := soaOf(served)
	var errs []error
	for _, p := range z.Primaries {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if full {
			// A retransfer: the whole zone, whatever the serials.
			have = nil
		} else if serial, err := s.querySOA(ctx, z.Origin, p); errors.Is(err, errRefused) {
			// Knot refuses plain queries to a catalog zone it makes
			// (RFC 9432 zones are for transfers): the transfer says
			// (an IXFR of the serial served answers one SOA when
			// current, RFC 1995 §4).
			log.Debug("secondary: SOA query refused, asking for the transfer", "primary", p.Remote)
		} else if err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): SOA query: %w", p.Remote, p.Addr, err))
			continue
		} else if have != nil && wire.SerialCompare(serial, have.Serial) <= 0 {
			log.Debug("secondary: serial current", "serial", have.Serial, "primary", p.Remote)
			return nil
		}
		start := time.Now()
		var nz *zone.Zone
		var rrs []zone.RR
		var how string
		var err error
		if have != nil {
			// RFC 1995: the differences since the serial served; a
			// primary without them sends the whole zone (AXFR form).
			nz, rrs, how, err = s.transfer(ctx, z, p, served, have.Serial)
			if errors.Is(err, errCurrent) {
				log.Debug("secondary: serial current", "serial", have.Serial, "primary", p.Remote)
				return nil
			}
			if err != nil {
				log.Info("secondary: IXFR failed, trying AXFR", "primary", p.Remote, "err", err)
			}
		}
		if nz == nil {
			if nz, rrs, how, err = s.transfer(ctx, z, p, nil, 0); err != nil {
				errs = append(errs, fmt.Errorf("%s (%s): AXFR: %w", p.Remote, p.Addr, err))
				s.opts.Metrics.ZoneEvent(z.Origin, metrics.Transfer, err, time.Since(start))
				continue
			}
		}
		err = s.store.Install(ctx, z.Origin, nz)
		s.opts.Metrics.ZoneEvent(z.Origin, metrics.Transfer, err, time.Since(start))
		if err != nil {
			return err
		}
		log.Info(fmt.Sprintf("secondary: transferred serial %d", nz.Serial), "primary", p.Remote, "addr", p.Addr.String(), "how", how, "took", time.Since(start).Round(time.Millisecond))
		// Stored once served: the new version answers without waiting
		// for its presentation form. A crash before the copy is written
		// restarts from the previous copy and timers (refreshEvent
		// writes them after this), which a refresh brings up to date.
		if err := storeCopy(z, p, how, rrs); err != nil {
			log.Error("secondary: the transferred zone is served but not stored", "err", err)
			return err
		}
		return nil
	}
	if len(errs) == 0 {
		return errors.New("no primary configured")
	}
	return errors.Join(errs...)
}

// client returns a dns.Client for p over network, with its key.
func (s *Secondaries) client(network string, p Primary) *dns.Client {
	c := &dns.Client{Net: network, Timeout: s.opts.Timeout}
	if p.Key != nil {
		c.TsigSecret = map[string]string{p.Key.Name: p.Key.Secret}
	}
	return c
}

// sign adds p's TSIG to m, when p has a key.
func sign(m *dns.Msg, p Primary) {
	if p.Key != nil {
		m.SetTsig(p.Key.Name, p.Key.Algorithm, tsig.Fudge, time.Now().Unix())
	}
}

// querySOA asks p for origin's SOA serial (over UDP, over TCP when the
// answer is truncated).
func (s *Secondaries) querySOA(ctx context.Context, origin string, p Primary) (uint32, error) {
	m := new(dns.Msg)
	m.SetQuestion(origin, dns.TypeSOA)
	m.RecursionDesired = false
	sign(m, p)
	r, _, err := s.client("udp", p).ExchangeContext(ctx, m, p.Addr.String())
	if err == nil && r.Truncated {
		sign(m, p)
		r, _, err = s.client("tcp", p).ExchangeContext(ctx, m, p.Addr.String())
	}
	if err != nil {
		return 0, err
	}
	if p.Key != nil && r.IsTsig() == nil {
		// RFC 8945 §5.3: an answer to a signed request is signed.
		return 0, errors.New("unsigned answer to a signed query")
	}
	if r.Rcode == dns.RcodeRefused {
		return 0, errRefused
	}
	if r.Rcode != dns.RcodeSuccess {
		return 0, fmt.Errorf("answered %s", dns.RcodeToString[r.Rcode])
	}
	for _, rr := range r.Answer {
		if soa, ok := rr.(*dns.SOA); ok && dns.CanonicalName(soa.Hdr.Name) == origin {
			return soa.Serial, nil
		}
	}
	return 0, errors.New("no SOA in the answer")
}

// errRefused is querySOA's error for a SOA query answered REFUSED.
var errRefused = errors.New("answered REFUSED")

// errCurrent is transfer's error for an IXFR answered with the SOA of
// the version served: nothing to transfer.
var errCurrent = errors.New("the serial served is current")

// transfer fetches origin from p, by AXFR, or with served (the version
// served, of serial from) by IXFR (RFC 1995), and compiles the result:
// the new version and its records (the SOA first), which storeCopy
// writes once it is served, and how it came. A transfer that breaks
// off, or whose result does not load, is an error and changes nothing.
func (s *Secondaries) transfer(ctx context.Context, z Zone, p Primary, served *zone.Zone, from uint32) (_ *zone.Zone, _ []zone.RR, how string, _ error) {
	recs, err := s.readTransfer(ctx, z.Origin, p, served != nil, from)
	if err != nil {
		return nil, nil, "", err
	}
	if len(recs) == 1 && served != nil && recs[0].Type() == dns.TypeSOA {
		// RFC 1995 §4: one SOA, not newer (transferReader checked), is
		// the answer of a primary whose serial is the one served.
		return nil, nil, "", errCurrent
	}
	if len(recs) < 2 {
		return nil, nil, "", errors.New("no zone in the answer")
	}
	how = "AXFR"
	if served != nil {
		how = "IXFR, whole zone"
	}
	if served != nil && recs[1].Type() == dns.TypeSOA {
		// RFC 1995 §4: an incremental answer (a whole zone's second
		// record is never its SOA).
		how = "IXFR"
		if recs, err = applyIXFR(served, recs); err != nil {
			return nil, nil, "", err
		}
	} else {
		// RFC 5936 §2.2: the closing SOA repeats the opening one.
		recs = recs[:len(recs)-1]
	}
	// Compiled from the wire form the transfer carried: no presentation
	// form on the way to serving.
	nz, err := zone.CompileRecords(z.Origin, z.File, recs)
	if err != nil {
		return nil, nil, "", fmt.Errorf("the transferred zone does not load: %w", err)
	}
	return nz, recs, how, nil
}

// storeCopy writes recs, the zone taken from p by how, to its file in
// presentation form (atomically), so that a restart serves them.
func storeCopy(z Zone, p Primary, how string, recs []zone.RR) error {
	var text bytes.Buffer
	fmt.Fprintf(&text, ";; %s transferred from %s (%s) by %s\n", z.Origin, p.Remote, p.Addr, how)
	for _, r := range recs {
		rr, err := r.Unpack()
		if err != nil {
			return fmt.Errorf("storing the transferred zone: %s: %w", zone.NameString(r.Owner), err)
		}
		text.WriteString(rr.String())
		text.WriteByte('\n')
	}
	if err := durable.MkdirAll(filepath.Dir(z.File), 0o755); err != nil {
		return err
	}
	if err := durable.WriteFile(z.File, text.Bytes(), 0o644); err != nil {
		return fmt.Errorf("storing the transferred zone: %w", err)
	}
	return nil
}

// applyIXFR applies the differences of an incremental answer (RFC 1995
// §4: the new SOA; then per version the old SOA, the records deleted,
// the new SOA, the records added; the new SOA again) to served, and
// returns the records of the new version, its SOA first. A record is
// deleted whatever its TTL, and owners match without case (readTransfer
// lowered them); one the version served lacks is an error (the caller
// falls back to AXFR). One pass over served, with no sort and no
// presentation form: an IXFR's cost is the size of the zone in hash
// lookups.
func applyIXFR(served *zone.Zone, recs []zone.RR) ([]zone.RR, error) {
	// key names a record without its TTL: owner, then type and class,
	// then RDLENGTH and RDATA.
	key := func(buf []byte, r zone.RR) []byte {
		return append(append(append(buf[:0], r.Owner...), r.Tail[:4]...), r.Tail[8:]...)
	}
	deleted := map[string]bool{} // of served: true once met
	added := map[string]int{}    // index in adds; -1 when deleted again
	var adds []zone.RR
	var k []byte
	adding := true // before the first old SOA
	for i, r := range recs[1 : len(recs)-1] {
		if r.Type() == dns.TypeSOA {
			adding = !adding
			continue
		} else if i == 0 {
			return nil, errors.New("IXFR: no SOA opening the first difference")
		}
		k = key(k, r)
		if adding {
			if j, ok := added[string(k)]; ok && j >= 0 {
				adds[j] = r // the same record again (a new TTL)
			} else {
				added[string(k)] = len(adds)
				adds = append(adds, r)
			}
			continue
		}
		if j, ok := added[string(k)]; ok && j >= 0 {
			// Added by an earlier version of this answer.
			added[string(k)] = -1
			continue
		}
		if _, ok := deleted[string(k)]; ok {
			return nil, fmt.Errorf("IXFR: deletes a record the version served lacks: %s", rrString(r))
		}
		deleted[string(k)] = false
	}
	out := make([]zone.RR, 0, served.Records+len(adds))
	out = append(out, recs[0])
	found := 0
	served.EachRecord(func(r zone.RR) {
		k = key(k, r)
		if seen, ok := deleted[string(k)]; ok {
			if !seen {
				deleted[string(k)] = true
				found++
			}
			return
		}
		if j, ok := added[string(k)]; ok && j >= 0 {
			return // added again: kept once, with its new TTL
		}
		out = append(out, r)
	})
	if found != len(deleted) {
		for _, r := range recs[1 : len(recs)-1] {
			if r.Type() == dns.TypeSOA {
				continue
			}
			if seen, ok := deleted[string(key(k, r))]; ok && !seen {
				return nil, fmt.Errorf("IXFR: deletes a record the version served lacks: %s", rrString(r))
			}
		}
	}
	for _, r := range adds {
		if added[string(key(k, r))] >= 0 {
			out = append(out, r)
		}
	}
	return out, nil
}

// rrString is r in presentation form, for messages.
func rrString(r zone.RR) string {
	rr, err := r.Unpack()
	if err != nil {
		return zone.NameString(r.Owner)
	}
	return rr.String()
}
