package hierarchy

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/upstream"
	"github.com/tern-dns/tern/internal/zone"
)

// WildZone is the zone of StartWild whose wildcard answers every name
// below it: the res-cold workload's zone (bench/cmd/benchtool resgen).
const WildZone = "wild.alpha."

// StartWild serves the hierarchy of a cold resolution, as the res-cold
// benchmark workload has it: the root delegates wild.alpha. (glue
// ns1.wild.alpha. at 127.0.0.1), whose wildcard A record answers every
// name below it. The root and wild.alpha. are served on 127.0.0.1 on two
// kernel-picked ports, so that no fixed address is taken: the root is
// the server of a stub zone "." (a stub zone's servers have their own
// port), wild.alpha.'s port the resolver's. It returns the
// resolve.Options (Stub and Port) that resolve through it; the servers
// stop at the end of the test.
func StartWild(t testing.TB) resolve.Options {
	t.Helper()
	lo := netip.MustParseAddr("127.0.0.1")
	rootPort := dnstest.FreePort(t, lo.String())
	wildPort := dnstest.FreePort(t, lo.String())
	for wildPort == rootPort {
		wildPort = dnstest.FreePort(t, lo.String())
	}
	for _, z := range []struct {
		port         int
		origin, text string
	}{{rootPort, ".", `
. SOA a.root. h.root. 1 7200 3600 1209600 300
. NS a.root.
a.root. A 127.0.0.1
wild.alpha. NS ns1.wild.alpha.
ns1.wild.alpha. A 127.0.0.1
`}, {wildPort, WildZone, `
@ SOA ns1 hostmaster 1 7200 3600 1209600 3600
@ NS ns1
ns1 A 127.0.0.1
* A 10.255.0.1
`}} {
		zn, err := zone.Read(strings.NewReader("$TTL 3600\n"+z.text), z.origin, z.origin)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := Serve([]string{fmt.Sprintf("%s:%d", lo, z.port)}, []*zone.Zone{zn})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
	}
	return resolve.Options{
		Stub: []resolve.Zone{{Name: ".", Servers: []netip.AddrPort{netip.AddrPortFrom(lo, uint16(rootPort))}}},
		Port: uint16(wildPort),
	}
}

// WildResolver returns a resolver over StartWild's hierarchy with a
// cache, asking through a Patient upstream.Client: the cold-resolution
// benchmarks' (BenchmarkColdResolve, BenchmarkColdServed).
func WildResolver(t testing.TB) *resolve.Resolver {
	t.Helper()
	opt := StartWild(t)
	opt.Cache = cache.New(cache.Options{})
	return resolve.New(Patient{Client: &upstream.Client{}}, opt)
}

// ColdNames returns the names of successive cold resolutions below
// WildZone: each call a new one, as the res-cold workload's query files
// have them (c<hex>.wild.alpha.).
func ColdNames() func() string {
	n := 0
	return func() string {
		n++
		return fmt.Sprintf("c%x.%s", n, WildZone)
	}
}

// Patient is an upstream.Client that waits for each UDP answer as long as
// the Client's Timeout, whatever the resolver's infrastructure cache asks
// (upstream.Options.UDPTimeout): a benchmark's authorities answer in
// microseconds, which brings the timeout down to its 50 ms floor, and a
// run slowed down (valgrind, a loaded machine) would otherwise ask again
// and count a second query's work.
type Patient struct{ *upstream.Client }

// ExchangeOptions is the Client's, without opt.UDPTimeout.
func (p Patient) ExchangeOptions(ctx context.Context, server netip.AddrPort, q dns.Question, opt upstream.Options) (*dns.Msg, upstream.Report, error) {
	opt.UDPTimeout = 0
	return p.Client.ExchangeOptions(ctx, server, q, opt)
}
