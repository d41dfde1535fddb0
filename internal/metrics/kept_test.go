package metrics

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCountsKept: a known mix of answers (every named QTYPE, unnamed
// ones, a question that did not parse; every RCODE; sizes on both sides
// of each bucket's bound; both transports; zones in runs and
// alternating, and none), drops, cookie outcomes, cache lookups and
// batch timings, counted on three workers' Shards flushed at random
// batch ends, is what the Collector reports, series by series: each
// counter, histogram bucket, count and sum equals a plain model's,
// checked after each of three rounds. What the Shard does to count
// cheaply (its layout, dirty tracking, bucket tables, zone runs) cannot
// lose a series or a count without failing here.
func TestCountsKept(t *testing.T) {
	s := New()
	shards := []*Shard{s.Shard(Auth), s.Shard(Auth), s.Shard(Resolver)}
	zoneNames := []string{"a.test.", "b.test.", "c.test.", "d.test."}
	zones := []uint32{0}
	for _, n := range zoneNames {
		zones = append(zones, s.Zone(n))
	}
	want := newModel(zoneNames)

	// The QTYPEs asked: each named one, unnamed ones below and above
	// 256 and the one above CAA, 0 (no question).
	var qts []uint16
	for _, q := range qtypes {
		qts = append(qts, q.t)
	}
	qts = append(qts, 3, 250, 256, 258, 32769, 65280, 65535)
	// The sizes: a bare header, each bound, one either side of it.
	sizes := []int{12}
	for _, b := range sizeBounds {
		sizes = append(sizes, b-1, b, min(b+1, 65535))
	}
	rng := rand.New(rand.NewPCG(15, 3))
	var zone [3]uint32
	for round := 0; round < 3; round++ {
		for range 6000 {
			i := rng.IntN(len(shards))
			m := shards[i]
			srv := m.server
			switch k := rng.IntN(100); {
			case k < 80:
				tcp := i == 1 // the second auth worker is a TCP one
				if i == 2 {
					tcp = rng.IntN(4) == 0
				}
				qt := qts[rng.IntN(len(qts))]
				r := resp(byte(rng.IntN(256)), sizes[rng.IntN(len(sizes))])
				if srv == Auth && rng.IntN(3) == 0 {
					zone[i] = zones[rng.IntN(len(zones))] // runs of a zone
				}
				m.Answered(tcp, qt, r)
				m.FromZone(zone[i])
				want.answered(srv, tcp, qt, r, zoneNames, zone[i])
			case k < 83:
				d := Drop(rng.IntN(int(numDrops)))
				m.Dropped(d)
				want.add(`tern_dropped_queries_total{reason=`+dropNames[d]+`,server=`+srv.String()+`}`, 1)
			case k < 86:
				c, n := Cookie(rng.IntN(int(numCookies))), 1+rng.IntN(32)
				m.Cookies(c, n)
				want.add(`tern_cookies_total{result=`+cookieNames[c]+`,server=`+srv.String()+`}`, float64(n))
			case k < 90 && srv == Resolver: // the Collector reports the resolver's
				hit := rng.IntN(2) == 0
				m.CacheLookup(hit)
				want.add(`tern_resolver_response_cache_total{result=`+map[bool]string{true: "hit", false: "miss"}[hit]+`}`, 1)
			case k < 94:
				n := 1 + rng.IntN(32)
				d := time.Duration(rng.Int64N(int64(n) * int64(20*time.Millisecond)))
				if rng.IntN(2) == 0 {
					d = time.Duration(rng.IntN(n * 5000)) // microseconds each
				}
				m.Observe(d, n)
				want.observe(srv, d, n)
			case k < 95 && srv == Resolver:
				tcp, qt, r := rng.IntN(2) == 0, qts[rng.IntN(len(qts))], resp(byte(rng.IntN(16)), 100)
				s.DeferredAnswer(tcp, qt, r)
				want.add(queryKey(Resolver, tcp, qt, r), 1)
			default:
				m.Flush()
			}
		}
		for _, m := range shards {
			m.Flush()
		}
		got := gather(t, s)
		for k := range got {
			if !counted(k) {
				delete(got, k)
			}
		}
		exp := want.expect()
		if !maps.Equal(got, exp) {
			for _, k := range slices.Sorted(maps.Keys(exp)) {
				if g, ok := got[k]; !ok || g != exp[k] {
					t.Errorf("round %d: %s = %v (reported: %v), want %v", round, k, g, ok, exp[k])
				}
			}
			for _, k := range slices.Sorted(maps.Keys(got)) {
				if _, ok := exp[k]; !ok {
					t.Errorf("round %d: %s = %v, not expected", round, k, got[k])
				}
			}
			t.FailNow()
		}
	}
}

// counted says whether gather's key k is of a metric the query path
// counts (TestCountsKept's).
func counted(k string) bool {
	for _, p := range []string{"tern_queries_total{", "tern_response_size_bytes{", "tern_answer_duration_seconds{",
		"tern_dropped_queries_total{", "tern_cookies_total{", "tern_zone_queries_total{", "tern_resolver_response_cache_total{"} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// model is TestCountsKept's plain account of what was counted, in
// gather's keys, the histograms by the bounds' definitions.
type model struct {
	c map[string]float64
	// sizes and latencies observed, per histogram key.
	sizes map[string][]int
	lat   map[string][]struct {
		each int64
		n    int
	}
	latSum map[string]uint64
}

func newModel(zoneNames []string) *model {
	m := &model{c: map[string]float64{}, sizes: map[string][]int{}, latSum: map[string]uint64{},
		lat: map[string][]struct {
			each int64
			n    int
		}{}}
	// Always reported, zero or not.
	for srv := Server(0); srv < numServers; srv++ {
		for _, d := range dropNames {
			m.c[`tern_dropped_queries_total{reason=`+d+`,server=`+srv.String()+`}`] = 0
		}
		for _, c := range cookieNames {
			m.c[`tern_cookies_total{result=`+c+`,server=`+srv.String()+`}`] = 0
		}
	}
	for _, z := range zoneNames {
		m.c[`tern_zone_queries_total{zone=`+z+`}`] = 0
	}
	m.c[`tern_resolver_response_cache_total{result=hit}`] = 0
	m.c[`tern_resolver_response_cache_total{result=miss}`] = 0
	return m
}

func (m *model) add(k string, v float64) { m.c[k] += v }

// queryKey is the tern_queries_total series of an answer r to a query
// of qt: the QTYPE's name by a search of qtypes, the RCODE the header's
// low four bits.
func queryKey(srv Server, tcp bool, qt uint16, r []byte) string {
	name := "other"
	for _, q := range qtypes {
		if q.t == qt {
			name = q.name
		}
	}
	return `tern_queries_total{qtype=` + name + `,rcode=` + rcodeNames[r[3]&0xF] + `,server=` + srv.String() + `,transport=` + transports[b2i(tcp)] + `}`
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (m *model) answered(srv Server, tcp bool, qt uint16, r []byte, zoneNames []string, zone uint32) {
	m.add(queryKey(srv, tcp, qt, r), 1)
	h := `tern_response_size_bytes{server=` + srv.String() + `,transport=` + transports[b2i(tcp)] + `}`
	m.sizes[h] = append(m.sizes[h], len(r))
	if zone != 0 {
		m.add(`tern_zone_queries_total{zone=`+zoneNames[zone-1]+`}`, 1)
	}
}

func (m *model) observe(srv Server, d time.Duration, n int) {
	h := `tern_answer_duration_seconds{server=` + srv.String() + `}`
	m.lat[h] = append(m.lat[h], struct {
		each int64
		n    int
	}{int64(d) / int64(n), n})
	m.latSum[h] += uint64(d)
}

// expect is what gather should report.
func (m *model) expect() map[string]float64 {
	out := maps.Clone(m.c)
	for h, sizes := range m.sizes {
		var sum int
		for _, n := range sizes {
			sum += n
		}
		out[h+"_count"], out[h+"_sum"] = float64(len(sizes)), float64(sum)
		for _, b := range sizeBounds {
			le := 0
			for _, n := range sizes {
				if n <= b {
					le++
				}
			}
			out[h+"_le="+strconv.Itoa(b)] = float64(le)
		}
	}
	for h, obs := range m.lat {
		var count int
		for _, o := range obs {
			count += o.n
		}
		out[h+"_count"], out[h+"_sum"] = float64(count), float64(m.latSum[h])/1e9
		for _, b := range latencyBounds {
			le := 0
			for _, o := range obs {
				if o.each <= int64(math.Round(b*1e9)) {
					le += o.n
				}
			}
			out[h+"_le="+strconv.FormatFloat(b, 'g', -1, 64)] = float64(le)
		}
	}
	return out
}
