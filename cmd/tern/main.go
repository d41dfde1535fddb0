// Command tern is the Tern DNS server and its tools: one binary with
// subcommands (serve, check, zone, resolve, ctl, perf, version).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: tern <command> [arguments]

commands:
  serve   serve zones (with no arguments: an embedded demo zone on 127.0.0.1:5300)
  check   check a zone file or a config file: tern check zone FILE --origin NAME | tern check config FILE
  zone    zone tools: tern zone sign FILE --origin NAME --key-dir DIR [--nsec3] | keys | ds
  resolve one iterative resolution from the root: tern resolve NAME [TYPE] [--trace] [--root-hints FILE]
  ctl     control a running server: tern ctl [-c CONFIG | -s SOCKET] [--json] status | zones | reload [ZONE] | notify ZONE | refresh ZONE
  perf    load generator: tern perf -s ADDR -d QUERYFILE [options]
  version print the version (also: tern --version)

Run 'tern <command> -h' for a command's options.
`

func main() {
	os.Exit(runSignalled(os.Args[1:]))
}

// runSignalled is run with a context that SIGTERM and SIGINT end: tern
// serve then shuts down gracefully and exits 0 (shutdown in serve.go).
func runSignalled(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, os.Stdout, os.Stderr)
}

// run dispatches to a subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], stdout, stderr)
	case "check":
		return runCheck(ctx, args[1:], stdout, stderr)
	case "zone":
		return runZone(ctx, args[1:], stdout, stderr)
	case "resolve":
		return runResolve(ctx, args[1:], stdout, stderr)
	case "ctl":
		return runCtl(ctx, args[1:], stdout, stderr)
	case "perf":
		return runPerf(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintf(stdout, "tern %s\n", version())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "tern: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
