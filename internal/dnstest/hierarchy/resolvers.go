package hierarchy

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/peer"
	"github.com/tern-dns/tern/internal/recursor"
	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/server"
)

// The resolvers a test compares over a hierarchy: Tern's served
// resolver and Unbound.

// StartRecursor serves r as `tern serve` with a [resolver] table does
// (internal/recursor in front: clients in 127.0.0.0/8 allowed, each
// worker's response cache) on listen, until the test ends, and returns
// the address to ask.
func StartRecursor(t testing.TB, listen netip.AddrPort, r *resolve.Resolver) string {
	t.Helper()
	rec := recursor.New(recursor.Options{
		Resolver:      r,
		Allow:         []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		ResponseCache: 1024,
	})
	t.Cleanup(rec.Close)
	srv := server.New(server.Config{Listen: []string{listen.String()}, Workers: 1}, rec)
	var last error
	for range 50 { // a previous test's socket may still be closing
		if last = srv.Start(context.Background()); last == nil {
			t.Cleanup(srv.Close)
			return listen.String()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("served resolver on %s: %v", listen, last)
	return ""
}

// StartUnbound runs Unbound (Debian's unbound) as a resolver on
// listen:53 over a hierarchy on port (53: Unbound asks authorities on
// port 53 alone) whose root the hints file names: queries to loopback
// allowed, one thread, no prefetch, EDE on, otherwise its defaults, and
// the extra server: lines (module-config at least). It returns the
// address to ask, or why Unbound cannot run (the caller skips; with
// RequirePeersEnv=1 a missing unbound fails the test). Two settings only
// make tests finish: discard-timeout 0 (Unbound drops a query it has not
// answered in 1.9 s) and infra-cache-max-rtt 1000 (its backoff on an
// unresponsive server otherwise reaches 30 s).
func StartUnbound(t testing.TB, listen netip.Addr, port uint16, hints string, extra ...string) (addr, skip string) {
	t.Helper()
	bin, ok := peer.FindTool("unbound")
	if !ok {
		if os.Getenv(RequirePeersEnv) == "1" {
			t.Fatalf("unbound not found and %s=1", RequirePeersEnv)
		}
		return "", "unbound not found; install it (Debian: unbound)"
	}
	if port != 53 {
		return "", fmt.Sprintf("the hierarchy is on port %d, not 53: Unbound cannot be pointed at it", port)
	}
	dir := t.TempDir()
	addr = netip.AddrPortFrom(listen, 53).String()
	conf := fmt.Sprintf(`server:
    interface: %s
    port: 53
    do-ip6: no
    do-not-query-localhost: no
    root-hints: %q
    username: ""
    chroot: ""
    directory: %q
    pidfile: %q
    use-syslog: no
    logfile: ""
    verbosity: 1
    num-threads: 1
    access-control: 127.0.0.0/8 allow
    prefetch: no
    ede: yes
    discard-timeout: 0
    infra-cache-max-rtt: 1000
    %s
remote-control:
    control-enable: no
`, listen, hints, dir, filepath.Join(dir, "unbound.pid"), strings.Join(extra, "\n    "))
	path := filepath.Join(dir, "unbound.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	var last error
	for attempt := range 3 {
		p, err := peer.Start(exec.Command(bin, "-d", "-c", path))
		if err != nil {
			t.Fatalf("unbound: %v", err)
		}
		if last = waitResolver(p, addr); last == nil {
			t.Cleanup(func() {
				p.Stop()
				if t.Failed() {
					t.Logf("unbound log:\n%s", p.Output())
				}
			})
			return addr, ""
		}
		p.Stop()
		last = fmt.Errorf("attempt %d: %w\n%s", attempt+1, last, p.Output())
	}
	t.Fatalf("unbound: %v", last)
	return "", ""
}

// waitResolver polls a resolver with a question about the hierarchy's
// root until it answers, the process exits, or 30 seconds pass.
func waitResolver(p *peer.Process, addr string) error {
	deadline := time.Now().Add(30 * time.Second)
	c := &dns.Client{Timeout: time.Second}
	for {
		if p.Exited() {
			return fmt.Errorf("exited before answering")
		}
		r, _, err := c.Exchange(new(dns.Msg).SetQuestion(".", dns.TypeSOA), addr)
		if err == nil && r.Rcode == dns.RcodeSuccess {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not answering after 30s: %v %v", r, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
