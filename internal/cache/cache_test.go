package cache

import (
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest"
)

// clock is a fake clock the tests advance.
type clock struct{ t time.Time }

// rrs parses records (dnstest.RRs).
var rrs = dnstest.RRs

func (c *clock) now() time.Time             { return c.t }
func (c *clock) advance(d time.Duration)    { c.t = c.t.Add(d) }
func newClock() *clock                      { return &clock{time.Unix(1_800_000_000, 0)} }
func newCache(c *clock, opt Options) *Cache { opt.Now = c.now; return New(opt) }

// text returns records in zone-file form, tabs as spaces.
func text(rrs []dns.RR) string {
	var s []string
	for _, rr := range rrs {
		s = append(s, strings.Join(strings.Fields(rr.String()), " "))
	}
	return strings.Join(s, " | ")
}

const soa = "example.com. 3600 IN SOA ns.example.com. h.example.com. 1 2 3 4 300"

func TestGet(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opt    Options
		put    func(t *testing.T, c *Cache)
		after  time.Duration // the clock advanced before the Get
		qname  string
		qtype  uint16
		stale  bool // GetStale instead of Get
		miss   bool
		kind   Kind
		want   string // the records, TTLs as Get sets them
		sigs   string
		rank   Rank
		staleE bool
	}{{
		name: "an RRset comes back with its owner as asked and its TTL decremented",
		put: func(t *testing.T, c *Cache) {
			c.Put("www.example.com.", dns.TypeA, Entry{Records: rrs(t, "www.example.com. 300 IN A 192.0.2.1", "www.example.com. 300 IN A 192.0.2.2"), Rank: RankAuthAnswer})
		},
		after: 100 * time.Second, qname: "WWW.Example.com.", qtype: dns.TypeA, kind: Positive, rank: RankAuthAnswer,
		want: "WWW.Example.com. 200 IN A 192.0.2.1 | WWW.Example.com. 200 IN A 192.0.2.2",
	}, {
		name: "names in RDATA survive (MX, uncompressed)",
		put: func(t *testing.T, c *Cache) {
			c.Put("example.com.", dns.TypeMX, Entry{Records: rrs(t, "example.com. 60 IN MX 10 mail.example.com.", "example.com. 60 IN MX 20 mail.example.net.")})
		},
		qname: "example.com.", qtype: dns.TypeMX,
		want: "example.com. 60 IN MX 10 mail.example.com. | example.com. 60 IN MX 20 mail.example.net.",
	}, {
		name: "the RRset's TTL is its smallest (RFC 2181 §5.2) and its RRSIG's",
		put: func(t *testing.T, c *Cache) {
			c.Put("example.com.", dns.TypeTXT, Entry{Records: rrs(t, `example.com. 60 IN TXT "a"`, `example.com. 50 IN TXT "b"`),
				Sigs: rrs(t, "example.com. 40 IN RRSIG TXT 13 2 60 20270101000000 20260101000000 1234 example.com. AAAA")})
		},
		qname: "example.com.", qtype: dns.TypeTXT,
		want: `example.com. 40 IN TXT "a" | example.com. 40 IN TXT "b"`,
		sigs: "example.com. 40 IN RRSIG TXT 13 2 60 20270101000000 20260101000000 1234 example.com. AAAA",
	}, {
		name: "another type is a miss",
		put: func(t *testing.T, c *Cache) {
			c.Put("www.example.com.", dns.TypeA, Entry{Records: rrs(t, "www.example.com. 300 IN A 192.0.2.1")})
		},
		qname: "www.example.com.", qtype: dns.TypeAAAA, miss: true,
	}, {
		name: "expired: a miss",
		put: func(t *testing.T, c *Cache) {
			c.Put("www.example.com.", dns.TypeA, Entry{Records: rrs(t, "www.example.com. 300 IN A 192.0.2.1")})
		},
		after: 300 * time.Second, qname: "www.example.com.", qtype: dns.TypeA, miss: true,
	}, {
		name: "TTL clamped up to MinTTL",
		opt:  Options{MinTTL: 60},
		put: func(t *testing.T, c *Cache) {
			c.Put("www.example.com.", dns.TypeA, Entry{Records: rrs(t, "www.example.com. 5 IN A 192.0.2.1")})
		},
		after: 30 * time.Second, qname: "www.example.com.", qtype: dns.TypeA,
		want: "www.example.com. 30 IN A 192.0.2.1",
	}, {
		name: "TTL clamped down to MaxTTL",
		opt:  Options{MaxTTL: 100},
		put: func(t *testing.T, c *Cache) {
			c.Put("www.example.com.", dns.TypeA, Entry{Records: rrs(t, "www.example.com. 86400 IN A 192.0.2.1")})
		},
		qname: "www.example.com.", qtype: dns.TypeA,
		want: "www.example.com. 100 IN A 192.0.2.1",
	}, {
		name: "the default MaxTTL is a day",
		put: func(t *testing.T, c *Cache) {
			c.Put("www.example.com.", dns.TypeA, Entry{Records: rrs(t, "www.example.com. 604800 IN A 192.0.2.1")})
		},
		qname: "www.example.com.", qtype: dns.TypeA,
		want: "www.example.com. 86400 IN A 192.0.2.1",
	}, {
		name: "NXDOMAIN: for the name, any type; TTL min(SOA TTL, MINIMUM) (RFC 2308 §5)",
		put: func(t *testing.T, c *Cache) {
			c.Put("nx.example.com.", dns.TypeA, Entry{Kind: NXDomain, Records: rrs(t, soa), Rank: RankAuthority})
		},
		qname: "NX.example.com.", qtype: dns.TypeMX, kind: NXDomain, rank: RankAuthority,
		want: "example.com. 300 IN SOA ns.example.com. h.example.com. 1 2 3 4 300",
	}, {
		name: "NXDOMAIN: SOA TTL below MINIMUM",
		put: func(t *testing.T, c *Cache) {
			c.Put("nx.example.com.", dns.TypeA, Entry{Kind: NXDomain, Records: rrs(t, "example.com. 30 IN SOA ns.example.com. h.example.com. 1 2 3 4 300")})
		},
		after: 10 * time.Second, qname: "nx.example.com.", qtype: dns.TypeA, kind: NXDomain,
		want: "example.com. 20 IN SOA ns.example.com. h.example.com. 1 2 3 4 300",
	}, {
		name: "NODATA: per name and type",
		put: func(t *testing.T, c *Cache) {
			c.Put("www.example.com.", dns.TypeTXT, Entry{Kind: NoData, Records: rrs(t, soa)})
		},
		qname: "www.example.com.", qtype: dns.TypeTXT, kind: NoData,
		want: "example.com. 300 IN SOA ns.example.com. h.example.com. 1 2 3 4 300",
	}, {
		name: "NODATA is not about other types",
		put: func(t *testing.T, c *Cache) {
			c.Put("www.example.com.", dns.TypeTXT, Entry{Kind: NoData, Records: rrs(t, soa)})
		},
		qname: "www.example.com.", qtype: dns.TypeA, miss: true,
	}, {
		name: "a negative answer without SOA is not cached (RFC 2308 §5)",
		put: func(t *testing.T, c *Cache) {
			c.Put("nx.example.com.", dns.TypeA, Entry{Kind: NXDomain, Records: rrs(t, "example.com. 300 IN NS ns.example.com.")})
		},
		qname: "nx.example.com.", qtype: dns.TypeA, miss: true,
	}, {
		name: "negative TTL bounded by MaxNegativeTTL",
		opt:  Options{MaxNegativeTTL: 60},
		put: func(t *testing.T, c *Cache) {
			c.Put("nx.example.com.", dns.TypeA, Entry{Kind: NXDomain, Records: rrs(t, soa)})
		},
		qname: "nx.example.com.", qtype: dns.TypeA, kind: NXDomain,
		want: "example.com. 60 IN SOA ns.example.com. h.example.com. 1 2 3 4 300",
	}, {
		name: "the default negative bound is an hour",
		put: func(t *testing.T, c *Cache) {
			c.Put("nx.example.com.", dns.TypeA, Entry{Kind: NXDomain, Records: rrs(t, "example.com. 86400 IN SOA ns.example.com. h.example.com. 1 2 3 4 86400")})
		},
		qname: "nx.example.com.", qtype: dns.TypeA, kind: NXDomain,
		want: "example.com. 3600 IN SOA ns.example.com. h.example.com. 1 2 3 4 86400",
	}, {
		name: "a lower rank does not replace a live higher one (RFC 2181 §5.4.1)",
		put: func(t *testing.T, c *Cache) {
			c.Put("ns.example.com.", dns.TypeA, Entry{Records: rrs(t, "ns.example.com. 300 IN A 192.0.2.1"), Rank: RankAuthAnswer})
			c.Put("ns.example.com.", dns.TypeA, Entry{Records: rrs(t, "ns.example.com. 600 IN A 192.0.2.66"), Rank: RankAdditional})
		},
		qname: "ns.example.com.", qtype: dns.TypeA, rank: RankAuthAnswer,
		want: "ns.example.com. 300 IN A 192.0.2.1",
	}, {
		name: "a higher rank replaces a lower one",
		put: func(t *testing.T, c *Cache) {
			c.Put("ns.example.com.", dns.TypeA, Entry{Records: rrs(t, "ns.example.com. 600 IN A 192.0.2.66"), Rank: RankAdditional})
			c.Put("ns.example.com.", dns.TypeA, Entry{Records: rrs(t, "ns.example.com. 300 IN A 192.0.2.1"), Rank: RankAuthAnswer})
		},
		qname: "ns.example.com.", qtype: dns.TypeA, rank: RankAuthAnswer,
		want: "ns.example.com. 300 IN A 192.0.2.1",
	}, {
		name: "the same rank replaces (fresher data)",
		put: func(t *testing.T, c *Cache) {
			c.Put("ns.example.com.", dns.TypeA, Entry{Records: rrs(t, "ns.example.com. 600 IN A 192.0.2.66"), Rank: RankAnswer})
			c.Put("ns.example.com.", dns.TypeA, Entry{Records: rrs(t, "ns.example.com. 300 IN A 192.0.2.1"), Rank: RankAnswer})
		},
		qname: "ns.example.com.", qtype: dns.TypeA, rank: RankAnswer,
		want: "ns.example.com. 300 IN A 192.0.2.1",
	}, {
		name: "a lower rank replaces an expired higher one",
		put: func(t *testing.T, c *Cache) {
			c.Put("ns.example.com.", dns.TypeA, Entry{Records: rrs(t, "ns.example.com. 0 IN A 192.0.2.1"), Rank: RankAuthAnswer})
			c.Put("ns.example.com.", dns.TypeA, Entry{Records: rrs(t, "ns.example.com. 600 IN A 192.0.2.66"), Rank: RankAdditional})
		},
		qname: "ns.example.com.", qtype: dns.TypeA, rank: RankAdditional,
		want: "ns.example.com. 600 IN A 192.0.2.66",
	}, {
		name: "serve-stale off: GetStale misses an expired entry",
		put: func(t *testing.T, c *Cache) {
			c.Put("www.example.com.", dns.TypeA, Entry{Records: rrs(t, "www.example.com. 300 IN A 192.0.2.1")})
		},
		after: 301 * time.Second, qname: "www.example.com.", qtype: dns.TypeA, stale: true, miss: true,
	}, {
		name: "serve-stale on: Get misses an expired entry",
		opt:  Options{Stale: time.Hour},
		put: func(t *testing.T, c *Cache) {
			c.Put("www.example.com.", dns.TypeA, Entry{Records: rrs(t, "www.example.com. 300 IN A 192.0.2.1")})
		},
		after: 301 * time.Second, qname: "www.example.com.", qtype: dns.TypeA, miss: true,
	}, {
		name: "serve-stale on: GetStale returns it with TTL 30 (RFC 8767 §4)",
		opt:  Options{Stale: time.Hour},
		put: func(t *testing.T, c *Cache) {
			c.Put("www.example.com.", dns.TypeA, Entry{Records: rrs(t, "www.example.com. 300 IN A 192.0.2.1")})
		},
		after: 301 * time.Second, qname: "www.example.com.", qtype: dns.TypeA, stale: true, staleE: true,
		want: "www.example.com. 30 IN A 192.0.2.1",
	}, {
		name: "serve-stale on: GetStale of a live entry is Get",
		opt:  Options{Stale: time.Hour},
		put: func(t *testing.T, c *Cache) {
			c.Put("www.example.com.", dns.TypeA, Entry{Records: rrs(t, "www.example.com. 300 IN A 192.0.2.1")})
		},
		after: 100 * time.Second, qname: "www.example.com.", qtype: dns.TypeA, stale: true,
		want: "www.example.com. 200 IN A 192.0.2.1",
	}, {
		name: "serve-stale: past the stale window it is gone",
		opt:  Options{Stale: time.Hour},
		put: func(t *testing.T, c *Cache) {
			c.Put("www.example.com.", dns.TypeA, Entry{Records: rrs(t, "www.example.com. 300 IN A 192.0.2.1")})
		},
		after: 300*time.Second + time.Hour, qname: "www.example.com.", qtype: dns.TypeA, stale: true, miss: true,
	}, {
		name: "serve-stale: a stale NXDOMAIN",
		opt:  Options{Stale: time.Hour},
		put: func(t *testing.T, c *Cache) {
			c.Put("nx.example.com.", dns.TypeA, Entry{Kind: NXDomain, Records: rrs(t, soa)})
		},
		after: time.Hour, qname: "nx.example.com.", qtype: dns.TypeA, stale: true, staleE: true, kind: NXDomain,
		want: "example.com. 30 IN SOA ns.example.com. h.example.com. 1 2 3 4 300",
	}, {
		name: "an RRset holding another type is refused",
		put: func(t *testing.T, c *Cache) {
			c.Put("www.example.com.", dns.TypeA, Entry{Records: rrs(t, "www.example.com. 300 IN AAAA 2001:db8::1")})
		},
		qname: "www.example.com.", qtype: dns.TypeA, miss: true,
	}, {
		name: "a name not fully qualified is neither stored nor found",
		put: func(t *testing.T, c *Cache) {
			c.Put("www.example.com", dns.TypeA, Entry{Records: rrs(t, "www.example.com. 300 IN A 192.0.2.1")})
		},
		qname: "www.example.com.", qtype: dns.TypeA, miss: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			c := newCache(clk, tc.opt)
			tc.put(t, c)
			clk.advance(tc.after)
			get := c.Get
			if tc.stale {
				get = c.GetStale
			}
			e, ok := get(tc.qname, tc.qtype)
			if ok == tc.miss {
				t.Fatalf("found %v, want %v (%+v)", ok, !tc.miss, e)
			}
			if tc.miss {
				return
			}
			if e.Kind != tc.kind || text(e.Records) != tc.want || text(e.Sigs) != tc.sigs || e.Stale != tc.staleE {
				t.Errorf("got %v %q sigs %q stale %v,\nwant %v %q sigs %q stale %v", e.Kind, text(e.Records), text(e.Sigs), e.Stale, tc.kind, tc.want, tc.sigs, tc.staleE)
			}
			if tc.rank != 0 && e.Rank != tc.rank {
				t.Errorf("rank %d, want %d", e.Rank, tc.rank)
			}
		})
	}
}

