package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/control"
	"github.com/tern-dns/tern/internal/metrics"
	"github.com/tern-dns/tern/internal/zone"
	"github.com/tern-dns/tern/internal/zonedb"
)

// controlState is what the control commands read and act on, owned by
// serve's main loop.
type controlState struct {
	rl       *reloader
	zones    func() *zone.Set
	started  time.Time
	resolver bool
	// demo: the server started serving the embedded demo zone (rl.mgr
	// stays nil until a reload finds zones).
	demo bool
	// counters are the server's counters, read by stats (nil: counting
	// is off).
	counters *metrics.Set
}

// statsResult is the result of "stats": the counters summed now, and
// the server's uptime.
type statsResult struct {
	Started time.Time `json:"started"`
	// Uptime is in whole seconds.
	Uptime int64 `json:"uptime"`
	metrics.Snapshot
}

// newControl returns the control server of serve: each command is run by
// the main loop, which receives it on loop, so that it never runs beside
// a SIGHUP's reload.
func newControl(ctx context.Context, path string, loop chan<- func(), st *controlState, log *slog.Logger) *control.Server {
	cs := control.New(path, log)
	inLoop := func(h control.Handler) control.Handler {
		return func(ctx context.Context, req control.Request) (any, error) {
			var result any
			var err error
			done := make(chan struct{})
			select {
			case loop <- func() { result, err = h(ctx, req); close(done) }:
			case <-ctx.Done():
				return nil, errors.New("the server is stopping")
			}
			<-done
			return result, err
		}
	}
	cs.Handle(control.CommandStatus, inLoop(func(context.Context, control.Request) (any, error) {
		return control.Status{
			Version:  version(),
			Started:  st.started.UTC().Truncate(time.Second),
			Uptime:   int64(time.Since(st.started) / time.Second),
			Zones:    len(st.zoneList()),
			Resolver: st.resolver,
		}, nil
	}))
	cs.Handle(control.CommandZones, inLoop(func(context.Context, control.Request) (any, error) {
		return st.zoneList(), nil
	}))
	reloadAll := inLoop(func(ctx context.Context, req control.Request) (any, error) {
		err := st.rl.reload(ctx)
		return st.zoneList(), err
	})
	// manager is the zone manager as the main loop has it now (nil:
	// no zones), read there.
	manager := inLoop(func(context.Context, control.Request) (any, error) { return st.rl.mgr, nil })
	cs.Handle(control.CommandReload, func(ctx context.Context, req control.Request) (any, error) {
		if req.Zone == "" {
			return reloadAll(ctx, req)
		}
		// One zone's reload runs as that zone's event, outside the main
		// loop: a large or slow zone file delays neither SIGHUP's
		// reloads nor other commands (zonedb runs one event at a time
		// per zone, concurrently across zones).
		m, err := manager(ctx, req)
		if err != nil {
			return nil, err
		}
		mgr, _ := m.(*zonedb.Manager)
		if mgr == nil {
			return nil, fmt.Errorf("zone %s: no zones are configured (serving %s)", req.Zone, st.servingWhat())
		}
		s, err := mgr.ReloadZone(ctx, req.Zone)
		if errors.Is(err, zonedb.ErrNoZone) {
			return nil, err
		}
		return []control.Zone{st.controlZone(s)}, err
	})
	// Stats reads the counters' atomics: never queued behind the main
	// loop.
	cs.Handle(control.CommandStats, func(context.Context, control.Request) (any, error) {
		if st.counters == nil {
			return nil, errors.New("the server counts nothing (no metrics listener, no control socket)")
		}
		return statsResult{Started: st.started.UTC().Truncate(time.Second), Uptime: int64(time.Since(st.started) / time.Second), Snapshot: st.counters.Snapshot()}, nil
	})
	cs.Handle(control.CommandNotify, inLoop(func(_ context.Context, req control.Request) (any, error) {
		if req.Zone == "" {
			return nil, errors.New("notify: which zone? (notify ZONE)")
		}
		origin := dns.CanonicalName(dns.Fqdn(req.Zone))
		for _, z := range st.zones().Zones() {
			if zone.NameString(z.Origin) == origin {
				to, err := st.rl.notify.send(origin, z)
				if err != nil {
					return nil, err
				}
				return control.ZoneResult{Zone: origin, Result: control.ResultSent, To: to}, nil
			}
		}
		return nil, fmt.Errorf("zone %s: not served", origin)
	}))
	cs.Handle(control.CommandRefresh, inLoop(func(_ context.Context, req control.Request) (any, error) {
		origin := dns.CanonicalName(dns.Fqdn(req.Zone))
		if st.rl.secondaries == nil || !st.rl.secondaries.Refresh(origin) {
			return nil, fmt.Errorf("zone %s: not a secondary zone", origin)
		}
		return control.ZoneResult{Zone: origin, Result: control.ResultStarted}, nil
	}))
	cs.Handle(control.CommandRetransfer, inLoop(func(_ context.Context, req control.Request) (any, error) {
		origin := dns.CanonicalName(dns.Fqdn(req.Zone))
		if st.rl.secondaries == nil || !st.rl.secondaries.Retransfer(origin) {
			return nil, fmt.Errorf("zone %s: not a secondary zone", origin)
		}
		return control.ZoneResult{Zone: origin, Result: control.ResultStarted}, nil
	}))
	cs.Handle(control.CommandZoneAdd, inLoop(func(ctx context.Context, req control.Request) (any, error) {
		if req.Settings == nil {
			return nil, fmt.Errorf("zone-add %s: no settings (--file or --primary)", req.Zone)
		}
		zc := config.Zone{Origin: req.Zone, File: req.Settings.File, Primary: req.Settings.Primary, ACL: req.Settings.ACL, Notify: req.Settings.Notify}
		if req.Settings.Catalog != "" {
			zc.Catalog = dns.CanonicalName(dns.Fqdn(req.Settings.Catalog))
		}
		if err := st.rl.addZone(ctx, zc); err != nil {
			return nil, err
		}
		origin := dns.CanonicalName(dns.Fqdn(req.Zone))
		if s, ok := st.rl.mgr.State(origin); ok {
			return []control.Zone{st.controlZone(s)}, nil
		}
		return nil, fmt.Errorf("zone %s: removed while added", origin)
	}))
	cs.Handle(control.CommandZoneRemove, inLoop(func(_ context.Context, req control.Request) (any, error) {
		if err := st.rl.removeZone(req.Zone); err != nil {
			return nil, err
		}
		return control.ZoneResult{Zone: dns.CanonicalName(dns.Fqdn(req.Zone)), Result: control.ResultRemoved}, nil
	}))
	return cs
}

