package difftest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/peer"
)

// ternBinaryEnv names the environment variable that carries the path of
// the tern binary from TestMain to the tests (or from the user, to test a
// prebuilt binary). An environment variable rather than a package variable
// keeps the package free of mutable globals.
const ternBinaryEnv = "TERN_DIFFTEST_BINARY"

// buildErrorEnv carries TestMain's build failure to the tests needing tern.
const buildErrorEnv = "TERN_DIFFTEST_BUILD_ERROR"

// requirePeersEnv, when "1", turns a missing knotd, nsd, dig or kdig from
// a skip into a failure; `make test` sets it.
const requirePeersEnv = "TERN_REQUIRE_PEERS"

// TestMain builds the tern binary once into a temporary directory.
func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if os.Getenv(ternBinaryEnv) == "" {
		dir, err := os.MkdirTemp("", "tern-difftest-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "difftest: temp dir for the tern binary:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		bin := filepath.Join(dir, "tern")
		cmd := exec.Command("go", "build", "-o", bin, "github.com/tern-dns/tern/cmd/tern")
		if out, err := cmd.CombinedOutput(); err != nil {
			// The tests that need tern fail with this message; the
			// others still run.
			os.Setenv(buildErrorEnv, fmt.Sprintf("go build ./cmd/tern: %v\n%s", err, out))
		} else {
			os.Setenv(ternBinaryEnv, bin)
		}
	}
	return m.Run()
}

// needTool returns the path of a peer binary, skipping the test when it is
// missing (or failing it when TERN_REQUIRE_PEERS=1).
func needTool(t testing.TB, name string) string {
	t.Helper()
	if path, ok := peer.FindTool(name); ok {
		return path
	}
	if os.Getenv(requirePeersEnv) == "1" {
		t.Fatalf("%s not found and %s=1", name, requirePeersEnv)
	}
	t.Skipf("%s not found; install it (Debian: knot, nsd, knot-dnsutils, bind9-dnsutils) or see %s", name, requirePeersEnv)
	return ""
}

// server is a running DNS server under test.
type server struct {
	name string
	// addr is host:port for both UDP and TCP.
	addr string
	p    *peer.Process
}

// freePort finds a port free for both TCP and UDP on 127.0.0.1. Another
// process may take it before the server binds, so callers retry.
func freePort() (int, error) { return freePortOn("127.0.0.1") }

// freePortOn is freePort for a given loopback address (127.0.0.1 or ::1).
func freePortOn(host string) (int, error) {
	for range 20 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return 0, fmt.Errorf("find free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", net.JoinHostPort(host, strconv.Itoa(port)))
		l.Close()
		if err != nil {
			continue
		}
		u.Close()
		return port, nil
	}
	return 0, errors.New("find free port: no port free for both UDP and TCP after 20 tries")
}

// launch starts a server with args built for a fresh port, waits until it
// answers an SOA query for probeZone over UDP and TCP, and registers its
// shutdown. A start that fails (port taken meanwhile, say) is retried.
//
// fatal lists log phrases that mean the server will never become ready
// (a zone that failed to load): seeing one fails at once, without retry.
//
// With launchNoWait among opts, launch returns once the process runs
// and leaves readiness to the caller (for servers expected to fail).
func launch(t testing.TB, name, probeZone string, fatal []string, build func(port int) (*exec.Cmd, error), opts ...launchOpt) *server {
	t.Helper()
	var lastErr error
	for attempt := range 3 {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		cmd, err := build(port)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Its own process group, so that shutdown reaches the helper
		// processes NSD forks, and only those.
		p, err := peer.Start(cmd)
		if err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		s := &server{name: name, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), p: p}
		stop := p.Stop
		if len(opts) > 0 && opts[0] == launchNoWait {
			t.Cleanup(stop)
			return s
		}
		if err := waitReady(s, probeZone, fatal, readyTimeout); err != nil {
			stop()
			var fatalErr *fatalLogError
			if errors.As(err, &fatalErr) {
				t.Fatalf("%s: %v\n--- %s log ---\n%s", name, err, name, s.p.Output())
			}
			lastErr = fmt.Errorf("%s (attempt %d): %w\n--- %s log ---\n%s", name, attempt+1, err, name, s.p.Output())
			continue
		}
		t.Cleanup(func() {
			stop()
			if t.Failed() {
				t.Logf("--- %s log (tail) ---\n%s", name, tail(s.p.Output(), 3000))
			}
		})
		return s
	}
	t.Fatal(lastErr)
	return nil
}

// readyTimeout bounds the wait for a started server's first answers.
// Unloaded, Knot, NSD and Tern answer within a few hundred milliseconds;
// on a loaded machine loading the zones can take seconds, and a server
// that exits or logs a fatal phrase ends the wait at once.
const readyTimeout = 30 * time.Second

// launchOpt modifies launch.
type launchOpt int

// launchNoWait makes launch skip the readiness wait.
const launchNoWait launchOpt = 1

// fatalLogError reports a server log line that rules out readiness.
type fatalLogError struct{ phrase string }

// Error names the phrase that was found.
func (e *fatalLogError) Error() string { return fmt.Sprintf("fatal message in log: %q", e.phrase) }

