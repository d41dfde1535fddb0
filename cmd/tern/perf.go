package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/tern-dns/tern/internal/perf"
)

// ednsOptFlag collects repeated -E code:hexvalue options.
type ednsOptFlag []perf.EDNSOption

func (e *ednsOptFlag) String() string { return fmt.Sprint(len(*e), " options") }

func (e *ednsOptFlag) Set(s string) error {
	o, err := perf.ParseEDNSOption(s)
	if err != nil {
		return err
	}
	*e = append(*e, o)
	return nil
}

// runPerf implements 'tern perf', a dnsperf-compatible load generator.
func runPerf(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tern perf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("s", "127.0.0.1", "server `address` (IPv4 or IPv6)")
	port := fs.Uint("p", 53, "server `port`")
	file := fs.String("d", "-", "query `file` (\"name TYPE\" per line); - for stdin")
	limit := fs.Float64("l", 0, "stop sending after this many `seconds` (0: no limit)")
	runs := fs.Int("n", 0, "go through the query file at most `N` times (default 1 without -l)")
	outstanding := fs.Int("q", 256, "maximum outstanding `queries`")
	clients := fs.Int("c", 4, "number of `sockets` (TCP: connections)")
	do := fs.Bool("D", false, "set the DNSSEC OK bit (implies EDNS)")
	edns := fs.Bool("e", true, "send EDNS0 (-e=false to disable)")
	ednsSize := fs.Uint("edns-size", 4096, "EDNS UDP payload `size` advertised")
	sockBuf := fs.Int("b", 0, "socket send/receive buffer size in `KB`, as dnsperf (0: kernel default)")
	var opts ednsOptFlag
	fs.Var(&opts, "E", "add EDNS option `code:hexvalue` (repeatable)")
	timeout := fs.Float64("t", 5, "query timeout in `seconds`; unanswered queries count as lost")
	qps := fs.Float64("Q", 0, "maximum queries per second (0: unlimited)")
	tcp := fs.Bool("T", false, "use TCP (pipelined, one query stream per connection)")
	jsonOut := fs.Bool("j", false, "print a JSON summary instead of the text report")
	fs.BoolVar(jsonOut, "json", false, "same as -j")
	engine := fs.String("engine", perf.EngineMmsg, "UDP engine: mmsg (raw sendmmsg/recvmmsg loop) or xnet (x/net batch I/O)")
	threads := fs.Int("threads", 1, "UDP event loops (mmsg engine); sockets are split among them")
	batch := fs.Int("batch", 64, "datagrams per sendmmsg/recvmmsg call")
	spin := fs.Bool("spin", false, "busy-poll instead of sleeping when idle (mmsg engine)")
	gso := fs.Bool("gso", false, "coalesce equal-size queries into UDP GSO super-datagrams (mmsg engine, Linux 4.18+)")
	progress := fs.String("progress", "auto", "progress line on stderr: auto (if a terminal), on, off")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tern perf: unexpected arguments %q\n", fs.Args())
		return 2
	}
	addr, err := netip.ParseAddr(strings.Trim(*server, "[]"))
	if err != nil {
		fmt.Fprintf(stderr, "tern perf: -s: %v (an IP address is required)\n", err)
		return 2
	}
	if *port == 0 || *port > 65535 {
		fmt.Fprintf(stderr, "tern perf: -p %d: port out of range\n", *port)
		return 2
	}
	if *ednsSize > 65535 {
		fmt.Fprintf(stderr, "tern perf: -edns-size %d: out of range\n", *ednsSize)
		return 2
	}

	var in io.Reader = os.Stdin
	name := "stdin"
	if *file != "-" && *file != "" {
		f, err := os.Open(*file)
		if err != nil {
			fmt.Fprintf(stderr, "tern perf: %v\n", err)
			return 1
		}
		defer f.Close()
		in, name = f, *file
	}
	queries, err := perf.ParseQueryFile(in)
	if err != nil {
		fmt.Fprintf(stderr, "tern perf: %s: %v\n", name, err)
		return 1
	}
	if len(queries) == 0 {
		fmt.Fprintf(stderr, "tern perf: %s: no queries\n", name)
		return 1
	}

	cfg := perf.Config{
		Server:  netip.AddrPortFrom(addr, uint16(*port)),
		Queries: queries,
		Encode: perf.EncodeOptions{
			EDNS:    *edns,
			UDPSize: uint16(*ednsSize),
			DO:      *do,
			Options: opts,
		},
		Duration:       time.Duration(*limit * float64(time.Second)),
		Runs:           *runs,
		MaxOutstanding: *outstanding,
		Clients:        *clients,
		Timeout:        time.Duration(*timeout * float64(time.Second)),
		MaxQPS:         *qps,
		TCP:            *tcp,
		SockBuf:        *sockBuf * 1024,
		Batch:          *batch,
		Engine:         *engine,
		Threads:        *threads,
		Spin:           *spin,
		GSO:            *gso,
	}
	showProgress := *progress == "on" || *progress == "auto" && isTerminal(stderr)
	if showProgress {
		cfg.Progress = func(s perf.Snapshot) {
			fmt.Fprintf(stderr, "\r[Progress] %4.0fs  sent %d  completed %d  lost %d  (%.0f qps avg)\x1b[K",
				s.Elapsed.Seconds(), s.Sent, s.Completed, s.Lost, float64(s.Completed)/s.Elapsed.Seconds())
		}
	}
	if !*jsonOut {
		fmt.Fprintf(stdout, "DNS performance test (tern perf)\n\n")
		fmt.Fprintf(stdout, "[Status] Command line: tern perf %s\n", strings.Join(args, " "))
		fmt.Fprintf(stdout, "[Status] Sending queries (to %s)\n", cfg.Server)
		fmt.Fprintf(stdout, "[Status] Started at: %s\n", time.Now().Format(time.ANSIC))
		if cfg.Duration > 0 {
			fmt.Fprintf(stdout, "[Status] Stopping after %.6f seconds\n", cfg.Duration.Seconds())
		}
	}
	res, err := perf.Run(ctx, cfg)
	if showProgress {
		fmt.Fprint(stderr, "\r\x1b[K")
	}
	if res == nil {
		fmt.Fprintf(stderr, "tern perf: %v\n", err)
		return 1
	}
	code := 0
	if err != nil {
		fmt.Fprintf(stderr, "tern perf: run stopped: %v\n", err)
		code = 1
	}
	if *jsonOut {
		if err := res.WriteJSON(stdout); err != nil {
			fmt.Fprintf(stderr, "tern perf: %v\n", err)
			return 1
		}
		return code
	}
	why := "end of file"
	switch {
	case err != nil:
		why = "error"
	case res.Interrupted:
		why = "interruption"
	case cfg.Duration > 0 && res.RunTime >= cfg.Duration:
		why = "time limit"
	}
	fmt.Fprintf(stdout, "[Status] Testing complete (%s)\n\n", why)
	if err := res.WriteText(stdout); err != nil {
		fmt.Fprintf(stderr, "tern perf: %v\n", err)
		return 1
	}
	return code
}

// isTerminal reports whether w is a terminal, so the progress line (which
// rewrites itself with \r) is not written into logs or pipes.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && perf.IsTerminal(f.Fd())
}
