package main

import (
	"bytes"
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/server"
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

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tern serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("c", "", "config file (TOML)")
	var listens, zoneFlags multiFlag
	fs.Var(&listens, "listen", "address to listen on, host:port (repeatable)")
	fs.Var(&zoneFlags, "zone", "zone to serve, ORIGIN=FILE (repeatable)")
	workers := fs.Int("workers", -1, "UDP workers per address (0: one per CPU)")
	logLevel := fs.String("log-level", "", "debug, info, warn or error")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (for tuning)")
	poller := fs.Bool("udp-poller", false, "serve UDP from netpoller goroutines instead of blocking threads (for comparison)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tern serve: unexpected argument %q\n", fs.Arg(0))
		return 2
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
	cfg := config.Default()
	if *cfgPath != "" {
		var err error
		if cfg, err = config.Load(*cfgPath); err != nil {
			fmt.Fprintf(stderr, "tern serve: %v\n", err)
			return 1
		}
	}
	if len(listens) > 0 {
		cfg.Server.Listen = listens
	}
	for _, z := range zoneFlags {
		origin, file, ok := strings.Cut(z, "=")
		if !ok || origin == "" || file == "" {
			fmt.Fprintf(stderr, "tern serve: --zone %q: want ORIGIN=FILE\n", z)
			return 2
		}
		cfg.Zones = append(cfg.Zones, config.Zone{Origin: origin, File: file})
	}
	if *workers >= 0 {
		cfg.Server.Workers = *workers
	}
	if *logLevel != "" {
		cfg.Server.LogLevel = *logLevel
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "tern serve: %v\n", err)
		return 1
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.Server.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	nsid, err := cfg.Identity.NSIDBytes()
	if err != nil {
		fmt.Fprintf(stderr, "tern serve: %v\n", err)
		return 1
	}
	resp := auth.New(nil, auth.Options{
		UDPPayload: cfg.Server.UDPPayload,
		NSID:       nsid,
		Chaos:      cfg.ChaosEnabled(),
		ID:         cfg.Identity.ID,
		Version:    cfg.Identity.Version,
	})
	srv := server.New(server.Config{
		Listen:            cfg.Server.Listen,
		Workers:           cfg.Server.Workers,
		TCPIdleTimeout:    cfg.Server.TCPIdleTimeout.Duration,
		TCPMaxConnections: cfg.Server.TCPMaxConnections,
		TCPIOTimeout:      cfg.Server.TCPIOTimeout.Duration,
		UDPPoller:         *poller,
		// RFC 9715 R3: answers of at most 1400 bytes fit whole.
		DontFragment: cfg.Server.UDPPayload <= 1400,
		Logger:       log,
	}, handler(resp, cfg.Server.ResponseCache))
	demo := len(cfg.Zones) == 0
	var mgr *zonedb.Manager
	if demo {
		z, err := zone.Read(bytes.NewReader(demoZone), "demo.zone", demoOrigin)
		if err != nil {
			fmt.Fprintf(stderr, "tern serve: %v\n", err)
			return 1
		}
		resp.Publish(zone.NewSet(z))
	} else {
		mgr = zonedb.New(cfg.Zones, resp.Publish, log, nil)
		// Loading makes garbage fast and keeps little of it: collecting
		// less often while it runs saves a third of a large zone's load
		// time; the memory goes back right after (FreeOSMemory below).
		gc := debug.SetGCPercent(400)
		serving, err := mgr.Load(ctx)
		debug.SetGCPercent(gc)
		if serving == 0 {
			// Each failed zone is logged; start anyway unless nothing
			// at all can be served.
			fmt.Fprintf(stderr, "tern serve: no zone could be loaded: %v\n", err)
			return 1
		}
		go mgr.Run(ctx)
	}
	// Loading leaves garbage several times the size of the compiled
	// zones (parsed records); hand it back before serving.
	debug.FreeOSMemory()
	set := resp.Zones()
	if err := srv.Start(ctx); err != nil {
		fmt.Fprintf(stderr, "tern serve: %v\n", err)
		return 1
	}
	names := make([]string, 0, set.Len())
	for _, z := range set.Zones() {
		if !z.Unavailable {
			names = append(names, zone.NameString(z.Origin))
		}
	}
	addrs := srv.Addrs()
	fmt.Fprintf(stdout, "tern: serving %s on %s (UDP and TCP); try: %s\n",
		strings.Join(names, ", "), strings.Join(addrs, ", "), digHint(addrs[0], demo, names[0]))

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			srv.Close()
			return 0
		case <-hup:
			if mgr == nil {
				continue
			}
			// Each zone that fails keeps its previous version (logged
			// per zone); the others are swapped in.
			start := time.Now()
			serving, err := mgr.Reload(ctx, cfg.Zones)
			debug.FreeOSMemory()
			log.Info("reloaded", "zones", len(cfg.Zones), "serving", serving, "failed", countErrs(err), "took", time.Since(start))
		}
	}
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
func digHint(addr string, demo bool, origin string) string {
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
	return fmt.Sprintf("dig @%s -p %s %s A", host, port, name)
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
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return 2
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
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: zone %s OK: %d records, %d names, serial %d\n",
			pos[0], zone.NameString(z.Origin), z.Records, z.Names, z.Serial)
		return 0
	case "config":
		cfg, err := config.Load(pos[0])
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		if err := zonedb.Check(cfg.Zones); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: OK: %d zones, %d listen addresses\n", pos[0], len(cfg.Zones), len(cfg.Server.Listen))
		return 0
	default:
		fmt.Fprintf(stderr, "tern check: unknown target %q (want zone or config)\n", args[0])
		return 2
	}
}

// parseInterspersed parses flags that may come before or after the
// positional arguments, which the flag package alone does not allow.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// handler serves resp on the server's sockets: each UDP worker with a
// response cache of cacheSize responses (server.response-cache; 0: none).
func handler(resp *auth.Responder, cacheSize int) server.Handler {
	return server.HandlerFunc(func(tcp bool) server.Worker {
		return resp.NewWorker(tcp, cacheSize)
	})
}