// servingWhat says what a server without a zone manager serves.
func (st *controlState) servingWhat() string {
	if st.demo {
		return "the demo zone"
	}
	return "no zones: a resolver only"
}

// zoneList is every zone served, as the control commands show them.
func (st *controlState) zoneList() []control.Zone {
	out := []control.Zone{}
	if st.rl.mgr != nil {
		for _, s := range st.rl.mgr.States() {
			out = append(out, st.controlZone(s))
		}
		return out
	}
	// The demo zone (or none, with a resolver alone).
	for _, z := range st.zones().Zones() {
		out = append(out, control.Zone{Origin: zone.NameString(z.Origin), Role: control.RolePrimary, Serial: z.Serial, Serving: true,
			State: control.ZoneLoaded, Loaded: st.started.UTC().Truncate(time.Second), File: "(embedded demo zone)"})
	}
	return out
}

// controlZone is a zone manager's state of a zone as tern ctl shows it,
// with its refresh times when it is a secondary.
func (st *controlState) controlZone(s zonedb.State) control.Zone {
	c := control.Zone{Origin: s.Origin, Role: control.RolePrimary, File: s.File, State: control.ZoneLoaded}
	if st.rl.secondaries != nil {
		if t, ok := st.rl.secondaries.Timers(s.Origin); ok {
			c.Role = control.RoleSecondary
			if !t.LastRefresh.IsZero() {
				c.LastRefresh = t.LastRefresh.UTC().Truncate(time.Second)
			}
			if !t.NextRefresh.IsZero() {
				c.NextRefresh = t.NextRefresh.UTC().Truncate(time.Second)
			}
			if !t.Expires.IsZero() {
				c.Expires = t.Expires.UTC().Truncate(time.Second)
			}
		}
	}
	if !s.Loaded.IsZero() {
		c.Loaded = s.Loaded.UTC().Truncate(time.Second)
	}
	if s.Zone != nil && !s.Zone.Unavailable {
		c.Serial, c.Serving = s.Zone.Serial, true
	}
	if s.Err != nil {
		c.State, c.Error = control.ZoneFailed, s.Err.Error()
	}
	if s.Loading {
		c.State = control.ZoneLoading
	}
	return c
}