// TestValidated: a validator's finding is kept with the entry holding
// exactly the data it checked (TTLs and order aside), returned by Get,
// and gone with the entry; Bogus data goes after BogusTTL, sooner than
// its TTL, and is then replaced by a lower rank too.
func TestValidated(t *testing.T) {
	clk := newClock()
	c := newCache(clk, Options{})
	name := "www.example.com."
	sigs := rrs(t, name+" 300 IN RRSIG A 13 3 300 20270101000000 20260101000000 1234 example.com. AAAA")
	data := rrs(t, name+" 300 IN A 192.0.2.1", name+" 300 IN A 192.0.2.2")
	c.Put(name, dns.TypeA, Entry{Records: data, Sigs: sigs, Rank: RankAuthAnswer})
	secure := Validated{Security: Secure, Until: clk.t.Add(time.Hour)}
	// Other data: another address, another signature, a record fewer.
	for _, other := range []Entry{
		{Records: rrs(t, name+" 300 IN A 192.0.2.1", name+" 300 IN A 192.0.2.3"), Sigs: sigs},
		{Records: data, Sigs: rrs(t, name+" 300 IN RRSIG A 13 3 300 20270101000000 20260101000000 1234 example.com. AAAB")},
		{Records: data[:1], Sigs: sigs},
		{Records: data},
		{Kind: NoData, Records: rrs(t, "example.com. 300 IN SOA ns. h. 1 2 3 4 300")},
	} {
		if c.SetValidated(name, dns.TypeA, other, secure) {
			t.Errorf("finding kept for other data %v", other)
		}
	}
	if e, _ := c.Get(name, dns.TypeA); e.Validated != nil {
		t.Fatalf("a finding after SetValidated of other data: %+v", e.Validated)
	}
	// The same data, TTLs gone down, in another order.
	same := rrs(t, name+" 100 IN A 192.0.2.2", name+" 100 IN A 192.0.2.1")
	if !c.SetValidated(name, dns.TypeA, Entry{Records: same, Sigs: rrs(t, name+" 100 IN RRSIG A 13 3 300 20270101000000 20260101000000 1234 example.com. AAAA")}, secure) {
		t.Fatal("finding not kept for the same data")
	}
	if e, _ := c.Get(name, dns.TypeA); e.Validated == nil || *e.Validated != secure {
		t.Fatalf("Get: %+v, want %+v", e.Validated, secure)
	}
	c.Put(name, dns.TypeA, Entry{Records: data, Sigs: sigs, Rank: RankAuthAnswer})
	if e, _ := c.Get(name, dns.TypeA); e.Validated != nil {
		t.Errorf("a new entry has the old one's finding: %+v", e.Validated)
	}
	// Bogus: gone after BogusTTL (60 s) though its TTL is 300 s, and
	// then a lower rank takes its place.
	bogus := Validated{Security: Bogus, EDE: 6, Why: "bad", Until: clk.t.Add(time.Minute)}
	if !c.SetValidated(name, dns.TypeA, Entry{Records: data, Sigs: sigs}, bogus) {
		t.Fatal("bogus finding not kept")
	}
	clk.advance(59 * time.Second)
	if e, ok := c.Get(name, dns.TypeA); !ok || e.Validated == nil || e.Validated.Security != Bogus || e.TTL != 1 {
		t.Fatalf("bogus within BogusTTL: %v %+v", ok, e)
	}
	clk.advance(time.Second)
	if e, ok := c.Get(name, dns.TypeA); ok {
		t.Fatalf("bogus data past BogusTTL still there: %+v", e)
	}
	c.Put(name, dns.TypeA, Entry{Records: data[:1], Rank: RankAdditional})
	if e, ok := c.Get(name, dns.TypeA); !ok || len(e.Records) != 1 || e.Validated != nil {
		t.Errorf("after the bogus entry went, a lower rank's: %v %+v", ok, e)
	}
	// A negative entry: an NXDOMAIN's finding holds for every type.
	nx := "nx.example.com."
	auth := rrs(t, "example.com. 300 IN SOA ns. h. 1 2 3 4 300", "example.com. 300 IN RRSIG SOA 13 2 300 20270101000000 20260101000000 1234 example.com. AAAA",
		"example.com. 300 IN NSEC z.example.com. NS SOA RRSIG NSEC DNSKEY")
	c.Put(nx, dns.TypeA, Entry{Kind: NXDomain, Records: auth, Rank: RankAuthority})
	if !c.SetValidated(nx, dns.TypeAAAA, Entry{Kind: NXDomain, Records: []dns.RR{auth[2], auth[0], auth[1]}}, secure) {
		t.Fatal("NXDOMAIN finding not kept")
	}
	if e, ok := c.Get(nx, dns.TypeMX); !ok || e.Kind != NXDomain || e.Validated == nil || e.Validated.Security != Secure {
		t.Errorf("NXDOMAIN: %v %+v", ok, e)
	}
}

