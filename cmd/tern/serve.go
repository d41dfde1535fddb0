package main

import (
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/acl"
	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/catalog"
	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/cookie"
	"github.com/tern-dns/tern/internal/dnstap"
	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/notify"
	"github.com/tern-dns/tern/internal/recursor"
	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/rrl"
	"github.com/tern-dns/tern/internal/secondary"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/trustanchor"
	"github.com/tern-dns/tern/internal/tsig"
	"github.com/tern-dns/tern/internal/upstream"
	"github.com/tern-dns/tern/internal/validator"
	"github.com/tern-dns/tern/internal/zone"
	"github.com/tern-dns/tern/internal/zonedb"
)

//go:embed demo.zone
var demoZone []byte

const demoOrigin = "example.test."

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// serveFlags are the command-line settings of tern serve. Those that
// override the config file's are applied at start and again to the config
// re-read on every SIGHUP.
type serveFlags struct {
	cfgPath string
	listens multiFlag
	zones   multiFlag
	// resolvers are --resolver's addresses: a [resolver] table with
	// them as its listen, defaults for the rest.
	resolvers multiFlag
	// trustAnchor is --trust-anchor: the resolver's trust-anchor file.
	trustAnchor string
	workers     int
	logLevel    string
	// metrics is --metrics's address: [metrics] listen.
	metrics string
}