const ctlUsage = `usage: tern ctl [-c CONFIG | -s SOCKET] [--json] COMMAND

commands:
  status         version, uptime, zones, resolver on or off
  zones          each zone: origin, role, serial, state, last load, a secondary's
                 next refresh and expiry, file
  reload [ZONE]  re-read the config and every zone, as SIGHUP does; or one zone's file
  notify ZONE    send the zone's NOTIFYs now
  refresh ZONE   refresh a secondary zone now (SOA query; transfer when newer)
  retransfer ZONE  transfer a secondary zone whole now (AXFR), whatever the serials
  zone-add ZONE --file F | --primary REMOTE [--acl ACL] [--notify REMOTE] [--catalog CATALOG]
                 serve a zone the config does not name, now and after restarts
                 (names of the config's [[remote]] and [[acl]] tables; repeatable)
  zone-remove ZONE stop serving a zone (a configured one until the next reload)
  stats          the counters (those of the Prometheus metrics): queries by
                 server, transport, RCODE and QTYPE, response sizes, drops, the
                 resolver's cache and validation, zone events, queries per zone

The socket is server.control of CONFIG (-c), else its default.
`

// runCtl implements 'tern ctl': one command to a running server's
// control socket.
func runCtl(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tern ctl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, ctlUsage); fs.PrintDefaults() }
	cfgPath := fs.String("c", "", "config file: the socket is its server.control")
	socket := fs.String("s", "", "control socket path")
	asJSON := fs.Bool("json", false, "print the result as JSON, for scripts")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long (a reload of large zones takes a while)")
	var settings control.ZoneSettings
	fs.StringVar(&settings.File, "file", "", "zone-add: the zone file")
	fs.Var((*multiFlag)(&settings.Primary), "primary", "zone-add: a secondary zone's primary, a [[remote]] (repeatable)")
	fs.Var((*multiFlag)(&settings.ACL), "acl", "zone-add: an [[acl]] of the zone (repeatable)")
	fs.Var((*multiFlag)(&settings.Notify), "notify", "zone-add: a [[remote]] to NOTIFY (repeatable)")
	fs.StringVar(&settings.Catalog, "catalog", "", "zone-add: the catalog zone produced here that lists the zone (RFC 9432)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if *cfgPath != "" && *socket != "" {
		fmt.Fprintln(stderr, "tern ctl: -c and -s are exclusive")
		return 2
	}
	if len(pos) == 0 {
		fs.Usage()
		return 2
	}
	req := control.Request{Command: pos[0]}
	want := 0
	switch req.Command {
	case control.CommandStatus, control.CommandZones, control.CommandStats:
	case control.CommandReload:
		want = -1 // optional
	case control.CommandNotify, control.CommandRefresh, control.CommandRetransfer, control.CommandZoneRemove:
		want = 1
	case control.CommandZoneAdd:
		want = 1
		if settings.File != "" {
			// The server resolves nothing against its own directory.
			abs, err := filepath.Abs(settings.File)
			if err != nil {
				fmt.Fprintf(stderr, "tern ctl: %v\n", err)
				return 1
			}
			settings.File = abs
		}
		req.Settings = &settings
	default:
		fmt.Fprintf(stderr, "tern ctl: unknown command %q\n\n%s", req.Command, ctlUsage)
		return 2
	}
	switch n := len(pos) - 1; {
	case want == 1 && n != 1:
		fmt.Fprintf(stderr, "tern ctl %s: want one ZONE\n", req.Command)
		return 2
	case want == 0 && n != 0, want == -1 && n > 1:
		fmt.Fprintf(stderr, "tern ctl %s: unexpected argument %q\n", req.Command, pos[len(pos)-1])
		return 2
	case n == 1:
		req.Zone = pos[1]
	}
	// From here on a failure is the command's, not its usage's: with
	// --json it is a JSON object on stdout, for the script that asked.
	fail := func(err error) int {
		if *asJSON {
			printJSON(stdout, control.Response{Error: err.Error()})
		} else {
			fmt.Fprintf(stderr, "tern ctl: %v\n", err)
		}
		return 1
	}
	path := *socket
	if path == "" {
		cfg := config.Default()
		if *cfgPath != "" {
			if cfg, err = config.Load(*cfgPath); err != nil {
				return fail(err)
			}
		}
		if path = cfg.Server.Control; path == "" {
			return fail(fmt.Errorf("%s: server.control is \"\": the server has no control socket", *cfgPath))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	resp, err := control.Call(ctx, path, req)
	if err != nil {
		return fail(err)
	}
	if *asJSON {
		// Success: the result alone. Failure: the response, its error
		// and whatever result came with it (a reload's zones, the
		// failed one among them).
		switch {
		case resp.Error != "":
			printJSON(stdout, resp)
			return 1
		case len(resp.Result) == 0:
			fmt.Fprintln(stdout, "{}")
		default:
			printJSON(stdout, resp.Result)
		}
		return 0
	}
	if err := printResult(stdout, req, resp.Result); err != nil {
		fmt.Fprintf(stderr, "tern ctl: %s: %v\n", req.Command, err)
		return 1
	}
	if resp.Error != "" {
		for _, line := range strings.Split(resp.Error, "\n") {
			fmt.Fprintf(stderr, "tern ctl: %s: %s\n", req.Command, line)
		}
		return 1
	}
	return 0
}

// printJSON writes v to w as indented JSON, a line at its end.
func printJSON(w io.Writer, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		// Only a result the server sent that is not JSON: say so as
		// JSON.
		b, _ = json.Marshal(control.Response{Error: "the server's result is not JSON: " + err.Error()})
	}
	fmt.Fprintln(w, string(b))
}

