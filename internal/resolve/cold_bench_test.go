package resolve_test

import (
	"context"
	"testing"

	"github.com/miekg/dns"

	localdns "github.com/tern-dns/tern/internal/dnstest/hierarchy"
)

// BenchmarkColdResolve is one cold resolution, the res-cold workload's
// unit: a question for a new name whose delegation is cached, so one
// upstream query over UDP to a Tern authority in this process, its
// answer checked and cached. The authority's own work is in the
// numbers too (constant across changes of the resolver).
func BenchmarkColdResolve(b *testing.B) {
	r := localdns.WildResolver(b)
	next := localdns.ColdNames()
	ctx := context.Background()
	queries := 0
	resolve1 := func() {
		res, err := r.Resolve(ctx, next(), dns.TypeA)
		if err != nil || res.Rcode != dns.RcodeSuccess || len(res.Answer) != 1 {
			b.Fatalf("%v %+v", err, res)
		}
		queries += res.Queries
	}
	resolve1() // the delegation, cached
	queries = 0
	b.ReportAllocs()
	for b.Loop() {
		resolve1()
	}
	// 1 unless an answer was lost (or slower than the server's
	// timeout, as under valgrind) and the query sent again.
	b.ReportMetric(float64(queries)/float64(b.N), "queries/op")
}