// aName is the i-th name of the benchmarks and eviction tests.
func aName(i int) string { return fmt.Sprintf("host%d.example%d.com.", i, i%1000) }

func putA(t testing.TB, c *Cache, i int) {
	name := aName(i)
	rr := &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 3600}, A: []byte{192, 0, byte(i >> 8), byte(i)}}
	c.Put(name, dns.TypeA, Entry{Records: []dns.RR{rr}, Rank: RankAuthAnswer})
}

func TestBoundedInBytes(t *testing.T) {
	const size = 1 << 20
	c := New(Options{Size: size})
	for i := 0; i < 50000; i++ {
		putA(t, c, i)
		if b := c.Bytes(); b > size {
			t.Fatalf("after %d puts: %d bytes, limit %d", i+1, b, size)
		}
	}
	if c.Len() < 1000 {
		t.Errorf("only %d entries left in %d bytes", c.Len(), size)
	}
}

// TestKeepsPopular: entries used between stores survive a stream of
// one-off names several times the cache's size. The cache holds about
// 7,200 of these entries (16 shards): 40,000 one-offs turn it over five
// times, and the popular names, used every 500 stores, are used about 14
// times per turn of each shard's hand (once would do: the hand lowers a
// use counter by one a pass). Without the use counters it fails (all
// 500 evicted).
func TestKeepsPopular(t *testing.T) {
	c := New(Options{Size: 1 << 20})
	const hot = 500
	names := make([]string, hot)
	for i := range hot {
		names[i] = aName(i)
		putA(t, c, i)
	}
	for i := hot; i < 40000; i++ {
		putA(t, c, i)
		if i%500 == 0 {
			for _, name := range names {
				c.Get(name, dns.TypeA)
			}
		}
	}
	lost := 0
	for j := 0; j < hot; j++ {
		if _, ok := c.Get(aName(j), dns.TypeA); !ok {
			lost++
		}
	}
	if lost > hot/20 {
		t.Errorf("%d of %d popular entries evicted by one-off names", lost, hot)
	}
}

