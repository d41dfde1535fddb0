package hierarchy

// The standard hierarchy: a root, two TLDs and second-level zones, with
// delegations with and without glue, a name server name out of its
// delegation's bailiwick, CNAME and DNAME across zones, NXDOMAIN, NODATA
// and wildcards, and the broken delegations resolvers must survive: lame
// (REFUSED), unresponsive (queries dropped), unreachable (nothing
// listening) and a delegation loop (tsuNAME), and a misbehaving server
// (evil.go: spoofed answers, records out of bailiwick, truncation, an
// upward referral). Its zones are served by
// Tern's authoritative engine in-process and by real Knot DNS and NSD
// processes, so that a resolver meets the answers of several
// implementations; a peer missing from the machine is replaced by Tern.
// StartStandard writes the zone files and a root hints file naming the
// local root. The layout is in standard_zones.go.

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/peer"
	"github.com/tern-dns/tern/internal/zone"
)

// RequirePeersEnv, when "1", turns a missing knotd or nsd from a
// replacement by Tern into a test failure; `make test` sets it.
const RequirePeersEnv = "TERN_REQUIRE_PEERS"

// Standard is a running standard hierarchy.
type Standard struct {
	// Addrs are its StandardAddrs addresses (index them with the Addr
	// constants); Port is every server's port: 53, or the one the
	// kernel picked where 53 cannot be bound.
	Addrs []netip.Addr
	Port  uint16
	// Dir holds the zone files, the peers' configurations and the root
	// hints.
	Dir string
	// HintsFile is the root hints file (root.hints form) naming the
	// local root server.
	HintsFile string
	// Served says which implementation serves each zone (a peer missing
	// from the machine is replaced by Tern).
	Served map[string][]Implementation
}

// AddrPort returns the address at offset i (one of the Addr constants)
// with the hierarchy's port.
func (h *Standard) AddrPort(i int) netip.AddrPort { return netip.AddrPortFrom(h.Addrs[i], h.Port) }

// StartStandard serves the standard hierarchy on the StandardAddrs
// addresses 127.0.0.first and up (the caller's own block: see the
// address plan in the helper brief), stopping everything when the test
// ends. A block still taken after a while (a previous run's peers
// exiting) fails the test.
func StartStandard(t testing.TB, first byte) *Standard {
	t.Helper()
	if int(first)+StandardAddrs > 255 {
		t.Fatalf("hierarchy: 127.0.0.%d has not %d addresses after it", first, StandardAddrs-1)
	}
	h := &Standard{Dir: t.TempDir(), Served: map[string][]Implementation{}}
	for i := range StandardAddrs {
		h.Addrs = append(h.Addrs, netip.AddrFrom4([4]byte{127, 0, 0, first + byte(i)}))
	}
	h.Port = ChoosePort(t, h.Addrs)
	if err := h.writeFiles(); err != nil {
		t.Fatal(err)
	}
	require := os.Getenv(RequirePeersEnv) == "1"
	for _, s := range standardServers {
		impl := s.impl
		if impl != Tern {
			if _, ok := peer.FindTool(binaries[impl]); !ok {
				if require {
					t.Fatalf("hierarchy: %s not found and %s=1", impl, RequirePeersEnv)
				}
				t.Logf("hierarchy: %s not found; %s's zones are served by Tern", binaries[impl], s.name)
				impl = Tern
			}
		}
		switch impl {
		case Tern:
			h.startTern(t, s)
		case Knot:
			h.startKnot(t, s)
		case NSD:
			h.startNSD(t, s)
		}
		for _, z := range s.zones {
			h.Served[z] = append(h.Served[z], impl)
		}
	}
	h.startDrop(t, h.AddrPort(AddrDrop))
	h.startEvil(t, h.AddrPort(AddrEvil))
	return h
}

// ChoosePort returns 53 when it is free on every address (waiting a
// while for a previous run's servers to let go), or a port the kernel
// picks, free on all of them, where 53 cannot be bound (not root).
func ChoosePort(t testing.TB, addrs []netip.Addr) uint16 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := Free(addrs, 53)
		if err == nil {
			return 53
		}
		if errors.Is(err, syscall.EACCES) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hierarchy: port 53 on this test's loopback block: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for range 20 {
		port := pickPort(t, addrs[0])
		if Free(addrs, port) == nil {
			t.Logf("hierarchy: port 53 cannot be bound; using %d", port)
			return port
		}
	}
	t.Fatal("hierarchy: no port free on every address of the block after 20 tries")
	return 0
}

// zoneFile is the path of a zone's file.
func (h *Standard) zoneFile(origin string) string {
	if origin == "." {
		return filepath.Join(h.Dir, "root.zone")
	}
	return filepath.Join(h.Dir, strings.TrimSuffix(origin, ".")+".zone")
}

// writeFiles writes the zone files, with the addresses in, and the root
// hints.
func (h *Standard) writeFiles() error {
	for origin, text := range standardZones {
		for i, a := range h.Addrs {
			text = strings.ReplaceAll(text, fmt.Sprintf("{%d}", i), a.String())
		}
		if err := os.WriteFile(h.zoneFile(origin), []byte(text), 0o644); err != nil {
			return fmt.Errorf("hierarchy: %w", err)
		}
	}
	h.HintsFile = filepath.Join(h.Dir, "root.hints")
	hints := fmt.Sprintf(".\t3600000\tNS\ta.root.\na.root.\t3600000\tA\t%s\n", h.Addrs[AddrRoot])
	if err := os.WriteFile(h.HintsFile, []byte(hints), 0o644); err != nil {
		return fmt.Errorf("hierarchy: %w", err)
	}
	return nil
}

