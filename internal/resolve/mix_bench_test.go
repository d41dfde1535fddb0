package resolve_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	localdns "github.com/tern-dns/tern/internal/dnstest/hierarchy"
	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/upstream"
)

// The mix hierarchy, the res-mix workload's (bench/cmd/benchtool resgen)
// in small: the root (first address) delegates alpha. and bravo. to two
// servers (second and third); mixZones second-level zones (fourth and
// fifth), the even ones with in-bailiwick servers and glue, the odd ones
// (in bravo.) served by a hosting provider's servers, ns1/ns2.dnsP.alpha.,
// names the resolver must resolve first. Each zone has mixHosts hosts
// with A and AAAA records, one in ten a CNAME to another zone's www.
const (
	mixZones     = 24
	mixHosts     = 16
	mixProviders = 3
)

func mixZone(i int) string { return fmt.Sprintf("dom%02d.%s", i, []string{"alpha.", "bravo."}[i%2]) }

func mixProvider(p int) string { return fmt.Sprintf("dns%d.alpha.", p) }

func mixHost(j int) string {
	if j < 4 {
		return []string{"www", "mail", "api", "cdn"}[j]
	}
	return fmt.Sprintf("h%d", j)
}

// mixHierarchy returns the zones of the mix hierarchy.
func mixHierarchy() []localdns.Zone {
	head := func(origin, ns1, ns2 string) string {
		return fmt.Sprintf("$ORIGIN %s\n@ SOA %s hostmaster 1 7200 3600 1209600 3600\n@ NS %s\n@ NS %s\n", origin, ns1, ns1, ns2)
	}
	root := head(".", "a.root.", "a.root.") + "a.root. A {0}\n"
	tlds := map[string]*strings.Builder{}
	for _, t := range []string{"alpha.", "bravo."} {
		root += fmt.Sprintf("%s NS ns1.%s\n%s NS ns2.%s\nns1.%s A {1}\nns2.%s A {2}\n", t, t, t, t, t, t)
		tlds[t] = &strings.Builder{}
		tlds[t].WriteString(head(t, "ns1."+t, "ns2."+t) + fmt.Sprintf("ns1.%s A {1}\nns2.%s A {2}\n", t, t))
	}
	zones := []localdns.Zone{{Server: 0, Origin: ".", Text: root}}
	for p := range mixProviders {
		pn := mixProvider(p)
		fmt.Fprintf(tlds["alpha."], "%s NS ns1.%s\n%s NS ns2.%s\nns1.%s A {3}\nns2.%s A {4}\n", pn, pn, pn, pn, pn, pn)
		for s := 3; s <= 4; s++ {
			zones = append(zones, localdns.Zone{Server: s, Origin: pn, Text: head(pn, "ns1", "ns2") + "ns1 A {3}\nns2 A {4}\n"})
		}
	}
	for i := range mixZones {
		z := mixZone(i)
		tld := z[strings.IndexByte(z, '.')+1:]
		ns1, ns2 := "ns1."+z, "ns2."+z
		if i%2 == 1 {
			p := mixProvider(i / 2 % mixProviders)
			ns1, ns2 = "ns1."+p, "ns2."+p
		}
		fmt.Fprintf(tlds[tld], "%s NS %s\n%s NS %s\n", z, ns1, z, ns2)
		text := head(z, ns1, ns2)
		if i%2 == 0 {
			fmt.Fprintf(tlds[tld], "%s A {3}\n%s A {4}\n", ns1, ns2)
			text += "ns1 A {3}\nns2 A {4}\n"
		}
		for j := range mixHosts {
			if j%10 == 9 {
				text += fmt.Sprintf("%s CNAME www.%s\n", mixHost(j), mixZone((i*7+j)%mixZones))
				continue
			}
			text += fmt.Sprintf("%s A 10.0.%d.%d\n%s AAAA 2001:db8:%x::%x\n", mixHost(j), i, j, mixHost(j), i, j)
		}
		for s := 3; s <= 4; s++ {
			zones = append(zones, localdns.Zone{Server: s, Origin: z, Text: text})
		}
	}
	for t, b := range tlds {
		for s := 1; s <= 2; s++ {
			zones = append(zones, localdns.Zone{Server: s, Origin: t, Text: b.String()})
		}
	}
	return zones
}

// mixQuestion is one question of the mix and its rcode.
type mixQuestion struct {
	name  string
	qtype uint16
	rcode int
}

// mixQuestions are every host of every zone, A (AAAA for one host in
// four), and one name in sixteen that does not exist (NXDOMAIN), in an
// order drawn once: the zones are met in turn, as the res-mix replay's
// Zipf draw over a permutation of the questions meets them.
func mixQuestions() []mixQuestion {
	var qs []mixQuestion
	for i := range mixZones {
		for j := range mixHosts {
			q := mixQuestion{name: mixHost(j) + "." + mixZone(i), qtype: dns.TypeA}
			switch {
			case j%16 == 15:
				q.name, q.rcode = "nx"+q.name, dns.RcodeNameError
			case j%4 == 3:
				q.qtype = dns.TypeAAAA
			}
			qs = append(qs, q)
		}
	}
	r := rand.New(rand.NewPCG(11, 12))
	r.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
	return qs
}

// BenchmarkMixResolve is the resolutions of the res-mix workload in
// small: each op resolves every question of mixQuestions (384: hosts of
// 24 zones in turn, CNAMEs into other zones, NS names to resolve, a few
// NXDOMAINs) through the local mix hierarchy, from a new resolver and
// cache (priming, referrals from the root and the TLDs, each zone's
// delegation cached then used). allocs/resolution and B/resolution are
// the resolver's garbage per cache miss in the mix, the authorities'
// (Tern's, in this process) included, constant across changes of the
// resolver.
func BenchmarkMixResolve(b *testing.B) {
	h := localdns.Start(b, 11, 19, 5, mixHierarchy())
	qs := mixQuestions()
	ctx := context.Background()
	opt := resolve.Options{Hints: []resolve.Server{{Name: "a.root.", Addrs: h.Addrs[:1]}}, Port: h.Port}
	queries := 0
	pass := func() {
		opt.Cache = cache.New(cache.Options{})
		r := resolve.New(localdns.Patient{Client: &upstream.Client{}}, opt)
		for _, q := range qs {
			res, err := r.Resolve(ctx, q.name, q.qtype)
			if err != nil || res.Rcode != q.rcode || (q.rcode == dns.RcodeSuccess) != (len(res.Answer) > 0) {
				b.Fatalf("%s %s: %v %+v", q.name, dns.Type(q.qtype), err, res)
			}
			queries += res.Queries
		}
	}
	pass() // the servers' first answers, the client's sockets
	queries = 0
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	b.ReportAllocs()
	for b.Loop() {
		pass()
	}
	runtime.ReadMemStats(&m1)
	n := float64(b.N * len(qs))
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/n, "allocs/resolution")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/n, "B/resolution")
	b.ReportMetric(float64(queries)/n, "queries/resolution")
}