// TestExpiredEvictedFirst: an expired entry (serve-stale off) goes before
// a live one, however used.
func TestExpiredEvictedFirst(t *testing.T) {
	clk := newClock()
	c := newCache(clk, Options{Size: 64 << 10})
	c.Put("old.example.", dns.TypeA, Entry{Records: rrs(t, "old.example. 10 IN A 192.0.2.1")})
	for i := 0; i < 3; i++ {
		c.Get("old.example.", dns.TypeA)
	}
	clk.advance(time.Minute)
	// Store until the first eviction (one shard: the size is small).
	for i := 0; c.Len() == i+1 && i < 10000; i++ {
		putA(t, c, i)
	}
	if len(c.shards) != 1 {
		t.Fatalf("%d shards, want 1", len(c.shards))
	}
	s := c.shardOf([]byte("old.example."))
	if find(s.m["old.example."], dns.TypeA) != nil {
		t.Errorf("the expired entry survived the first eviction")
	}
}

// TestBytesPerRRset measures the heap one cached A RRset of one record
// costs, index included; the bound is Unbound's (about 150-250
// bytes per small RRset with overhead).
func TestBytesPerRRset(t *testing.T) {
	const n = 100000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := New(Options{})
	for i := 0; i < n; i++ {
		putA(t, c, i)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	counted := float64(c.Bytes()) / n
	t.Logf("%.0f bytes of heap per A RRset (names of %d bytes); the cache counts %.0f", per, len(aName(n/2)), counted)
	if per > 250 {
		t.Errorf("%.0f bytes per A RRset, more than Unbound's 250", per)
	}
	// What Size bounds is what the heap holds, within a fifth.
	if counted < per*0.8 || counted > per*1.25 {
		t.Errorf("the cache counts %.0f bytes per RRset, the heap holds %.0f", counted, per)
	}
	if c.Len() != n {
		t.Errorf("%d entries, want %d", c.Len(), n)
	}
	runtime.KeepAlive(c)
}

// TestConcurrent runs stores and lookups from several goroutines (for
// the race detector).
func TestConcurrent(t *testing.T) {
	c := New(Options{Size: 256 << 10, Stale: time.Hour})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5000; i++ {
				putA(t, c, (i*7+g)%3000)
				if e, ok := c.Get(aName((i*13+g)%3000), dns.TypeA); ok && len(e.Records) != 1 {
					t.Errorf("%d records", len(e.Records))
				}
				c.GetStale(aName(i%3000), dns.TypeA)
				// Several types of few names: chains replaced and
				// evicted while others walk them.
				name := fmt.Sprintf("t%d.example.", i%17)
				qt := uint16(1000 + (i*g)%40)
				c.Put(name, qt, Entry{Records: rrs(t, fmt.Sprintf("%s 300 IN TYPE%d \\# 1 %02x", name, qt, i%256)), Rank: RankAuthAnswer})
				n := c.Lookup(fmt.Sprintf("t%d.example.", (i+g)%17))
				for q := uint16(1000); q < 1040; q += 3 {
					if e, ok := n.Get(q); ok && (len(e.Records) != 1 || e.Records[0].Header().Rrtype != q) {
						t.Errorf("type %d: %v", q, e.Records)
					}
				}
			}
		}()
	}
	wg.Wait()
	checkChains(t, c)
	held := 0
	for i := 0; i < 17; i++ {
		n := c.Lookup(fmt.Sprintf("t%d.example.", i))
		for q := uint16(1000); q < 1040; q++ {
			if _, ok := n.Get(q); ok {
				held++
			}
		}
	}
	if held == 0 {
		t.Error("no typed entry held")
	}
}