// config reads the config file (the defaults when there is none), applies
// the flags and validates the result.
func (f *serveFlags) config() (*config.Config, error) {
	cfg := config.Default()
	if f.cfgPath != "" {
		var err error
		if cfg, err = config.Load(f.cfgPath); err != nil {
			return nil, err
		}
	}
	if len(f.listens) > 0 {
		cfg.Server.Listen = f.listens
	}
	for _, z := range f.zones {
		origin, file, _ := strings.Cut(z, "=") // checked by runServe
		cfg.Zones = append(cfg.Zones, config.Zone{Origin: origin, File: file})
	}
	if len(f.resolvers) > 0 {
		if cfg.Resolver == nil {
			cfg.Resolver = config.DefaultResolver()
		}
		cfg.Resolver.Listen = f.resolvers
	}
	if f.trustAnchor != "" && cfg.Resolver != nil {
		cfg.Resolver.TrustAnchor = f.trustAnchor
	}
	if f.workers >= 0 {
		cfg.Server.Workers = f.workers
	}
	if f.logLevel != "" {
		cfg.Server.LogLevel = f.logLevel
	}
	if f.metrics != "" {
		cfg.Metrics = &config.Metrics{Listen: f.metrics}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tern serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f serveFlags
	fs.StringVar(&f.cfgPath, "c", "", "config file (TOML); SIGHUP re-reads it")
	fs.Var(&f.listens, "listen", "address to listen on, host:port (repeatable)")
	fs.Var(&f.zones, "zone", "zone to serve, ORIGIN=FILE (repeatable)")
	fs.Var(&f.resolvers, "resolver", "run the recursive resolver on this address, host:port (repeatable)")
	fs.StringVar(&f.trustAnchor, "trust-anchor", "", "the resolver's DNSSEC trust anchors, DS or DNSKEY records in zone-file form (default: the embedded root anchors)")
	fs.IntVar(&f.workers, "workers", -1, "UDP workers per address (0: one per CPU)")
	fs.StringVar(&f.logLevel, "log-level", "", "debug, info, warn or error")
	fs.StringVar(&f.metrics, "metrics", "", "serve Prometheus metrics (/metrics) and the status page (/) on this address, host:port")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (for tuning)")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tern serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	setGCPercent()
	for _, z := range f.zones {
		if origin, file, ok := strings.Cut(z, "="); !ok || origin == "" || file == "" {
			fmt.Fprintf(stderr, "tern serve: --zone %q: want ORIGIN=FILE\n", z)
			return 2
		}
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "tern serve: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "tern serve: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	cfg, err := f.config()
	if err != nil {
		fmt.Fprintf(stderr, "tern serve: %v\n", err)
		return 1
	}
	// The level is a LevelVar so that a reload can change it.
	var level slog.LevelVar
	level.Set(logLevel(cfg.Server.LogLevel))
	log := slog.New(logHandler(cfg.Server.LogFormat, stderr, &slog.HandlerOptions{Level: &level}))
	started := time.Now()
	cfgShown := f.cfgPath
	if cfgShown == "" {
		cfgShown = "none (defaults and flags)"
	}
	log.Info("starting", "version", version(), "config", cfgShown, "zones", len(cfg.Zones))
	// Logged last of all (deferred first) once a signal stopped the
	// server and the deferred closes below ran.
	var stopping time.Time
	defer func() {
		if !stopping.IsZero() {
			log.Info("stopped", "took", time.Since(stopping).Round(time.Millisecond))
		}
	}()

	nsid, err := cfg.Identity.NSIDBytes()
	if err != nil {
		fmt.Fprintf(stderr, "tern serve: %v\n", err)
		return 1
	}
	// The counters exist when something can read them: a metrics
	// listener, or the control socket (tern ctl stats). Without either
	// the workers count nothing. Counting costs 9-14 ns of the 1.6-2.5 us
	// of server CPU per answer (commit cef28a0's BenchmarkWorkerBatch and
	// bench/metrics.sh: on/off ratio 1.015-1.05), so the default
	// configuration, which has a control socket, counts.
	var counters *metrics.Set
	if (cfg.Metrics != nil && cfg.Metrics.Listen != "") || cfg.Server.Control != "" {
		counters = metrics.New()
	}
	resp := auth.New(nil, auth.Options{
		UDPPayload: cfg.Server.UDPPayload,
		NSID:       nsid,
		Chaos:      cfg.ChaosEnabled(),
		ID:         cfg.Identity.ID,
		Version:    cfg.Identity.Version,
		Log:        log,
		Metrics:    counters,
	})
	access, err := newAccess(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "tern serve: %v\n", err)
		return 1
	}
	resp.SetAccess(access)
	// A [resolver] without zones runs only the resolver: no demo zone,
	// no authoritative listeners.
	resolverOnly := cfg.Resolver != nil && len(cfg.Zones) == 0
	// DNS cookies (RFC 7873, RFC 9018) on every listener ([cookies]):
	// under the configured secrets, else a random one rotated every
	// secret-lifetime (the previous one still accepted); nil when
	// answer-cookie is off.
	cookies, err := newCookies(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "tern serve: %v\n", err)
		return 1
	}
	if cookies != nil {
		go cookies.rotate(ctx, cfg.Cookies.SecretLifetime.Duration)
	}
	// dnstap ([dnstap]): written out and closed after the servers have
	// stopped (closeTap, at shutdown; deferred for the other returns).
	tap, err := openTap(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "tern serve: %v\n", err)
		return 1
	}
	closeTap := sync.OnceFunc(func() {
		if tap == nil {
			return
		}
		if err := tap.Close(); err != nil {
			log.Error("dnstap: output not written whole", "err", err)
		}
		if n := tap.Dropped(); n > 0 {
			log.Warn("dnstap: records dropped (queues full)", "dropped", n, "written", tap.Written())
		}
	})
	defer closeTap()
	var srv *server.Server
	if !resolverOnly {
		srv = server.New(serverConfig(cfg, cfg.Server.Listen, log), tapped(tap, dnstap.Auth, limited(cfg, cookies.handler(handler(resp, cfg.Server.ResponseCache, counters, queryLog(log, cfg.Server.QueryLog)), cfg.Server.UDPPayload))))
		setMaxProcs(srv.UDPWorkers(), cfg.Resolver != nil)
	}
	var rec *recursor.Recursor
	var res *resolve.Resolver
	var rsrv *server.Server
	if cfg.Resolver != nil {
		var stopAnchors func()
		if rec, res, stopAnchors, err = newRecursor(cfg, resp, nsid, counters, log); err != nil {
			fmt.Fprintf(stderr, "tern serve: %v\n", err)
			return 1
		}
		defer stopAnchors()
		rec.LogQueries(log, cfg.Server.QueryLog)
		rsrv = server.New(serverConfig(cfg, cfg.Resolver.Listen, log), tapped(tap, dnstap.Client, limited(cfg, cookies.handler(rec, cfg.Server.UDPPayload))))
	}
	// SIGHUP is caught from here on: one that arrives while the zones
	// load must not kill the server (its default action).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	// The zone manager outlives ctx (the signals'): at a stop it keeps
	// running until the servers drained, so that an update still being
	// answered is applied and its zone file then written (shutdown).
	mgrCtx, stopMgr := context.WithCancel(context.WithoutCancel(ctx))
	defer stopMgr()
	rl := &reloader{ctx: mgrCtx, cookies: cookies, current: cfg, flags: &f, running: cfg, level: &level, log: log, metrics: counters, publish: resp.Publish, setAccess: resp.SetAccess, setJournals: resp.SetJournals, onNotify: resp.OnNotify, onUpdate: resp.OnUpdate,
		notify:   &notifying{n: notify.New(log, notify.Options{Source: notifySource(cfg.Server.Listen)})},
		resolver: res, loop: make(chan func()), consumed: map[string]*catalog.Catalog{}, removed: map[string]bool{}}
	if cfg.Resolver != nil {
		rl.ntas, rl.flush = cfg.Resolver.NegativeTrustAnchors, rec.Flush
	}
	defer rl.notify.n.Close()
	rl.access = access
	rl.notify.setTargets(cfg, access.Keys)
	defer rl.closeSecondaries()
	demo := len(cfg.Zones) == 0 && !resolverOnly
	if demo {
		z, err := zone.Read(bytes.NewReader(demoZone), "demo.zone", demoOrigin)
		if err != nil {
			fmt.Fprintf(stderr, "tern serve: %v\n", err)
			return 1
		}
		resp.Publish(zone.NewSet(z))
	} else if len(cfg.Zones) > 0 {
		// The catalogs produced here list the zones added at run time
		// from their first load, so that a restart keeps their serial.
		rl.restoring, _ = readAdded(cfg.Server.DataDir)
		if rl.consumed, err = readConsumed(cfg.Server.DataDir); err != nil {
			log.Error("catalogs consumed: their state is lost, members compared with none", "err", err)
		}
		rl.mgr = rl.newManager(cfg)
		// Loading makes garbage fast and keeps little of it: collecting
		// less often while it runs saves a third of a large zone's load
		// time; the memory goes back right after (FreeOSMemory below).
		gc := debug.SetGCPercent(400)
		serving, err := rl.mgr.Load(ctx)
		debug.SetGCPercent(gc)
		if serving == 0 && err != nil {
			// Each failed zone is logged; start anyway unless nothing
			// at all can be served (secondaries waiting for their
			// first transfer are not failures).
			fmt.Fprintf(stderr, "tern serve: no zone could be loaded: %v\n", err)
			return 1
		}
		go rl.mgr.Run(mgrCtx)
		rl.secondaries.Set(secondaryZones(cfg, access.Keys))
	}
	// The zones added at run time before the restart, beside the
	// configured ones.
	if added, err := readAdded(cfg.Server.DataDir); err != nil {
		log.Error("zones added at run time not served", "err", err)
	} else if len(added) > 0 && !resolverOnly {
		rl.restoreAdded(ctx, added)
	}
	rl.restoring = nil
	rl.restorePurges()
	rl.reloadCatalogs(ctx)
	rl.dropConsumed(ctx)
	// Loading leaves garbage several times the size of the compiled
	// zones (parsed records); hand it back before serving.
	debug.FreeOSMemory()
	// The control socket's commands run in the main loop below, one at
	// a time, between the SIGHUPs' reloads: the reloader is the main
	// loop's alone. It opens before the DNS listeners, so that once
	// serve prints where it serves, tern ctl reaches it too (a command
	// queued meanwhile waits for the loop).
	ctl := rl.loop
	if cfg.Server.Control != "" {
		cs := newControl(ctx, cfg.Server.Control, ctl, &controlState{
			rl: rl, zones: resp.Zones, started: started, resolver: rec != nil, demo: demo, counters: counters}, log)
		if err := cs.Start(ctx); err != nil {
			// DNS is served without it: a second server, or a test,
			// must not take the socket of one running, and a user
			// trying the demo zone may not write /run. A warning: the
			// server itself is whole.
			log.Warn("no control socket: tern ctl cannot reach this server", "err", err)
		} else {
			defer cs.Close()
			log.Info("control socket", "path", cs.Path())
		}
	}

	set := resp.Zones()
	if srv != nil {
		if err := srv.Start(ctx); err != nil {
			fmt.Fprintf(stderr, "tern serve: %v\n", err)
			return 1
		}
		defer srv.Close()
		names := make([]string, 0, set.Len())
		for _, z := range set.Zones() {
			if !z.Unavailable {
				names = append(names, zone.NameString(z.Origin))
			}
		}
		if len(names) == 0 {
			// Only secondaries, none transferred yet.
			names = append(names, cfg.Zones[0].Origin)
		}
		addrs := srv.Addrs()
		log.Info("serving", "zones", len(names), "listen", strings.Join(addrs, ","), "took", time.Since(started).Round(time.Millisecond))
		fmt.Fprintf(stdout, "tern: serving %s on %s (UDP and TCP); try: %s\n",
			strings.Join(names, ", "), strings.Join(addrs, ", "), digHint(addrs[0], demo, names[0], "A"))
	}
	if rsrv != nil {
		if err := rsrv.Start(ctx); err != nil {
			fmt.Fprintf(stderr, "tern serve: resolver: %v\n", err)
			return 1
		}
		defer rsrv.Close()
		// Run before rsrv.Close (deferred calls run last first): the
		// resolutions in flight end at once, their clients answered
		// SERVFAIL, and rsrv.Close, which waits for every deferred TCP
		// answer, does not wait for them to run their course.
		defer rec.Close()
		addrs := rsrv.Addrs()
		r := cfg.Resolver
		hints := r.RootHints
		if hints == "" {
			hints = "embedded IANA hints"
		}
		validation := "off"
		if r.Validation {
			validation = "on, trust anchors " + cmp.Or(r.TrustAnchor, "embedded (root KSK-2017, KSK-2024)")
		}
		log.Info("resolving", "listen", strings.Join(addrs, ","), "allow", strings.Join(r.Allow, ","), "root-hints", hints, "query-loopback", r.QueryLoopback, "validation", validation)
		fmt.Fprintf(stdout, "tern: resolving on %s (UDP and TCP) for %s; try: %s\n",
			strings.Join(addrs, ", "), strings.Join(r.Allow, ", "), digHint(addrs[0], false, ".", "NS"))
	}

	if counters != nil {
		counters.SetZones(zoneStates(resp, rl))
	}
	if cfg.Metrics != nil && cfg.Metrics.Listen != "" {
		ml, err := metrics.Listen(cfg.Metrics.Listen, counters, log)
		if err != nil {
			fmt.Fprintf(stderr, "tern serve: %v\n", err)
			return 1
		}
		defer ml.Close()
		log.Info("metrics", "listen", ml.Addr())
		fmt.Fprintf(stdout, "tern: metrics on http://%s/metrics, status page on http://%s/\n", ml.Addr(), ml.Addr())
	}

	// Every socket is bound: port 53 needed root, the rest does not.
	if u := cfg.Server.User; u != "" {
		owned := []string{cfg.Server.DataDir}
		if cfg.Server.Control != "" {
			// The socket and its directory, so that the socket can be
			// removed at stop. Only a directory of its own, as
			// /run/tern is: not one shared with others.
			owned = append(owned, cfg.Server.Control)
			if dir := filepath.Dir(cfg.Server.Control); dir != cfg.Server.DataDir && filepath.Base(dir) == "tern" {
				owned = append(owned, dir)
			}
		}
		uid, gid, err := dropPrivileges(u, cfg.Server.Group, owned)
		if err != nil {
			// Not serving as root when told not to.
			log.Error("privileges not dropped, stopping", "user", u, "group", cfg.Server.Group, "err", err)
			fmt.Fprintf(stderr, "tern serve: %v\n", err)
			return 1
		}
		log.Info("privileges dropped", "user", u, "uid", uid, "gid", gid)
	}

	for {
		select {
		case <-ctx.Done():
			stopping = time.Now()
			shutdown(log, context.Cause(ctx), rl, srv, rsrv, shutdownTimeout)
			closeTap()
			return 0
		case <-hup:
			rl.reload(ctx)
		case f := <-ctl:
			f()
		}
	}
}