// waitReady polls s with an SOA query for zone over UDP and TCP until both
// answer authoritatively, the process exits, a fatal phrase appears in its
// log, or the timeout passes.
func waitReady(s *server, zone string, fatal []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-s.p.Done():
			return fmt.Errorf("exited before answering: %v", s.p.Err())
		default:
		}
		for _, f := range fatal {
			if strings.Contains(s.p.Output(), f) {
				return &fatalLogError{f}
			}
		}
		ok := true
		for _, network := range []string{"udp", "tcp"} {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			r, err := Exchange(ctx, s.addr, Query{Name: zone, Type: dns.TypeSOA, Net: network, EDNS: 1232}, 4242)
			cancel()
			if err == nil && (r.Msg.Rcode != dns.RcodeSuccess || !r.Msg.Authoritative || len(r.Msg.Answer) == 0) {
				err = fmt.Errorf("SOA %s over %s: rcode %s aa=%v answers=%d", zone, network,
					dns.RcodeToString[r.Msg.Rcode], r.Msg.Authoritative, len(r.Msg.Answer))
			}
			if err != nil {
				ok, lastErr = false, err
				break
			}
		}
		if ok {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %v: %v", timeout, lastErr)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// peerZone is a zone as a peer server loads it.
type peerZone struct {
	origin string
	// file is the flattened copy (Knot and NSD) or the original (Tern).
	file string
}

// flatZones writes the flattened copies of zones into dir.
func flatZones(t testing.TB, zones []*Zone, dir string) []peerZone {
	t.Helper()
	var out []peerZone
	for _, z := range zones {
		path, err := z.WriteFlat(dir)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, peerZone{z.Origin, path})
	}
	return out
}

// startKnot runs knotd with a generated configuration in a temporary
// directory. Settings that differ from Knot's defaults are none on
// purpose: the defaults already answer as the RFCs describe, and
// answer-rotation (off by default) is stated to keep answer order stable.
// Knot answers QTYPE=ANY with a single RRset over UDP and TCP alike
// (RFC 8482 section 4.1; Knot DNS 3.0.0 changelog: "Queries with QTYPE ANY
// or RRSIG are always responded with at most one random RRSet"). Measured
// with 3.2.6 the RRset is not random but the one with the lowest type
// number at the name, so answers are reproducible.
func startKnot(t testing.TB, zones []*Zone) *server {
	t.Helper()
	knotd := needTool(t, "knotd")
	dir := t.TempDir()
	pz := flatZones(t, zones, dir)
	if err := os.MkdirAll(filepath.Join(dir, "db"), 0o755); err != nil {
		t.Fatalf("knot storage dir: %v", err)
	}
	return launch(t, "knot", zones[0].Origin, []string{"failed to load zone", "zone event 'load' failed"}, func(port int) (*exec.Cmd, error) {
		var b strings.Builder
		b.WriteString(peer.KnotServer(dir, []string{fmt.Sprintf("127.0.0.1@%d", port)}, "notice",
			"answer-rotation: off", "tcp-idle-timeout: 10"))
		fmt.Fprintf(&b, `template:
  - id: default
    storage: %q
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: none
    semantic-checks: off
zone:
`, dir)
		for _, z := range pz {
			fmt.Fprintf(&b, "  - domain: %s\n    file: %q\n", z.origin, z.file)
		}
		conf := filepath.Join(dir, "knot.conf")
		if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
			return nil, fmt.Errorf("write knot.conf: %w", err)
		}
		return exec.Command(knotd, "-c", conf), nil
	})
}

// startNSD runs nsd in the foreground with a generated configuration.
// minimal-responses is on so that NSD, like Knot, adds no NS RRset to the
// authority section of positive answers (RFC 2181 section 6.1 makes it
// optional); rate limiting is off because the test sends thousands of
// queries from one address.
func startNSD(t testing.TB, zones []*Zone) *server {
	t.Helper()
	nsd := needTool(t, "nsd")
	dir := t.TempDir()
	pz := flatZones(t, zones, dir)
	return launch(t, "nsd", zones[0].Origin, []string{"errors\n", "syntax error"}, func(port int) (*exec.Cmd, error) {
		var b strings.Builder
		b.WriteString(peer.NSDServer(dir, dir, []string{fmt.Sprintf("127.0.0.1@%d", port)},
			"verbosity: 1", "hide-version: yes", "minimal-responses: yes", "refuse-any: no", "round-robin: no",
			"rrl-ratelimit: 0", "rrl-whitelist-ratelimit: 0", "tcp-count: 200"))
		for _, z := range pz {
			fmt.Fprintf(&b, "zone:\n    name: %s\n    zonefile: %q\n", z.origin, z.file)
		}
		conf := filepath.Join(dir, "nsd.conf")
		if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
			return nil, fmt.Errorf("write nsd.conf: %w", err)
		}
		return exec.Command(nsd, "-d", "-c", conf), nil
	})
}

// startTern runs the tern binary on the original zone files, with their
// $INCLUDE and $GENERATE directives.
func startTern(t testing.TB, zones []*Zone) *server {
	t.Helper()
	return startTernExtra(t, zones)
}

// startTernExtra is startTern with extra arguments for tern serve, such as
// a second --listen.
func startTernExtra(t testing.TB, zones []*Zone, extra ...string) *server {
	t.Helper()
	bin := os.Getenv(ternBinaryEnv)
	if bin == "" {
		t.Fatalf("no tern binary (set %s to use a prebuilt one): %s", ternBinaryEnv, os.Getenv(buildErrorEnv))
	}
	return launch(t, "tern", zones[0].Origin, nil, func(port int) (*exec.Cmd, error) {
		args := append([]string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port)}, extra...)
		for _, z := range zones {
			args = append(args, "--zone", z.Origin+"="+z.File)
		}
		cmd := exec.Command(bin, args...)
		cmd.Dir = filepath.Dir(zones[0].File)
		return cmd, nil
	})
}