// BenchmarkGet is a hit on one of 100k cached A RRsets, from every
// goroutine at once. Measured against otter v2.4.0 holding the same
// entries (see the package doc).
func BenchmarkGet(b *testing.B) {
	c := New(Options{})
	const n = 100000
	for i := 0; i < n; i++ {
		putA(b, c, i)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = aName(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, ok := c.Get(names[i%n], dns.TypeA); !ok {
				b.Error("miss")
				return
			}
			i += 7919
		}
	})
}

// TestStats: Stats counts the RRsets and negative entries stored, a
// replacement once, an NXDOMAIN once for the name whatever the type,
// and what eviction takes away, as the shards hold them (heldByShards:
// Len and Bytes read the same counters as Stats).
func TestStats(t *testing.T) {
	c := New(Options{})
	const n = 300
	for i := 0; i < n; i++ {
		putA(t, c, i)
	}
	putA(t, c, 7) // a replacement: still one RRset
	soa := "example.com. 300 IN SOA ns.example.com. h.example.com. 1 2 3 4 300"
	c.Put("nx.example.com.", dns.TypeA, Entry{Kind: NXDomain, Records: rrs(t, soa), Rank: RankAuthority})
	c.Put("nx.example.com.", dns.TypeMX, Entry{Kind: NXDomain, Records: rrs(t, soa), Rank: RankAuthority})
	c.Put("nodata.example.com.", dns.TypeMX, Entry{Kind: NoData, Records: rrs(t, soa), Rank: RankAuthority})
	c.Put("nosoa.example.com.", dns.TypeMX, Entry{Kind: NoData, Records: rrs(t, "example.com. 300 IN NS ns.example.com.")}) // not stored
	if got, want := c.Stats(), (Stats{RRsets: n, Negative: 2, Bytes: heldByShards(c).Bytes}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}

	// Bounded: eviction takes entries away, and the counts follow.
	small := New(Options{Size: 64 << 10})
	for i := 0; i < 5000; i++ {
		putA(t, small, i)
	}
	st := small.Stats()
	if want := heldByShards(small); st != want || st.RRsets >= 5000 || st.RRsets == 0 {
		t.Errorf("after eviction: Stats() = %+v, the shards hold %+v", st, want)
	}
}

// heldByShards counts what c's shards hold, entry by entry (their maps), not
// by the counters Stats (and Len and Bytes) read: the oracle of TestStats.
func heldByShards(c *Cache) Stats {
	var st Stats
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		for _, head := range s.m {
			for e := head; e != nil; e = e.next.Load() {
				if e.kind == Positive {
					st.RRsets++
				} else {
					st.Negative++
				}
				st.Bytes += e.cost()
			}
		}
		s.mu.RUnlock()
	}
	return st
}

// TestEntrySize: an entry fills Go's 64-byte size class exactly; one
// byte more and each costs 80 (the next class).
func TestEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n > 64 {
		t.Errorf("an entry is %d bytes, over the 64-byte size class", n)
	}
}

// TestGetExact: GetExact finds the entry of the type asked, an RRset or
// a NODATA, as Get does, but not the NXDOMAIN of the name, which Get
// returns for every type; and it finds a name whose key is longer than
// its stack buffer (escapes).
func TestGetExact(t *testing.T) {
	c := newCache(newClock(), Options{})
	c.Put("nx.example.com.", dns.TypeA, Entry{Kind: NXDomain, Records: rrs(t, soa), Rank: RankAuthority})
	c.Put("www.example.com.", dns.TypeCNAME, Entry{Records: rrs(t, "www.example.com. 300 IN CNAME example.com."), Rank: RankAuthAnswer})
	c.Put("www.example.com.", dns.TypeMX, Entry{Kind: NoData, Records: rrs(t, soa), Rank: RankAuthority})
	long := strings.Repeat("\\255", 60) + "." + strings.Repeat("\\000", 60) + ".example.com."
	c.Put(long, dns.TypeA, Entry{Records: rrs(t, long+" 300 IN A 192.0.2.1"), Rank: RankAuthAnswer})
	for _, tc := range []struct {
		name       string
		qtype      uint16
		get, exact string // the Kind found, "" for none
	}{
		{"nx.example.com.", dns.TypeCNAME, "NXDOMAIN", ""},
		{"NX.example.com.", dns.TypeA, "NXDOMAIN", ""},
		{"www.example.com.", dns.TypeCNAME, "positive", "positive"},
		{"WWW.Example.COM.", dns.TypeCNAME, "positive", "positive"},
		{"www.example.com.", dns.TypeMX, "NODATA", "NODATA"},
		{"www.example.com.", dns.TypeA, "", ""},
		{long, dns.TypeA, "positive", "positive"},
	} {
		kind := func(e Entry, ok bool) string {
			if !ok {
				return ""
			}
			return e.Kind.String()
		}
		if got := kind(c.Get(tc.name, tc.qtype)); got != tc.get {
			t.Errorf("Get(%s, %s): %q, want %q", tc.name, dns.Type(tc.qtype), got, tc.get)
		}
		if got := kind(c.GetExact(tc.name, tc.qtype)); got != tc.exact {
			t.Errorf("GetExact(%s, %s): %q, want %q", tc.name, dns.Type(tc.qtype), got, tc.exact)
		}
	}
}

