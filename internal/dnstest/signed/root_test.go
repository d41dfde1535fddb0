package signed_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/dnstest/hierarchy"
	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/upstream"
	"github.com/tern-dns/tern/internal/validator"
	"github.com/tern-dns/tern/internal/zone"
)

// rootZoneEnv names the real root zone's file when it is not at
// rootZonePath (a worktree elsewhere).
const rootZoneEnv = "TERN_ROOT_ZONE"

// rootZonePath is the real root zone of 2023-05-11 shipped beside the
// project (its signatures valid 2023-05-11 to 2023-05-24).
const rootZonePath = "../../../../shared/data/root.zone"

// rootAddr serves the real root zone (the block's 227).
var rootAddr = netip.AddrFrom4([4]byte{127, 0, 0, 227})

// rootServers are the root servers' addresses as the root zone's glue
// gives them: a resolver primed from the zone asks these, which
// loopbackRoot sends to the local copy.
func rootServers(t *testing.T, path string) map[netip.Addr]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[netip.Addr]bool{}
	zp := dns.NewZoneParser(f, ".", path)
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		if !strings.HasSuffix(rr.Header().Name, ".root-servers.net.") {
			continue
		}
		switch rr := rr.(type) {
		case *dns.A:
			out[netip.MustParseAddr(rr.A.String())] = true
		case *dns.AAAA:
			out[netip.MustParseAddr(rr.AAAA.String())] = true
		}
	}
	if err := zp.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// loopbackRoot is an Exchanger that sends every query for a root
// server's address to the local copy of the root and none anywhere
// else: a query to another address (a TLD's server) is refused and
// remembered, so that no test query reaches the internet.
type loopbackRoot struct {
	client upstream.Client
	root   netip.AddrPort
	roots  map[netip.Addr]bool
	mu     sync.Mutex
	others []string
}

func (l *loopbackRoot) ExchangeOptions(ctx context.Context, s netip.AddrPort, q dns.Question, opt upstream.Options) (*dns.Msg, upstream.Report, error) {
	if !l.roots[s.Addr()] && s != l.root {
		l.mu.Lock()
		l.others = append(l.others, fmt.Sprintf("%s %s to %s", q.Name, dns.Type(q.Qtype), s))
		l.mu.Unlock()
		return nil, upstream.Report{}, fmt.Errorf("loopbackRoot: %s is not a root server: %w", s, context.DeadlineExceeded)
	}
	return l.client.ExchangeOptions(ctx, l.root, q, opt)
}

func (l *loopbackRoot) Exchange(ctx context.Context, s netip.AddrPort, q dns.Question) (*dns.Msg, error) {
	m, _, err := l.ExchangeOptions(ctx, s, q, upstream.Options{})
	return m, err
}

// TestRealRootZone serves the real root zone of 2023-05-11 with Tern's
// authoritative engine on loopback and asks Tern's validating resolver,
// from the embedded root anchors (KSK-2017) at a clock inside the
// signatures' window (2023-05-15), the DS RRset of every TLD: each
// resolution must be Secure, a DS RRset that validates or its absence
// proved by the root's NSEC chain (RFC 4035 §5.2, §5.4), and no query
// may leave the root (a DS is answered by the parent, RFC 4035
// §3.1.4.1).
func TestRealRootZone(t *testing.T) {
	path := os.Getenv(rootZoneEnv)
	if path == "" {
		path = rootZonePath
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("the real root zone (%s or $%s): %v", rootZonePath, rootZoneEnv, err)
	}
	zn, err := zone.Load(path, ".")
	if err != nil {
		t.Fatal(err)
	}
	port := hierarchy.ChoosePort(t, []netip.Addr{rootAddr})
	srv, err := hierarchy.Serve([]string{netip.AddrPortFrom(rootAddr, port).String()}, []*zone.Zone{zn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ex := &loopbackRoot{root: netip.AddrPortFrom(rootAddr, port), roots: rootServers(t, path)}
	hints := []resolve.Server{{Name: "a.root-servers.net.", Addrs: []netip.Addr{rootAddr}}}
	clock := func() time.Time { return time.Date(2023, 5, 15, 0, 0, 0, 0, time.UTC) }
	r := resolve.New(ex, resolve.Options{Hints: hints, Port: port, Cache: cache.New(cache.Options{}),
		Validate: true, Anchors: validator.RootAnchors(), Validator: validator.Options{Now: clock}})

	var tlds []string
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	zp := dns.NewZoneParser(f, ".", path)
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		if h := rr.Header(); h.Rrtype == dns.TypeNS && h.Name != "." && !seen[h.Name] {
			seen[h.Name] = true
			tlds = append(tlds, h.Name)
		}
	}
	var (
		mu               sync.Mutex
		signed, unsigned int
		wg               sync.WaitGroup
		next             = make(chan string)
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tld := range next {
				res, err := r.Resolve(context.Background(), tld, dns.TypeDS)
				mu.Lock()
				switch {
				case err != nil:
					t.Errorf("%s DS: %v", tld, err)
				case res.Security != cache.Secure:
					t.Errorf("%s DS: %v %s (EDE %d), want secure", tld, res.Security, res.Why, res.EDE)
				case hasDS(res.Answer, tld):
					signed++
				case res.Rcode == dns.RcodeSuccess:
					unsigned++
				default:
					t.Errorf("%s DS: rcode %s", tld, dns.RcodeToString[res.Rcode])
				}
				mu.Unlock()
			}
		}()
	}
	for _, tld := range tlds {
		next <- tld
	}
	close(next)
	wg.Wait()
	t.Logf("%d TLDs through the resolver: %d DS RRsets secure, %d proved absent", len(tlds), signed, unsigned)
	if signed < 1000 || unsigned < 50 {
		t.Errorf("%d signed and %d unsigned TLDs: the root zone of 2023 has about 1350 and 100", signed, unsigned)
	}
	if len(ex.others) > 0 {
		t.Errorf("%d queries to servers other than the root, e.g. %v", len(ex.others), ex.others[:min(5, len(ex.others))])
	}
}

// hasDS reports whether rrs hold a DS record of name.
func hasDS(rrs []dns.RR, name string) bool {
	for _, rr := range rrs {
		if rr.Header().Rrtype == dns.TypeDS && strings.EqualFold(rr.Header().Name, name) {
			return true
		}
	}
	return false
}