// shutdownTimeout bounds how long a stopping server waits for the TCP
// queries and zone transfers out in progress, and then again for the
// zone files to be written; what is left then is cut off. systemd's
// default TimeoutStopSec, 90 s, leaves room for both.
const shutdownTimeout = 30 * time.Second

// shutdown stops the servers gracefully: no new datagram or connection
// is taken, the TCP queries read and the zone transfers out under way
// finish (each server's Shutdown, both at once, within timeout), and
// then the zone files of dynamically updated zones whose zonefile-sync
// has not run yet are written (the updates are in the update journals,
// fsynced before they were answered, already). srv or rsrv may be nil.
// The zone manager and the rest stop after it, in runServe's deferred
// calls.
func shutdown(log *slog.Logger, cause error, rl *reloader, srv, rsrv *server.Server, timeout time.Duration) {
	log.Info("shutting down", "cause", cause, "timeout", timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range []*server.Server{srv, rsrv} {
		if s == nil {
			continue
		}
		wg.Go(func() {
			if err := s.Shutdown(ctx); err != nil {
				log.Warn("shutdown: connections still busy were cut off", "listen", strings.Join(s.Addrs(), ","), "err", err)
			}
		})
	}
	wg.Wait()
	if rl.mgr == nil {
		return
	}
	ctx, cancel = context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := rl.mgr.SyncZonefiles(ctx); err != nil {
		log.Error("shutdown: zone files not rewritten: the changes stay in the update journals", "err", err)
	}
	rl.mgr.Close()
}

// serverConfig is the server.Config of listeners on addrs: the
// authoritative ones, or the resolver's, which share every other setting
// of [server].
func serverConfig(cfg *config.Config, addrs []string, log *slog.Logger) server.Config {
	c := server.Config{
		Listen:            addrs,
		Workers:           cfg.Server.Workers,
		TCPIdleTimeout:    cfg.Server.TCPIdleTimeout.Duration,
		TCPMaxConnections: cfg.Server.TCPMaxConnections,
		TCPMaxPerClient:   cfg.Server.TCPMaxPerClient,
		TCPMaxPipelined:   cfg.Server.TCPMaxPipelined,
		TCPIOTimeout:      cfg.Server.TCPIOTimeout.Duration,
		// RFC 9715 R3: answers of at most 1400 bytes fit whole.
		DontFragment: cfg.Server.UDPPayload <= 1400,
		Logger:       log,
	}
	if r := cfg.RRL; r != nil {
		// RRL keeps accounts per UDP worker: every datagram of a
		// client prefix goes to one worker, so that a flood spread
		// over source ports meets one account, not one per worker.
		c.SteerIPv4, c.SteerIPv6 = r.IPv4Prefix, r.IPv6Prefix
	}
	return c
}

// trustAnchors reads the trust anchors of file (DS or DNSKEY records,
// with the RFC 5011 states an anchor file Tern or Unbound manages
// records: only the keys in force are anchors), or returns the embedded
// root anchors when file is "".
func trustAnchors(file string) (validator.Anchors, error) {
	if file == "" {
		return validator.RootAnchors(), nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return trustanchor.Read(f, file)
}

// managedAnchors returns the RFC 5011-managed Store of the [resolver]
// trust-anchor file when validation is on and the file is writable
// (else nil), and starts its probes (RFC 5011 §2.3) and key-tag
// signals (RFC 8145 §5) through a resolver that neither validates nor
// caches, like opt's otherwise; stop ends them.
func managedAnchors(rc *config.Resolver, ex upstream.Exchanger, opt resolve.Options, log *slog.Logger) (store *trustanchor.Store, stop func(), err error) {
	if !rc.Validation || rc.TrustAnchor == "" || !trustanchor.Writable(rc.TrustAnchor) {
		return nil, func() {}, nil
	}
	opt.Cache, opt.Validate, opt.Anchors = nil, false, nil
	probe := resolve.New(ex, opt)
	store, err = trustanchor.Load(rc.TrustAnchor, trustanchor.Options{Managed: true, Logger: log,
		// RFC 8145 §5: the anchors in force told to the zone's servers.
		Signal: func(ctx context.Context, qname string) { probe.Resolve(ctx, qname, dns.TypeNULL) }})
	if err != nil {
		return nil, nil, fmt.Errorf("resolver.trust-anchor: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		store.Run(ctx, trustanchor.ResolverFetch(probe))
	}()
	log.Info("trust anchors managed by RFC 5011", "file", rc.TrustAnchor, "zones", store.Zones())
	return store, func() { cancel(); <-done }, nil
}

// resolverTrust reads the root hints (nil: the embedded ones) and, with
// validation on, the trust anchors of the [resolver] table rc: its
// trust-anchor file, else the embedded root anchors (KSK-2017, KSK-2024).
// Hints that name servers other than the IANA root's with no trust-anchor
// are an error: the real root's anchors would make every answer of
// another root bogus, and running without validation unasked would be a
// silent downgrade. The operator says which (trust-anchor, or
// validation = false).
func resolverTrust(rc *config.Resolver) ([]resolve.Server, validator.Anchors, error) {
	var hints []resolve.Server
	if rc.RootHints != "" {
		var err error
		if hints, err = resolve.LoadHints(rc.RootHints); err != nil {
			return nil, nil, fmt.Errorf("resolver.root-hints: %w", err)
		}
	}
	if !rc.Validation {
		return hints, nil, nil
	}
	if rc.TrustAnchor == "" {
		if other := resolve.NotIANARoot(hints); other != "" {
			return nil, nil, fmt.Errorf("resolver.root-hints: %s names %s, not an IANA root server, and validation is on (the default) with the embedded root anchors, which cannot validate another root: set resolver.trust-anchor to its root's DS or DNSKEY records, or validation = false", rc.RootHints, other)
		}
	}
	anchors, err := trustAnchors(rc.TrustAnchor)
	if err != nil {
		return nil, nil, fmt.Errorf("resolver.trust-anchor: %w", err)
	}
	return hints, anchors, nil
}

// newRecursor builds the resolver of cfg's [resolver] table, answering
// the questions inside resp's zones from their data. It is built once:
// a reload keeps it, and its caches, whatever changed but its negative
// trust anchors (set on the Resolver it returns too).
func newRecursor(cfg *config.Config, resp *auth.Responder, nsid []byte, counters *metrics.Set, log *slog.Logger) (rec *recursor.Recursor, res *resolve.Resolver, stopAnchors func(), err error) {
	rc := cfg.Resolver
	hints, anchors, err := resolverTrust(rc)
	if err != nil {
		return nil, nil, nil, err
	}
	// The RRset and negative cache, shared by every worker; built
	// here once, it lives as long as the resolver, across reloads.
	rrsets := cache.New(rc.CacheOptions())
	var ex upstream.Exchanger = &upstream.Client{Log: log}
	if !rc.QueryLoopback {
		ex = upstream.NoLoopback(ex)
	}
	opt := resolve.Options{
		Hints:      hints,
		Limits:     rc.Limits(),
		Cache:      rrsets,
		NoMinimise: !rc.QNameMinimisation,
		CaseRandom: rc.RandomiseCase,
		NoIPv4:     !rc.QueryIPv4,
		NoIPv6:     !rc.QueryIPv6,
		Forward:    resolveZones(rc.Forward),
		Stub:       resolveZones(rc.Stub),
		Validate:   rc.Validation,
		Anchors:    anchors,
		Validator:  validator.Options{Limits: validatorLimits(rc)},
		// RFC 8198, with validation on.
		NoAggressiveNSEC: !rc.AggressiveNSEC,
		NegativeAnchors:  rc.NegativeTrustAnchors,
	}
	store, stopAnchors, err := managedAnchors(rc, ex, opt, log)
	if err != nil {
		return nil, nil, nil, err
	}
	if store != nil {
		opt.AnchorSource = store
	}
	// After the anchors' probe took its copy of opt: the probe keeps
	// an infrastructure cache of its own, uncounted.
	opt.Infra = resolve.NewInfra(resolve.InfraOptions{Metrics: counters})
	res = resolve.New(ex, opt)
	rec = recursor.New(recursor.Options{
		Resolver:         res,
		Auth:             resp,
		Allow:            cfg.ResolverAllow(),
		UDPPayload:       cfg.Server.UDPPayload,
		MaxResolutions:   rc.MaxResolutions,
		MaxPerClient:     rc.MaxPerClient,
		ClientPrefixIPv4: rc.ClientPrefixIPv4,
		ClientPrefixIPv6: rc.ClientPrefixIPv6,
		MaxWaiting:       rc.MaxWaiting,
		ResponseCache:    cfg.Server.ResponseCache,
		NSID:             nsid,
		Logger:           log,
		// RFC 8767 §5's client response timer: only with a stale
		// window is there stale data to answer with.
		StaleClientTimeout: staleClientTimeout(rc),
		Metrics:            counters,
	})
	counters.SetResolverCache(func() metrics.CacheSize {
		st := rrsets.Stats()
		n, b := rec.ResponseCaches()
		return metrics.CacheSize{RRsets: int64(st.RRsets), Negative: int64(st.Negative), Bytes: st.Bytes, Responses: int64(n), ResponseBytes: b}
	})
	return rec, res, stopAnchors, nil
}

// validatorLimits are the validation limits of the [resolver] table rc
// (validated by config: each at least 1).
func validatorLimits(rc *config.Resolver) validator.Limits {
	return validator.Limits{
		SigsPerRRset:  rc.MaxRRSIGsPerRRset,
		KeysPerTag:    rc.MaxDNSKEYsPerTag,
		Checks:        rc.MaxSignatureValidationsPerQuery,
		NSEC3Insecure: rc.NSEC3MaxIterations,
		NSEC3Bogus:    rc.NSEC3MaxIterationsBogus,
		Hashes:        rc.MaxNSEC3HashComputationsPerQuery,
	}
}

// staleClientTimeout is the recursor's client response timer: the
// table's, with serve-stale on; off without.
func staleClientTimeout(rc *config.Resolver) time.Duration {
	if rc.ServeStale.Duration <= 0 {
		return 0
	}
	return rc.StaleAnswerClientTimeout.Duration
}

// resolveZones are the forward or stub zones of the config for resolve.
func resolveZones(ds []config.Domain) []resolve.Zone {
	var zs []resolve.Zone
	for _, d := range ds {
		zs = append(zs, resolve.Zone{Name: d.Name, Servers: d.ServerAddrs()})
	}
	return zs
}

// logLevel parses server.log-level (validated by config).
func logLevel(s string) slog.Level {
	var level slog.Level
	if err := level.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return level
}

// logHandler is the slog handler of server.log-format (validated by
// config): JSON objects, or slog's text lines.
func logHandler(format string, w io.Writer, opts *slog.HandlerOptions) slog.Handler {
	if format == "json" {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// reloader applies a re-read config to a running server.
type reloader struct {
	flags *serveFlags
	// running is the config the server started with: the settings a
	// reload cannot apply are compared against it.
	running *config.Config
	level   *slog.LevelVar
	log     *slog.Logger
	publish func(*zone.Set)
	// setAccess publishes the TSIG keys and zone ACLs, setJournals
	// where IXFR finds the zones' differences.
	setAccess func(*auth.Access)
	// access is the Access last given to setAccess, that an added or
	// removed zone's ACL is set in (applyZone).
	access      *auth.Access
	setJournals func(auth.Journals)
	// onNotify sets what an accepted NOTIFY does, onUpdate an accepted
	// UPDATE.
	onNotify func(func(origin string))
	onUpdate func(func(*auth.UpdateRequest) int)
	// mgr is nil while the demo zone is served.
	mgr *zonedb.Manager
	// notify sends the zones' NOTIFYs.
	notify *notifying
	// secondaries refreshes the secondary zones of mgr (nil with it);
	// shown is the same, for the metrics' goroutine.
	secondaries *secondary.Secondaries
	// ctx is serve's: the zone manager runs until it ends.
	ctx context.Context
	// current is the configuration last applied (the start's, then
	// each reload's); added are the zones added at run time that it
	// does not name (zoneadd.go).
	current *config.Config
	added   []config.Zone
	// zones indexes current's zones and the added ones (zoneIndex);
	// nil until an add needs it, and after a reload.
	zones *config.ZoneIndex
	// cookies are the listeners' DNS cookie secrets (nil: off): a
	// reload sets the configured ones.
	cookies *cookieSecrets
	// resolver is the resolver's, nil without [resolver]: a reload sets
	// its negative trust anchors, ntas those it has, and flush empties
	// the recursor's response caches after a change.
	resolver *resolve.Resolver
	ntas     []string
	flush    func()
	shown    atomic.Pointer[secondary.Secondaries]
	// metrics counts the zones' loads, refreshes and transfers; nil:
	// no metrics.
	metrics *metrics.Set
	// catalogs are the members of the catalog zones produced here, by
	// catalog (catalog.go); read by the zones' events.
	catalogs atomic.Pointer[map[string][]string]
	// restoring are the zones added at run time before a restart,
	// while they are added again at start: members of the catalogs.
	restoring []config.Zone
	// loop runs functions on the main loop, where the reloader's
	// methods run (control commands, catalog changes).
	loop chan func()
	// consumed are the catalogs consumed, as last interpreted, by
	// origin (consume.go; the main loop's); interpret is the set of
	// their origins, read by the zones' events.
	consumed  map[string]*catalog.Catalog
	interpret atomic.Pointer[map[string]bool]
	// removed are the configured zones removed by tern ctl zone-remove
	// since the last reload (which serves them again): out of their
	// catalogs.
	removed map[string]bool
	// purges are the deletions of consumed catalogs' members' copies
	// pending (catalog-grace), by member, kept in data-dir; now is the
	// clock they are timed by (nil: time.Now).
	purges map[string]pendingPurge
	now    func() time.Time
}

// closeSecondaries stops the secondary zones' refreshes.
func (rl *reloader) closeSecondaries() {
	if rl.secondaries != nil {
		rl.secondaries.Close()
	}
}

// newManager returns the zone manager for cfg's zones, keeping journals
// under server.data-dir (a restart setting: its value at start stays).
func (rl *reloader) newManager(cfg *config.Config) *zonedb.Manager {
	m := zonedb.New(cfg.Zones, rl.publish, rl.log, nil)
	m.KeepJournals(rl.running.Server.DataDir, rl.running.JournalMaxBytes)
	m.OnChange(func(origin string, z *zone.Zone) {
		rl.notify.changed(origin, z)
		rl.catalogChanged(origin)
	})
	m.CountIn(rl.metrics)
	rl.setCatalogs()
	m.ProduceCatalogs(rl.members)
	rl.setJournals(m)
	rl.secondaries = secondary.New(m, rl.log, secondary.Options{Metrics: rl.metrics})
	sec := rl.secondaries
	m.OnZones(zonedb.Hooks{Removed: sec.Remove})
	rl.shown.Store(sec)
	rl.onNotify(func(origin string) { sec.Refresh(origin) })
	rl.onUpdate(func(u *auth.UpdateRequest) int { return applyUpdate(context.Background(), m, rl.log, u) })
	return m
}

// reload re-reads the config and applies what it can without a restart:
// the zones (added, removed, changed files and signing settings; each
// zone that fails keeps its previous version) and the log level. Every
// other changed setting is logged as needing a restart. A config with
// errors changes nothing.
// It returns the config's errors, or the failed zones' (joined).
func (rl *reloader) reload(ctx context.Context) error {
	start := time.Now()
	cfg, err := rl.flags.config()
	if err != nil {
		rl.log.Error("reload: the config has errors, nothing changed", "config", rl.flags.cfgPath, "err", strings.ReplaceAll(err.Error(), "\n", "; "))
		return err
	}
	for _, c := range restartChanges(rl.running, cfg) {
		rl.log.Warn("reload: "+c.key+" changed; it takes effect at the next restart", "running", c.running, "config", c.config)
	}
	rl.level.Set(logLevel(cfg.Server.LogLevel))
	secrets, err := cfg.Cookies.Secrets()
	if err != nil {
		rl.log.Error("reload: the config has errors, nothing changed", "config", rl.flags.cfgPath, "err", err)
		return err
	}
	if _, err := newAccess(rl.effective(cfg)); err != nil {
		rl.log.Error("reload: the config has errors, nothing changed", "config", rl.flags.cfgPath, "err", err)
		return err
	}
	rl.current = cfg
	rl.forgetConfigured(cfg)
	if err := rl.apply(rl.effective(cfg)); err != nil {
		rl.log.Error("reload: the config has errors, nothing changed", "config", rl.flags.cfgPath, "err", err)
		return err
	}
	rl.setNegativeAnchors(cfg)
	rl.cookies.set(secrets, time.Now())
	rl.log.Debug("reload: config read", "config", rl.flags.cfgPath, "zones", len(cfg.Zones), "log-level", cfg.Server.LogLevel)
	if rl.mgr == nil {
		if len(cfg.Zones) == 0 {
			if rl.running.Resolver != nil && len(rl.running.Zones) == 0 {
				rl.log.Info("reloaded: no zones configured", "took", time.Since(start))
			} else {
				rl.log.Info("reloaded: no zones configured, still serving the demo zone", "took", time.Since(start))
			}
			return nil
		}
		if rl.running.Resolver != nil && len(rl.running.Zones) == 0 {
			rl.log.Warn("reload: zones configured beside a resolver that runs alone: the resolver answers them from their data; server.listen opens at the next restart")
		}
		rl.mgr = rl.newManager(cfg)
		go rl.mgr.Run(rl.ctx)
	}
	clear(rl.removed)
	rl.setCatalogs()
	rl.dropConsumed(ctx)
	serving, err := rl.mgr.Reload(ctx, cfg.Zones)
	_ = rl.apply(rl.effective(cfg)) // the secondaries, now served
	debug.FreeOSMemory()
	// Zones busy with another event (a transfer) load when it ends, in
	// their own event: named here, logged when done.
	var loading []string
	for _, s := range rl.mgr.States() {
		if s.Loading {
			loading = append(loading, s.Origin)
		}
	}
	rl.log.Info("reloaded", "zones", len(cfg.Zones), "serving", serving, "failed", countErrs(err), "loading", strings.Join(loading, ","), "took", time.Since(start))
	return err
}

// setNegativeAnchors gives the running resolver the negative trust
// anchors of a re-read config (RFC 7646: an operator adds one while a
// domain's signatures are broken and removes it once mended, without a
// restart), logging a change.
func (rl *reloader) setNegativeAnchors(cfg *config.Config) {
	if rl.resolver == nil || cfg.Resolver == nil {
		return
	}
	next := cfg.Resolver.NegativeTrustAnchors
	if slices.Equal(rl.ntas, next) {
		return
	}
	rl.resolver.SetNegativeAnchors(next)
	rl.flush()
	rl.log.Info("reload: negative trust anchors", "was", strings.Join(rl.ntas, ","), "now", strings.Join(next, ","))
	rl.ntas = next
}

// newAccess returns the TSIG keys and zone ACLs of cfg, for the
// authoritative answers (transfers, signed queries).
func newAccess(cfg *config.Config) (*auth.Access, error) {
	keys := make([]tsig.Key, len(cfg.Keys))
	for i, k := range cfg.Keys {
		keys[i] = tsig.Key{Name: k.Name, Algorithm: k.Algorithm, Secret: k.Secret}
	}
	acls := make(map[string]acl.List)
	for i := range cfg.Zones {
		z := &cfg.Zones[i]
		l, err := cfg.ZoneACL(z)
		if err != nil {
			return nil, err
		}
		acls[dns.CanonicalName(z.Origin)] = l
	}
	return &auth.Access{Keys: tsig.NewKeyring(keys), ACLs: auth.NewACLs(acls)}, nil
}

// restartChange is a setting whose new value needs a restart.
type restartChange struct {
	key             string
	running, config any
}

// restartChanges lists the [server] and [identity] keys whose values
// differ between the running config and a re-read one, except
// log-level, which a reload applies, and the [resolver] table when it
// differs. The keys are found from the
// structs' toml tags, so a key added to config is covered.
func restartChanges(running, next *config.Config) []restartChange {
	var out []restartChange
	for _, table := range []struct {
		name      string
		old, next any
	}{
		{"server", running.Server, next.Server},
		{"identity", running.Identity, next.Identity},
	} {
		o, n := reflect.ValueOf(table.old), reflect.ValueOf(table.next)
		for i := range o.NumField() {
			key, _, _ := strings.Cut(o.Type().Field(i).Tag.Get("toml"), ",")
			if key == "" || key == "-" || table.name+"."+key == "server.log-level" {
				continue
			}
			a, b := o.Field(i).Interface(), n.Field(i).Interface()
			if !reflect.DeepEqual(a, b) {
				out = append(out, restartChange{table.name + "." + key, show(a), show(b)})
			}
		}
	}
	if !reflect.DeepEqual(running.Metrics, next.Metrics) {
		out = append(out, restartChange{"metrics", show(running.Metrics), show(next.Metrics)})
	}
	if a, b := running.Cookies, next.Cookies; a.AnswerCookie != b.AnswerCookie || a.SecretLifetime != b.SecretLifetime {
		// The secrets (secret, secret-file) a reload applies.
		a.Secret, a.SecretFile, b.Secret, b.SecretFile = nil, "", nil, ""
		out = append(out, restartChange{"cookies", a, b})
	}
	if !reflect.DeepEqual(running.RRL, next.RRL) {
		out = append(out, restartChange{"rrl", show(running.RRL), show(next.RRL)})
	}
	if !reflect.DeepEqual(withoutNTAs(running.Resolver), withoutNTAs(next.Resolver)) {
		// The resolver is kept, caches and all, across reloads; only
		// its negative trust anchors change (setNegativeAnchors).
		out = append(out, restartChange{"resolver", show(running.Resolver), show(next.Resolver)})
	}
	return out
}

// withoutNTAs is a copy of the [resolver] table r without its negative
// trust anchors, which a reload applies; nil for nil.
func withoutNTAs(r *config.Resolver) *config.Resolver {
	if r == nil {
		return nil
	}
	c := *r
	c.NegativeTrustAnchors = nil
	return &c
}

// show is a setting's value for the log: pointers followed.
func show(v any) any {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		return rv.Elem().Interface()
	}
	return v
}

// countErrs is how many errors err joins (errors.Join), 0 for nil.
func countErrs(err error) int {
	if err == nil {
		return 0
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return len(j.Unwrap())
	}
	return 1
}

// digHint is the command printed at start-up for trying the server.
func digHint(addr string, demo bool, origin, qtype string) string {
	host, port, _ := strings.Cut(addr, "]:")
	if strings.HasPrefix(addr, "[") {
		host = host[1:]
	} else {
		host, port, _ = strings.Cut(addr, ":")
	}
	name := origin
	if demo {
		name = "www." + demoOrigin
	}
	return fmt.Sprintf("dig @%s -p %s %s %s", host, port, name, qtype)
}

// runCheck implements 'tern check zone FILE --origin NAME' and
// 'tern check config FILE'.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: tern check zone FILE --origin NAME | tern check config FILE")
		return 2
	}
	fs := flag.NewFlagSet("tern check "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	origin := fs.String("origin", "", "zone origin (check zone)")
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "tern check %s: want exactly one FILE\n", args[0])
		return 2
	}
	switch args[0] {
	case "zone":
		if *origin == "" {
			fmt.Fprintln(stderr, "tern check zone: --origin is required")
			return 2
		}
		z, err := zone.Load(pos[0], *origin)
		printWarnings(stderr, zone.Warnings(z, err))
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: zone %s OK: %d records, %d names, serial %d%s\n",
			pos[0], zone.NameString(z.Origin), z.Records, z.Names, z.Serial, warned(z.Warnings))
		return 0
	case "config":
		cfg, err := config.Load(pos[0])
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		if err := server.CheckListen(cfg.Server.Listen); err != nil {
			fmt.Fprintf(stderr, "%s: server.listen: %v\n", pos[0], err)
			return 1
		}
		if _, err := cfg.Cookies.Secrets(); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		resolver := ""
		if r := cfg.Resolver; r != nil {
			if err := server.CheckListen(r.Listen); err != nil {
				fmt.Fprintf(stderr, "%s: resolver.listen: %v\n", pos[0], err)
				return 1
			}
			if _, _, err := resolverTrust(r); err != nil {
				fmt.Fprintf(stderr, "%s: %v\n", pos[0], err)
				return 1
			}
			resolver = fmt.Sprintf(", a resolver on %d addresses", len(r.Listen))
		}
		if err := zonedb.Check(cfg.Zones, func(origin string, ws []zone.Warning) {
			for _, w := range ws {
				fmt.Fprintf(stderr, "zone %s: %s\n", origin, warningText(w))
			}
		}); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: OK: %d zones, %d listen addresses%s\n", pos[0], len(cfg.Zones), len(cfg.Server.Listen), resolver)
		return 0
	default:
		fmt.Fprintf(stderr, "tern check: unknown target %q (want zone or config)\n", args[0])
		return 2
	}
}