// TestRData: RData gives the RDATA of a live RRset's records in wire
// form, in order, names uncompressed; nothing for a NODATA, an NXDOMAIN,
// another type or an expired RRset.
func TestRData(t *testing.T) {
	clk := newClock()
	c := newCache(clk, Options{})
	c.Put("example.com.", dns.TypeNS, Entry{Records: rrs(t, "example.com. 300 IN NS ns1.example.com.", "example.com. 300 IN NS NS2.example.net."), Rank: RankAuthority})
	c.Put("ns1.example.com.", dns.TypeA, Entry{Records: rrs(t, "ns1.example.com. 60 IN A 192.0.2.1", "ns1.example.com. 60 IN A 192.0.2.2"), Rank: RankAdditional})
	c.Put("ns1.example.com.", dns.TypeAAAA, Entry{Kind: NoData, Records: rrs(t, soa), Rank: RankAuthority})
	c.Put("nx.example.com.", dns.TypeA, Entry{Kind: NXDomain, Records: rrs(t, soa), Rank: RankAuthority})
	read := func(name string, qtype uint16) ([]string, bool) {
		var got []string
		ok := c.RData(name, qtype, func(rdata []byte) { got = append(got, fmt.Sprintf("% x", rdata)) })
		return got, ok
	}
	for _, tc := range []struct {
		name  string
		qtype uint16
		want  []string
		ok    bool
	}{
		{"example.com.", dns.TypeNS, []string{
			"03 6e 73 31 07 65 78 61 6d 70 6c 65 03 63 6f 6d 00",
			"03 4e 53 32 07 65 78 61 6d 70 6c 65 03 6e 65 74 00"}, true},
		{"NS1.example.com.", dns.TypeA, []string{"c0 00 02 01", "c0 00 02 02"}, true},
		{"ns1.example.com.", dns.TypeAAAA, nil, false},
		{"nx.example.com.", dns.TypeA, nil, false},
		{"example.com.", dns.TypeA, nil, false},
		{"example.com", dns.TypeNS, nil, false},
	} {
		if got, ok := read(tc.name, tc.qtype); ok != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("RData(%s, %s): %v %q, want %v %q", tc.name, dns.Type(tc.qtype), ok, got, tc.ok, tc.want)
		}
	}
	clk.advance(61 * time.Second)
	if got, ok := read("ns1.example.com.", dns.TypeA); ok || got != nil {
		t.Errorf("expired: %v %q", ok, got)
	}
	if _, ok := read("example.com.", dns.TypeNS); !ok {
		t.Error("the NS RRset expired with the addresses")
	}
}

// TestHasDNAME: HasDNAME is false until a DNAME RRset is stored (a
// NODATA for type DNAME is not one), true while one is held, replaced
// or not, and false again once eviction has taken every one.
func TestHasDNAME(t *testing.T) {
	const size = 1 << 20
	c := New(Options{Size: size})
	soa := "example.com. 300 IN SOA ns.example.com. h.example.com. 1 2 3 4 300"
	c.Put("a.example.com.", dns.TypeDNAME, Entry{Kind: NoData, Records: rrs(t, soa), Rank: RankAuthority})
	putA(t, c, 1)
	if c.HasDNAME() {
		t.Fatal("HasDNAME without a DNAME")
	}
	dname := func(i int) {
		name := fmt.Sprintf("d%d.example.com.", i)
		c.Put(name, dns.TypeDNAME, Entry{Records: rrs(t, name+" 300 IN DNAME example.net."), Rank: RankAuthAnswer})
	}
	dname(1)
	dname(1) // a replacement
	dname(2)
	if !c.HasDNAME() {
		t.Fatal("HasDNAME false with two DNAMEs held")
	}
	if got := c.dnames.Load(); got != 2 {
		t.Errorf("%d DNAMEs counted, 2 held", got)
	}
	for i := 0; i < 50000 && c.HasDNAME(); i++ {
		putA(t, c, i)
	}
	if c.HasDNAME() {
		t.Fatalf("HasDNAME after the DNAMEs were evicted (%d counted)", c.dnames.Load())
	}
	if _, ok := c.GetExact("d1.example.com.", dns.TypeDNAME); ok {
		t.Error("a DNAME still held")
	}
}