// listen returns the server's addresses with the port, as host:port.
func (h *Standard) listen(s serverSpec) []string {
	var out []string
	for _, i := range s.addrs {
		out = append(out, h.AddrPort(i).String())
	}
	return out
}

// startTern serves the zones of s from an in-process Tern.
func (h *Standard) startTern(t testing.TB, s serverSpec) {
	t.Helper()
	var zones []*zone.Zone
	for _, origin := range s.zones {
		z, err := zone.Load(h.zoneFile(origin), origin)
		if err != nil {
			t.Fatalf("hierarchy: %v", err)
		}
		zones = append(zones, z)
	}
	srv, err := Serve(h.listen(s), zones)
	if err != nil {
		t.Fatalf("hierarchy: tern for %s: %v", s.name, err)
	}
	t.Cleanup(srv.Close)
}

// startKnot runs knotd for the zones of s, with defaults (answer-rotation
// off stated to keep answers' order stable).
func (h *Standard) startKnot(t testing.TB, s serverSpec) {
	t.Helper()
	knotd, _ := peer.FindTool(binaries[Knot])
	dir := filepath.Join(h.Dir, s.name)
	var b strings.Builder
	var listen []string
	for _, a := range h.listen(s) {
		ap := netip.MustParseAddrPort(a)
		listen = append(listen, fmt.Sprintf("%s@%d", ap.Addr(), ap.Port()))
	}
	b.WriteString(peer.KnotServer(dir, listen, "notice", "answer-rotation: off"))
	fmt.Fprintf(&b, "template:\n  - id: default\n    storage: %q\n    zonefile-sync: -1\n    zonefile-load: whole\n    journal-content: none\n    semantic-checks: off\nzone:\n", h.Dir)
	for _, z := range s.zones {
		fmt.Fprintf(&b, "  - domain: %s\n    file: %q\n", z, h.zoneFile(z))
	}
	h.startProcess(t, s, dir, "knot.conf", b.String(), knotd, "-c")
}

// startNSD runs nsd in the foreground for the zones of s (its own user,
// no chroot, no database, no rate limiting).
func (h *Standard) startNSD(t testing.TB, s serverSpec) {
	t.Helper()
	nsd, _ := peer.FindTool(binaries[NSD])
	dir := filepath.Join(h.Dir, s.name)
	var listen []string
	for _, a := range h.listen(s) {
		ap := netip.MustParseAddrPort(a)
		listen = append(listen, fmt.Sprintf("%s@%d", ap.Addr(), ap.Port()))
	}
	var b strings.Builder
	b.WriteString(peer.NSDServer(dir, h.Dir, listen,
		"verbosity: 1", "hide-version: yes", "minimal-responses: yes", "rrl-ratelimit: 0"))
	for _, z := range s.zones {
		fmt.Fprintf(&b, "zone:\n    name: %s\n    zonefile: %q\n", z, h.zoneFile(z))
	}
	h.startProcess(t, s, dir, "nsd.conf", b.String(), nsd, "-d", "-c")
}

// startProcess writes conf into dir and runs bin with args and the
// configuration's path, in its own process group (NSD forks helpers),
// until every address of s answers an SOA query for each of its zones
// authoritatively. A start that fails is tried again (a loaded machine
// can be slow to free a port a previous run held).
func (h *Standard) startProcess(t testing.TB, s serverSpec, dir, confName, conf, bin string, args ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "db"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, confName)
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for attempt := range 3 {
		p, err := peer.Start(exec.Command(bin, append(args, path)...))
		if err != nil {
			t.Fatalf("hierarchy: %s: %v", s.name, err)
		}
		if err = h.waitReady(p, s); err == nil {
			t.Cleanup(func() {
				p.Stop()
				if t.Failed() {
					t.Logf("hierarchy: %s log:\n%s", s.name, p.Output())
				}
			})
			return
		}
		p.Stop()
		lastErr = fmt.Errorf("%s (attempt %d): %w\n%s", s.name, attempt+1, err, p.Output())
	}
	t.Fatalf("hierarchy: %v", lastErr)
}

// readyTimeout bounds the wait for a started peer's first answers: a few
// hundred milliseconds unloaded, seconds on a loaded machine; a peer that
// exits ends the wait at once.
const readyTimeout = 30 * time.Second

// waitReady polls every address of s with an SOA query for each of its
// zones until all answer authoritatively, the process exits, or
// readyTimeout passes.
func (h *Standard) waitReady(p *peer.Process, s serverSpec) error {
	deadline := time.Now().Add(readyTimeout)
	c := &dns.Client{Timeout: time.Second}
	pending := slices.Clone(h.listen(s))
	var lastErr error
	for len(pending) > 0 {
		if p.Exited() {
			return errors.New("exited before answering")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %v", readyTimeout, lastErr)
		}
		addr := pending[0]
		ok := true
		for _, z := range s.zones {
			r, _, err := c.Exchange(new(dns.Msg).SetQuestion(z, dns.TypeSOA), addr)
			if err == nil && (r.Rcode != dns.RcodeSuccess || !r.Authoritative) {
				err = fmt.Errorf("SOA %s at %s: %s aa=%v", z, addr, dns.RcodeToString[r.Rcode], r.Authoritative)
			}
			if err != nil {
				ok, lastErr = false, err
				break
			}
		}
		if ok {
			pending = pending[1:]
			continue
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}