// printWarnings writes warnings to w, one a line, before any error.
func printWarnings(w io.Writer, ws []zone.Warning) {
	for _, x := range ws {
		fmt.Fprintln(w, warningText(x))
	}
}

// warningText is a warning as compilers print one: "file:line: warning: what".
func warningText(w zone.Warning) string {
	if w.File == "" {
		return "warning: " + w.Msg
	}
	return fmt.Sprintf("%s:%d: warning: %s", w.File, w.Line, w.Msg)
}

// warned is the OK line's note that warnings were printed above it.
func warned(ws []zone.Warning) string {
	if len(ws) == 0 {
		return ""
	}
	return " (with the warnings above)"
}

// handler serves resp on the server's sockets: each UDP worker with a
// response cache of cacheSize responses (server.response-cache; 0: none),
// each worker counting its answers in a Shard of counters of its own
// (nil: none) and logging one in every of its answers on qlog (nil:
// none).
func handler(resp *auth.Responder, cacheSize int, counters *metrics.Set, qlog *sampledLog) server.Handler {
	return server.HandlerFunc(func(tcp bool) server.Worker {
		w := resp.NewWorker(tcp, cacheSize)
		w.CountIn(metrics.Attach(counters, w, metrics.Auth))
		if qlog != nil {
			w.LogQueries(qlog.log, qlog.every)
		}
		return w
	})
}