// TestEncodeRData: the RRsets encode writes RDATA by RDATA (address
// records, NS, CNAME, DNAME) are stored byte for byte as dns.PackRR's
// path stores them (SetValidated compares the two), escapes, case, the
// root and IPv4 addresses in 16 octets included; the others are left to
// that path.
func TestEncodeRData(t *testing.T) {
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61) + "."
	for _, tc := range []struct {
		qtype  uint16
		rrs    []dns.RR
		direct bool
	}{
		{dns.TypeA, rrs(t, "x.test. 300 IN A 192.0.2.1", "x.test. 300 IN A 192.0.2.2"), true},
		{dns.TypeA, []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: "x.test.", Rrtype: dns.TypeA, Class: dns.ClassINET}, A: net.IP{192, 0, 2, 3}}}, true},
		{dns.TypeA, []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: "x.test.", Rrtype: dns.TypeA, Class: dns.ClassINET}}}, false},
		{dns.TypeAAAA, rrs(t, "x.test. 300 IN AAAA 2001:db8::1", "x.test. 300 IN AAAA ::ffff:192.0.2.1"), true},
		{dns.TypeNS, rrs(t, "x.test. 300 IN NS ns1.X.test.", `x.test. 300 IN NS a\.b\065\255.test.`, "x.test. 300 IN NS ."), true},
		{dns.TypeNS, rrs(t, "x.test. 300 IN NS "+long), true},
		{dns.TypeCNAME, rrs(t, "x.test. 300 IN CNAME y.test."), true},
		{dns.TypeDNAME, rrs(t, "x.test. 300 IN DNAME Y.test."), true},
		{dns.TypeNS, []dns.RR{&dns.NS{Hdr: dns.RR_Header{Name: "x.test.", Rrtype: dns.TypeNS, Class: dns.ClassINET}, Ns: "not.qualified"}}, false},
		{dns.TypeA, rrs(t, "x.test. 300 IN AAAA 2001:db8::1"), false},
		{dns.TypeMX, rrs(t, "x.test. 300 IN MX 10 mx.test."), false},
	} {
		e := Entry{Records: tc.rrs, Rank: RankAnswer}
		k := appendKey(nil, "x.test.", tc.qtype)
		data, n, direct := encodeRData(k, &e)
		if direct != tc.direct {
			t.Errorf("%v: written directly %v, want %v", tc.rrs, direct, tc.direct)
		}
		packed, err := encodePacked(&entry{keyLen: uint16(len(k)), qtype: tc.qtype}, k, &e)
		if !direct {
			continue
		}
		if err != nil {
			t.Fatalf("%v: packed: %v", tc.rrs, err)
		}
		if data != packed.data || n != packed.n || packed.whole != 0 {
			t.Errorf("%v:\n% x (%d records), packed\n% x (%d, %d whole)", tc.rrs, data, n, packed.data, packed.n, packed.whole)
		}
	}
	e := Entry{Records: rrs(t, "x.test. 300 IN A 192.0.2.1"), Rank: RankAnswer}
	k := appendKey(nil, "x.test.", dns.TypeA)
	if n := testing.AllocsPerRun(100, func() { encode(k, &e) }); n != 2 {
		t.Errorf("%v allocations per encode, want 2 (the entry, its data)", n)
	}
	// Packed: a negative entry's whole records fill the buffer made for
	// them, which is its data (not copied); an MX RRset's RDATA is
	// copied out of it; both read back as they went in.
	for _, tc := range []struct {
		e      Entry
		qtype  uint16
		allocs float64
	}{
		{Entry{Kind: NXDomain, Records: rrs(t, "test. 300 IN SOA ns.test. h.test. 1 2 3 4 300", "x.test. 300 IN NSEC z.test. A RRSIG NSEC")}, 0, 2},
		{Entry{Records: rrs(t, "x.test. 300 IN MX 10 mx.test.", "x.test. 300 IN MX 20 mx2.test.")}, dns.TypeMX, 3},
	} {
		k := appendKey(nil, "x.test.", tc.qtype)
		ne, err := encode(k, &tc.e)
		if err != nil {
			t.Fatal(err)
		}
		var out Entry
		if err := ne.decode("x.test.", 300, &out); err != nil || fmt.Sprint(out.Records) != fmt.Sprint(tc.e.Records) {
			t.Errorf("decoded %v, %v; want %v", out.Records, err, tc.e.Records)
		}
		if n := testing.AllocsPerRun(100, func() { encode(k, &tc.e) }); n != tc.allocs {
			t.Errorf("%v: %v allocations per encode, want %v", tc.e.Records, n, tc.allocs)
		}
	}
}

// checkChains checks the shards' index: each map key is its head's name,
// each chain holds entries of that name only, one per type, each in the
// ring at its slot, and the ring holds no entry outside the chains.
func checkChains(t *testing.T, c *Cache) {
	t.Helper()
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		inChains := 0
		for k, head := range s.m {
			if head.name() != k {
				t.Fatalf("key %q holds a chain of %q", k, head.name())
			}
			if got := c.shardOf([]byte(k)); got != s {
				t.Fatalf("%q in the wrong shard", k)
			}
			types := map[uint16]bool{}
			for e := head; e != nil; e = e.next.Load() {
				if len(types) == MaxTypes {
					t.Fatalf("chain of %q longer than %d", k, MaxTypes)
				}
				if e.name() != k || types[e.qtype] {
					t.Fatalf("chain of %q: %q type %d (seen %v)", k, e.name(), e.qtype, types[e.qtype])
				}
				types[e.qtype] = true
				if e.slot < 0 || int(e.slot) >= len(s.ring) || s.ring[e.slot] != e {
					t.Fatalf("%q type %d not in the ring at its slot %d", k, e.qtype, e.slot)
				}
				inChains++
			}
		}
		inRing := 0
		for _, e := range s.ring {
			if e != nil {
				inRing++
			}
		}
		s.mu.RUnlock()
		if inRing != inChains {
			t.Fatalf("shard %d: %d entries in the ring, %d in the chains", i, inRing, inChains)
		}
	}
}