// printResult writes a command's result for a person to read.
func printResult(w io.Writer, req control.Request, result json.RawMessage) error {
	if len(result) == 0 {
		return nil
	}
	switch req.Command {
	case control.CommandStatus:
		var s control.Status
		if err := json.Unmarshal(result, &s); err != nil {
			return err
		}
		resolver := "off"
		if s.Resolver {
			resolver = "on"
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "version:\t%s\n", s.Version)
		fmt.Fprintf(tw, "started:\t%s (up %s)\n", s.Started.Format(time.RFC3339), time.Duration(s.Uptime)*time.Second)
		fmt.Fprintf(tw, "zones:\t%d\n", s.Zones)
		fmt.Fprintf(tw, "resolver:\t%s\n", resolver)
		return tw.Flush()
	case control.CommandZones, control.CommandReload, control.CommandZoneAdd:
		var zs []control.Zone
		if err := json.Unmarshal(result, &zs); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ZONE\tROLE\tSERIAL\tSTATE\tLOADED\tREFRESH\tEXPIRES\tFILE")
		when := func(t time.Time) string {
			if t.IsZero() {
				return "-"
			}
			return t.Format(time.RFC3339)
		}
		for _, z := range zs {
			serial := "-"
			if z.Serving {
				serial = fmt.Sprint(z.Serial)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", z.Origin, z.Role, serial, z.State, when(z.Loaded), when(z.NextRefresh), when(z.Expires), z.File)
		}
		return tw.Flush()
	case control.CommandStats:
		var s statsResult
		if err := json.Unmarshal(result, &s); err != nil {
			return err
		}
		return printStats(w, &s)
	case control.CommandNotify, control.CommandZoneRemove, control.CommandRefresh, control.CommandRetransfer:
		var r control.ZoneResult
		if err := json.Unmarshal(result, &r); err != nil {
			return err
		}
		switch r.Result {
		case control.ResultSent:
			fmt.Fprintf(w, "%s %s: sending to %s\n", req.Command, r.Zone, strings.Join(r.To, ", "))
		case control.ResultStarted:
			fmt.Fprintf(w, "%s %s: started (the log says how it ends)\n", req.Command, r.Zone)
		default:
			fmt.Fprintf(w, "%s %s: %s\n", req.Command, r.Zone, r.Result)
		}
	}
	return nil
}

// printStats writes the counters for a person, as knotc stats and
// nsd-control stats do: one line per group, counts by name (those not
// zero), then the zones that were queried or whose last event failed.
func printStats(w io.Writer, s *statsResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	counts := func(m map[string]uint64, all bool) string {
		keys := make([]string, 0, len(m))
		for k, v := range m {
			if v != 0 || all {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			return "none"
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s %d", k, m[k])
		}
		return strings.Join(parts, ", ")
	}
	fmt.Fprintf(tw, "uptime:\t%s (since %s)\n", time.Duration(s.Uptime)*time.Second, s.Started.Format(time.RFC3339))
	fmt.Fprintf(tw, "queries:\t%s\n", counts(s.Queries, true))
	fmt.Fprintf(tw, "by transport:\t%s\n", counts(s.Transports, false))
	fmt.Fprintf(tw, "by rcode:\t%s\n", counts(s.Rcodes, false))
	fmt.Fprintf(tw, "by qtype:\t%s\n", counts(s.Qtypes, false))
	fmt.Fprintf(tw, "dropped:\t%s\n", counts(s.Dropped, true))
	fmt.Fprintf(tw, "cookies:\t%s\n", counts(s.Cookies, false))
	for _, z := range s.Sizes {
		var b []string
		for _, k := range z.Buckets {
			if k.Le == 0 {
				b = append(b, fmt.Sprintf("larger %d", k.Count))
			} else {
				b = append(b, fmt.Sprintf("<=%d %d", k.Le, k.Count))
			}
		}
		fmt.Fprintf(tw, "sizes %s %s:\t%d responses, %d bytes (mean %d): %s\n", z.Server, z.Transport, z.Count, z.Bytes, z.Bytes/max(z.Count, 1), strings.Join(b, ", "))
	}
	fmt.Fprintf(tw, "resolver cache:\thits %d, misses %d\n", s.CacheHits, s.CacheMisses)
	if c := s.ResolverCache; c != nil {
		fmt.Fprintf(tw, "resolver cache size:\trrsets %d, negative %d, bytes %d; responses %d, response bytes %d\n", c.RRsets, c.Negative, c.Bytes, c.Responses, c.ResponseBytes)
	}
	fmt.Fprintf(tw, "resolutions:\t%d (%s), upstream timeouts %d\n", s.Resolutions, counts(s.Validation, false), s.UpstreamTimeouts)
	events := make([]string, 0, len(s.ZoneEvents))
	for _, e := range []string{"load", "refresh", "transfer"} {
		r := s.ZoneEvents[e]
		events = append(events, fmt.Sprintf("%s %d ok %d failed", e, r["ok"], r["failed"]))
	}
	fmt.Fprintf(tw, "zone events:\t%s\n", strings.Join(events, ", "))
	if err := tw.Flush(); err != nil {
		return err
	}
	var shown []metrics.ZoneStatus
	for _, z := range s.Zones {
		if z.Queries != 0 || z.LastError != "" {
			shown = append(shown, z)
		}
	}
	fmt.Fprintf(w, "zones: %d served, %d queried or failed\n", len(s.Zones), len(shown))
	if len(shown) == 0 {
		return nil
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ZONE\tROLE\tSERIAL\tQUERIES\tLAST EVENT")
	for _, z := range shown {
		last := "-"
		if z.LastEvent != "" {
			last = z.LastEvent + " " + z.LastAt.UTC().Format(time.RFC3339)
			if z.LastError != "" {
				last += " failed: " + z.LastError
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", z.Origin, z.Role, z.Serial, z.Queries, last)
	}
	return tw.Flush()
}