// tapped is h with every answer sent recorded into tap ([dnstap]; nil:
// h) as kind (dnstap.Auth: the authoritative listeners; dnstap.Client:
// the resolver's): put around DNS cookies and RRL, it records the
// answers as they amend them.
func tapped(tap *dnstap.Tap, kind dnstap.Kind, h server.Handler) server.Handler {
	if tap == nil {
		return h
	}
	return dnstap.Handler(h, tap, kind)
}

// openTap opens [dnstap]'s output; nil without the table. log gets the
// warning when the previous file cannot be kept.
func openTap(cfg *config.Config, log *slog.Logger) (*dnstap.Tap, error) {
	d := cfg.Dnstap
	if d == nil {
		return nil, nil
	}
	id := cfg.Identity.ID
	if id == "" {
		id, _ = os.Hostname()
	}
	return dnstap.Open(dnstap.Options{File: d.File, Versions: d.Versions, Log: log, Socket: d.Socket, Identity: id, Version: cfg.Identity.Version})
}

// sampledLog is server.query-log's: log one answer in every.
type sampledLog struct {
	log   *slog.Logger
	every int
}

// queryLog is the query log of server.query-log on log: one answer in
// every; nil for 0.
func queryLog(log *slog.Logger, every int) *sampledLog {
	if every <= 0 {
		return nil
	}
	return &sampledLog{log: log, every: every}
}