// TestNameChains: the entries of a name's types share one map slot,
// chained; replacing one, an NXDOMAIN beside them, and eviction (of
// heads, middles and tails of chains) keep the index whole
// (checkChains), and a Name finds each type as Get does.
func TestNameChains(t *testing.T) {
	clk := newClock()
	c := newCache(clk, Options{Size: 64 << 10})
	soa := "example.com. 300 IN SOA ns.example.com. h.example.com. 1 2 3 4 300"
	types := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeMX, 0}
	put := func(i int, qtype uint16) {
		name := fmt.Sprintf("N%d.Example.com.", i%97) // mixed case: one key
		switch qtype {
		case dns.TypeA:
			c.Put(name, qtype, Entry{Records: rrs(t, fmt.Sprintf("%s 300 IN A 192.0.2.%d", name, i%256)), Rank: RankAuthAnswer})
		case dns.TypeAAAA:
			c.Put(name, qtype, Entry{Records: rrs(t, fmt.Sprintf("%s 300 IN AAAA 2001:db8::%x", name, i)), Rank: RankAuthAnswer})
		case dns.TypeTXT:
			c.Put(name, qtype, Entry{Records: rrs(t, fmt.Sprintf("%s 300 IN TXT \"%d\"", name, i)), Rank: RankAuthAnswer})
		case dns.TypeMX:
			c.Put(name, qtype, Entry{Kind: NoData, Records: rrs(t, soa), Rank: RankAuthority})
		case 0:
			c.Put(name, dns.TypeSRV, Entry{Kind: NXDomain, Records: rrs(t, soa), Rank: RankAuthority})
		}
	}
	for i := 0; i < 3000; i++ {
		put(i, types[(i*7)%len(types)])
		if i%50 == 0 {
			checkChains(t, c)
		}
	}
	checkChains(t, c)
	// The name of the last A stored: each of its types found by one
	// Name as by Get, whatever the case asked.
	n := c.Lookup("n42.example.COM.")
	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeTXT, dns.TypeMX, dns.TypeSRV, dns.TypeNS} {
		got, gok := n.Get(qt)
		want, wok := c.Get("n42.example.COM.", qt)
		if gok != wok || fmt.Sprint(got.Records) != fmt.Sprint(want.Records) || got.Kind != want.Kind {
			t.Errorf("type %d: Name.Get %v %v, Get %v %v", qt, got, gok, want, wok)
		}
	}
	put(3000*97+42, dns.TypeA)
	if e, ok := c.Lookup("n42.example.com.").Get(dns.TypeA); !ok || e.Records[0].(*dns.A).A.String() != fmt.Sprintf("192.0.2.%d", (3000*97+42)%256) {
		t.Errorf("after a replacement: %v %v", e, ok)
	}
	// Everything evicted: the map and ring empty.
	clk.advance(time.Hour)
	for i := 0; i < 3000; i++ {
		putA(t, c, i)
	}
	checkChains(t, c)
	if _, ok := (Name{}).GetStale(dns.TypeA); ok {
		t.Error("the zero Name holds something")
	}
}

// TestMaxTypes: a name holds at most MaxTypes entries; storing more
// drops the least recently stored, whatever its type.
func TestMaxTypes(t *testing.T) {
	c := New(Options{})
	soa := "example.com. 300 IN SOA ns.example.com. h.example.com. 1 2 3 4 300"
	const name = "many.example.com."
	for qt := uint16(1000); qt < 1000+MaxTypes+8; qt++ {
		c.Put(name, qt, Entry{Kind: NoData, Records: rrs(t, soa), Rank: RankAuthority})
		checkChains(t, c)
	}
	if got := c.Len(); got != MaxTypes {
		t.Errorf("%d entries held, want %d", got, MaxTypes)
	}
	n := c.Lookup(name)
	for qt := uint16(1000); qt < 1000+MaxTypes+8; qt++ {
		_, ok := n.GetExact(qt)
		if want := qt >= 1008; ok != want {
			t.Errorf("type %d held %v, want %v", qt, ok, want)
		}
	}
}

// TestLookupWire: a name in wire form finds what Lookup of its
// presentation form finds, in any case, with Owner the name as held;
// a name the cache does not hold is plain with no Owner; names with
// octets a presentation form escapes, and malformed ones, are not plain.
// A lookup allocates nothing.
func TestLookupWire(t *testing.T) {
	c := New(Options{})
	c.Put("ns1.example.com.", dns.TypeA, Entry{Records: rrs(t, "ns1.example.com. 300 IN A 192.0.2.1"), Rank: RankAdditional})
	c.Put("x_y-1.example.com.", dns.TypeAAAA, Entry{Records: rrs(t, "x_y-1.example.com. 300 IN AAAA 2001:db8::1"), Rank: RankAdditional})
	c.Put(".", dns.TypeNS, Entry{Records: rrs(t, ". 300 IN NS a.root."), Rank: RankAdditional})
	wire := func(name string) []byte {
		b := make([]byte, 256)
		n, err := dns.PackDomainName(name, b, 0, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		return b[:n]
	}
	for _, tc := range []struct {
		wire  []byte
		owner string
		qtype uint16
		plain bool
	}{
		{wire("ns1.example.com."), "ns1.example.com.", dns.TypeA, true},
		{wire("NS1.Example.COM."), "ns1.example.com.", dns.TypeA, true},
		{wire("X_Y-1.example.com."), "x_y-1.example.com.", dns.TypeAAAA, true},
		{wire("."), ".", dns.TypeNS, true},
		{wire("ns2.example.com."), "", 0, true},
		{wire(`ns\.1.example.com.`), "", 0, false},
		{wire(`ns\0001.example.com.`), "", 0, false},
		{wire("ns1*.example.com."), "", 0, false},
		{wire("ns1.example.com.")[:5], "", 0, false},            // cut short
		{[]byte{0xC0, 0x0C}, "", 0, false},                      // a pointer
		{append([]byte{64}, make([]byte, 65)...), "", 0, false}, // a label too long
	} {
		n, plain := c.LookupWire(tc.wire)
		if plain != tc.plain || n.Owner() != tc.owner {
			t.Errorf("% x: plain %v, owner %q; want %v, %q", tc.wire, plain, n.Owner(), tc.plain, tc.owner)
			continue
		}
		if tc.qtype == 0 {
			continue
		}
		got, ok := n.GetExact(tc.qtype)
		want, _ := c.GetExact(tc.owner, tc.qtype)
		if !ok || fmt.Sprint(got.Records) != fmt.Sprint(want.Records) {
			t.Errorf("%q: %v %v, Get %v", tc.owner, got.Records, ok, want.Records)
		}
	}
	w := wire("NS1.example.com.")
	if a := testing.AllocsPerRun(100, func() { c.LookupWire(w) }); a != 0 {
		t.Errorf("%v allocations per LookupWire", a)
	}
}