// cookieSecrets are the DNS cookie secrets of every listener.
type cookieSecrets struct {
	keys *cookie.Keys
	// mu makes a rotation's look at configured and its new secret one
	// step against a reload's set: without it, a tick that found no
	// configured secret could rotate just after a reload set one,
	// which then was only accepted, and this server's cookies made
	// under a random secret the rest of its anycast set refuses.
	mu sync.Mutex
	// configured: the secrets are [cookies] secret's or secret-file's,
	// not rotated (a reload sets them).
	configured bool
	// lifetime is secret-lifetime: how long the secrets a switch
	// between random and configured replaces stay accepted, as a
	// rotation's previous secret is.
	lifetime time.Duration
}

// newCookies returns the cookies of cfg's [cookies] table: its secrets
// (secret-file read), else a random one; nil when answer-cookie is off.
func newCookies(cfg *config.Config) (*cookieSecrets, error) {
	if !cfg.Cookies.AnswerCookie {
		return nil, nil
	}
	secrets, err := cfg.Cookies.Secrets()
	if err != nil {
		return nil, err
	}
	c := &cookieSecrets{keys: cookie.NewKeys(), lifetime: cfg.Cookies.SecretLifetime.Duration}
	if len(secrets) > 0 {
		c.keys.Set(secrets)
		c.configured = true
	}
	return c, nil
}

// handler is h with cookies answered on its workers (c nil: h).
func (c *cookieSecrets) handler(h server.Handler, payload int) server.Handler {
	if c == nil {
		return h
	}
	return cookie.Handler(h, c.keys, payload)
}

// rotate replaces the random secret every period (a cookie lives an
// hour at most, RFC 9018 §4.3, and the previous secret is accepted)
// until ctx ends; configured secrets are left alone.
func (c *cookieSecrets) rotate(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.tick()
		}
	}
}

// tick is rotate's: the random secret replaced, configured ones left
// alone.
func (c *cookieSecrets) tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.configured {
		c.keys.RotateRandom()
	}
}

// set applies a reloaded config's secrets (read already: secrets) at
// now: configured ones replace those in use; going back to none, a
// random one is made and rotated from then on. Across a switch between
// random and configured, every secret accepted until then stays
// accepted for a lifetime (cookie.Keys.Replace), so that no client's
// cookie gets a BADCOOKIE round trip; between configured secrets, only
// the list's and the random ones such a switch kept are accepted
// (docs/config.md).
func (c *cookieSecrets) set(secrets []cookie.Secret, now time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	until := uint32(now.Add(c.lifetime).Unix())
	switch {
	case len(secrets) > 0 && c.configured:
		c.keys.Set(secrets)
	case len(secrets) > 0:
		c.keys.Replace(secrets, until)
		c.configured = true
	case c.configured:
		c.keys.Replace([]cookie.Secret{cookie.RandomSecret()}, until)
		c.configured = false
	}
}

// limited is h with its UDP responses rate limited when the config has
// an [rrl] table (each UDP worker with accounts of its own), else h.
func limited(cfg *config.Config, h server.Handler) server.Handler {
	if cfg.RRL == nil {
		return h
	}
	return rrl.Handler(h, cfg.RRL.Limiter())
}

// zoneStates reports the zones served by resp for the metrics: each
// zone's serial, whether it serves data, and for a secondary of rl's its
// expiry. It runs on the metrics listener's goroutines.
func zoneStates(resp *auth.Responder, rl *reloader) func() []metrics.ZoneState {
	return func() []metrics.ZoneState {
		sec := rl.shown.Load()
		var out []metrics.ZoneState
		for _, z := range resp.Zones().Zones() {
			st := metrics.ZoneState{Origin: zone.NameString(z.Origin), Role: "primary", Serial: z.Serial, Serving: !z.Unavailable}
			if sec != nil {
				if t, ok := sec.Timers(st.Origin); ok {
					st.Role, st.Expires = "secondary", t.Expires
				}
			}
			out = append(out, st)
		}
		return out
	}
}

// serveGCPercent is the Go collector's GOGC for tern serve unless the
// environment sets GOGC: the heap may grow to 1.5 times its live data
// between collections rather than twice. A server's live heap is mostly
// its zones and caches, and what it allocates while serving is little
// (nothing per answered hit; a resolution's garbage was cut 2.5x:
// BenchmarkMixResolve 2527 -> 1001 bytes), so the extra cycles cost
// little CPU while the headroom is memory an operator pays for. Over the
// resolver benchmark's mix (bench/run.sh res-mix, QUICK, tern only, three
// interleaved pairs at 6b78d1e, load 5-9) the process grew by 519-544
// bytes per cached RRset at 50 against 632-648 at 100 (Unbound 632-652
// in the day's runs), CPU per answer 17.8/13.0/12.9 us against
// 17.6/17.5/13.1 (within the noise of a loaded machine).
const serveGCPercent = 50

// maxProcsCap bounds the Ps procsFloor asks for: each P is a
// scheduler's state, and a quarter of them run the collector's
// dedicated mark workers during a cycle.
const maxProcsCap = 128

// procsFloor is the GOMAXPROCS tern serve runs an authoritative-only
// server with: udpWorkers+1 when GOMAXPROCS (procs) is lower and the
// environment (env, $GOMAXPROCS) does not set it, else 0 (leave it),
// at most maxProcsCap.
//
// Why: a UDP worker waits for datagrams in a blocking recvmmsg on its
// own thread (internal/server's udpWorker), and while it waits it holds
// a P in the syscall state. With every P held so, the runtime's sysmon
// takes the P back after a tick or two, and each datagram's return
// from the system call wakes sysmon again: at moderate rates the
// context switches of that cost more than the answers. One P more than
// there are workers leaves one idle, and sysmon then leaves the waiting
// workers alone. Measured on one pinned CPU at 10,000 qps
// (bench/lowrate/bench-lowrate.sh at 0701c3e: dnsperf -Q, a small zone,
// CPU time of the process tree): 34.4-38.2 us of CPU per query with one
// P against 22.6-27.8 with two (NSD 21.8); by hand the same way,
// unpinned on two CPUs with the default two workers 19.6-25.6 with two
// Ps against 16.0-17.2 with three (NSD with two servers 21.2-26.0).
// Saturated (bench/run.sh, tern perf, one pinned worker, three
// interleaved pairs at load 1-3.5) UDP is level (CPU per answer: small
// zone 2.14/2.13/1.75 against 2.19/2.09/2.10 us, root referrals
// 2.24/2.31/2.21 against 2.32/2.23/2.29, NXDOMAIN with DO 2.46/2.59/2.42
// against 2.44/2.47/2.47) and TCP 8-15% dearer (1.56/1.57/1.63 against
// 1.44/1.42/1.42: a connection's goroutine made ready wakes a second
// thread for the spare P), the price of the moderate rates most servers
// run at. On a CPU shared with a busy process the spare P costs CPU
// (26.6-26.8 us per query at 10,000 qps with one P, 29.8-31.6 with two)
// and halves the latency (0.72-0.82 ms, 0.32-0.41). A resolver is left
// as it is: its resolving goroutines would take the
// spare P and share the CPU with the worker as two threads (its mix
// lost 3-8% with two Ps on one CPU, docs/bench/resolver-full-2026-12-05.md).
func procsFloor(udpWorkers, procs int, resolver bool, env string) int {
	if env != "" || resolver || udpWorkers <= 0 {
		return 0
	}
	if n := min(udpWorkers+1, maxProcsCap); procs < n {
		return n
	}
	return 0
}

// setMaxProcs raises GOMAXPROCS to procsFloor's for an authoritative
// server with udpWorkers UDP workers. Setting it ends the runtime's own
// updates of GOMAXPROCS when the process's CPU limit changes (Go 1.25):
// a server whose limit changes while it runs is restarted, as it would
// be for its worker count.
func setMaxProcs(udpWorkers int, resolver bool) {
	if n := procsFloor(udpWorkers, runtime.GOMAXPROCS(0), resolver, os.Getenv("GOMAXPROCS")); n > 0 {
		runtime.GOMAXPROCS(n)
	}
}

// setGCPercent sets serveGCPercent, unless GOGC is set: an operator's
// choice (GOGC=100, the Go default, trades memory for CPU the other way).
func setGCPercent() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
}
