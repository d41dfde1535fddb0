package cache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
)

// respQuery is a query as a client sends it.
type respQuery struct {
	name   string
	qtype  uint16
	id     uint16
	rd, cd bool
	edns   uint16 // EDNS payload size; 0: no OPT
	do     bool
}

func (rq respQuery) pack(t testing.TB) ([]byte, *wire.Query) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(rq.name, rq.qtype)
	m.Id, m.RecursionDesired, m.CheckingDisabled = rq.id, rq.rd, rq.cd
	if rq.edns > 0 {
		m.SetEdns0(rq.edns, rq.do)
	}
	pkt, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	q := new(wire.Query)
	if res, rc := q.Parse(pkt); res != wire.Answer {
		t.Fatalf("parse: %v %d", res, rc)
	}
	return pkt, q
}

// limitOf is the size limit a recursor would build the response for.
func limitOf(q *wire.Query) int {
	if !q.EDNS {
		return 512
	}
	return min(max(512, int(q.UDPSize)), 1232)
}

// reply packs a response to the query pkt with the records given
// (answer, authority, additional), compressed.
func reply(t testing.TB, pkt []byte, rcode int, an, ns, ar []dns.RR) []byte {
	t.Helper()
	q := new(dns.Msg)
	if err := q.Unpack(pkt); err != nil {
		t.Fatal(err)
	}
	m := new(dns.Msg)
	m.SetRcode(q, rcode)
	m.RecursionAvailable = true
	m.Answer, m.Ns, m.Extra = an, ns, ar
	if o := q.IsEdns0(); o != nil {
		m.SetEdns0(1232, o.Do())
	}
	out, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// stored puts resp.
func stored(t testing.TB, c *Responses, rq respQuery, resp []byte, now time.Time) {
	pkt, q := rq.pack(t)
	c.Put(q, pkt, limitOf(q), resp, now)
}

// ttls returns the TTLs of the records of msg, OPT left out.
func ttls(t testing.TB, msg []byte) []uint32 {
	offs, ok := wire.TTLOffsets(msg, nil)
	if !ok {
		t.Fatalf("TTLOffsets: malformed")
	}
	var out []uint32
	for _, o := range offs {
		out = append(out, binary.BigEndian.Uint32(msg[o:]))
	}
	return out
}

func TestResponses(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	base := respQuery{name: "www.example.com.", qtype: dns.TypeA, id: 1, rd: true, edns: 1232}
	answer := func(t testing.TB, pkt []byte) []byte {
		return reply(t, pkt, dns.RcodeSuccess,
			rrs(t, "www.example.com. 300 IN CNAME web.example.com.", "web.example.com. 100 IN A 192.0.2.1"),
			rrs(t, "example.com. 3600 IN NS ns.example.com."),
			rrs(t, "ns.example.com. 3600 IN A 192.0.2.53"))
	}
	with := func(f func(*respQuery)) respQuery { rq := base; f(&rq); return rq }
	for _, tc := range []struct {
		name    string
		store   respQuery
		resp    func(t testing.TB, pkt []byte) []byte // default answer
		ask     respQuery
		after   time.Duration
		miss    bool
		ttls    []uint32
		refresh bool
	}{{
		name: "a hit: ID and question of the query, TTLs as stored",
		ask:  with(func(q *respQuery) { q.id = 4242 }), ttls: []uint32{300, 100, 3600, 3600},
	}, {
		name: "TTLs decremented by the age, OPT untouched",
		ask:  base, after: 40*time.Second + 900*time.Millisecond, ttls: []uint32{260, 60, 3560, 3560},
	}, {
		name: "the question's case is the client's; the key is case-folded",
		ask:  with(func(q *respQuery) { q.name = "WWW.Example.COM." }), ttls: []uint32{300, 100, 3600, 3600},
	}, {
		name: "stored on the first Put (it took a resolution: no second miss awaited, unlike auth.Cache)",
		ask:  base, ttls: []uint32{300, 100, 3600, 3600},
	}, {
		name: "expired with its smallest TTL",
		ask:  base, after: 100 * time.Second, miss: true,
	}, {
		name: "within the last tenth of the smallest TTL: reported for prefetch",
		ask:  base, after: 91 * time.Second, ttls: []uint32{209, 9, 3509, 3509}, refresh: true,
	}, {
		name: "before the last tenth: not reported",
		ask:  base, after: 89 * time.Second, ttls: []uint32{211, 11, 3511, 3511},
	}, {
		name: "another type misses", ask: with(func(q *respQuery) { q.qtype = dns.TypeAAAA }), miss: true,
	}, {
		name: "another name misses", ask: with(func(q *respQuery) { q.name = "www.example.net." }), miss: true,
	}, {
		name: "RD in the key", ask: with(func(q *respQuery) { q.rd = false }), miss: true,
	}, {
		name: "CD in the key", ask: with(func(q *respQuery) { q.cd = true }), miss: true,
	}, {
		name: "DO in the key", ask: with(func(q *respQuery) { q.do = true }), miss: true,
	}, {
		name: "EDNS presence in the key", ask: with(func(q *respQuery) { q.edns = 0 }), miss: true,
	}, {
		name: "size class in the key", ask: with(func(q *respQuery) { q.edns = 800 }), miss: true,
	}, {
		name: "the same size class hits", ask: with(func(q *respQuery) { q.edns = 4000 }), ttls: []uint32{300, 100, 3600, 3600},
	}, {
		name:  "NXDOMAIN cached by its SOA's TTL",
		store: with(func(q *respQuery) { q.name = "nx.example.com." }),
		resp: func(t testing.TB, pkt []byte) []byte {
			return reply(t, pkt, dns.RcodeNameError, nil, rrs(t, "example.com. 60 IN SOA ns.example.com. h.example.com. 1 2 3 4 60"), nil)
		},
		ask: with(func(q *respQuery) { q.name = "nx.example.com." }), after: 10 * time.Second, ttls: []uint32{50},
	}, {
		name: "SERVFAIL not cached",
		resp: func(t testing.TB, pkt []byte) []byte {
			return reply(t, pkt, dns.RcodeServerFailure, rrs(t, "www.example.com. 300 IN A 192.0.2.1"), nil, nil)
		},
		ask: base, miss: true,
	}, {
		name: "a response with a TTL of 0 not cached",
		resp: func(t testing.TB, pkt []byte) []byte {
			return reply(t, pkt, dns.RcodeSuccess, rrs(t, "www.example.com. 0 IN A 192.0.2.1"), nil, nil)
		},
		ask: base, miss: true,
	}, {
		name: "a response without records not cached",
		resp: func(t testing.TB, pkt []byte) []byte { return reply(t, pkt, dns.RcodeSuccess, nil, nil, nil) },
		ask:  base, miss: true,
	}, {
		name: "a response to another question not cached",
		resp: func(t testing.TB, pkt []byte) []byte {
			other, _ := respQuery{name: "www.example.org.", qtype: dns.TypeA, rd: true, edns: 1232}.pack(t)
			return reply(t, other, dns.RcodeSuccess, rrs(t, "www.example.org. 300 IN A 192.0.2.1"), nil, nil)
		},
		ask: base, miss: true,
	}, {
		name:  "a response larger than the client's limit not served",
		store: with(func(q *respQuery) { q.edns = 4096; q.qtype = dns.TypeTXT }),
		resp: func(t testing.TB, pkt []byte) []byte {
			var an []dns.RR
			for i := 0; i < 20; i++ {
				an = append(an, rrs(t, `www.example.com. 300 IN TXT "`+string(bytes.Repeat([]byte{'x'}, 100))+`"`)...)
			}
			return reply(t, pkt, dns.RcodeSuccess, an, nil, nil)
		},
		ask: with(func(q *respQuery) { q.edns = 4096; q.qtype = dns.TypeTXT }), miss: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewResponses(64)
			store := tc.store
			if store.name == "" {
				store = base
			}
			spkt, sq := store.pack(t)
			resp := answer
			if tc.resp != nil {
				resp = tc.resp
			}
			r := resp(t, spkt)
			c.Put(sq, spkt, limitOf(sq), r, t0)
			pkt, q := tc.ask.pack(t)
			out := make([]byte, 0, 65535)
			got, refresh := c.Get(q, pkt, limitOf(q), t0.Add(tc.after), out)
			if (got == nil) != tc.miss {
				t.Fatalf("hit %v, want %v", got != nil, !tc.miss)
			}
			if tc.miss {
				return
			}
			if refresh != tc.refresh {
				t.Errorf("refresh %v, want %v", refresh, tc.refresh)
			}
			// Wire-level: the stored response with the query's ID and
			// question and the TTLs aged, nothing else changed.
			want := append([]byte(nil), r...)
			copy(want, pkt[:2])
			copy(want[wire.HeaderLen:], pkt[wire.HeaderLen:q.QuestionEnd])
			offs, _ := wire.TTLOffsets(want, nil)
			for i, o := range offs {
				binary.BigEndian.PutUint32(want[o:], tc.ttls[i])
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got  %x\nwant %x", got, want)
			}
			if g := ttls(t, got); len(g) != len(tc.ttls) {
				t.Errorf("TTLs %v, want %v", g, tc.ttls)
			}
			m := new(dns.Msg)
			if err := m.Unpack(got); err != nil {
				t.Fatalf("the hit does not parse: %v", err)
			}
			if m.Id != tc.ask.id || m.Question[0].Name != dns.Fqdn(tc.ask.name) {
				t.Errorf("ID %d question %s, want %d %s", m.Id, m.Question[0].Name, tc.ask.id, tc.ask.name)
			}
		})
	}
}

// TestResponsesPrefetchOnce: the refresh report comes once per stored
// response, and again after a fresh Put.
func TestResponsesPrefetchOnce(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	rq := respQuery{name: "www.example.com.", qtype: dns.TypeA, rd: true}
	pkt, q := rq.pack(t)
	r := reply(t, pkt, dns.RcodeSuccess, rrs(t, "www.example.com. 100 IN A 192.0.2.1"), nil, nil)
	c := NewResponses(64)
	stored(t, c, rq, r, t0)
	out := make([]byte, 0, 512)
	late := t0.Add(95 * time.Second)
	for i, want := range []bool{true, false, false} {
		if got, refresh := c.Get(q, pkt, 512, late, out); got == nil || refresh != want {
			t.Fatalf("hit %d: %v refresh %v, want %v", i, got != nil, refresh, want)
		}
	}
	c.Put(q, pkt, 512, r, late)
	if _, refresh := c.Get(q, pkt, 512, late.Add(91*time.Second), out); !refresh {
		t.Errorf("not reported after a fresh Put")
	}
}

// TestResponsesConfirmBytes: a slot whose tag matches but whose stored
// question differs is a miss (a tag collision never answers another
// name), and a response stored under the colliding tag takes the slot:
// it hits with its own bytes, and the key it pushed out misses.
func TestResponsesConfirmBytes(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	a := respQuery{name: "www.example.com.", qtype: dns.TypeA, rd: true}
	for _, b := range []respQuery{
		{name: "www.example.net.", qtype: dns.TypeA, rd: true},
		{name: "www.example.com.", qtype: dns.TypeAAAA, rd: true},
		// a question longer than the stored response's, and shorter
		{name: "a-much-longer-name-than-the-stored-one.example.com.", qtype: dns.TypeA, rd: true},
		{name: "x.", qtype: dns.TypeA, rd: true},
	} {
		c := NewResponses(4) // one set
		apkt, _ := a.pack(t)
		stored(t, c, a, reply(t, apkt, dns.RcodeSuccess, rrs(t, "www.example.com. 100 IN A 192.0.2.1"), nil, nil), t0)
		bpkt, bq := b.pack(t)
		// Forge the collision: the slot of a now claims b's tag.
		set := &c.sets[0]
		w := set.way(tagOf(c.hash(mustQuery(t, apkt), respVariant(bq, 512))))
		if w < 0 {
			t.Fatal("a not stored")
		}
		set.tag[w] = tagOf(c.hash(bq, respVariant(bq, 512)))
		out := make([]byte, 0, 512)
		if got, _ := c.Get(bq, bpkt, 512, t0, out); got != nil {
			t.Errorf("a colliding tag answered %s %s with %x", b.name, dns.Type(b.qtype), got)
		}
		bresp := reply(t, bpkt, dns.RcodeSuccess, rrs(t, b.name+" 100 IN "+dns.Type(b.qtype).String()+" "+map[uint16]string{dns.TypeA: "192.0.2.2", dns.TypeAAAA: "2001:db8::2"}[b.qtype]), nil, nil)
		stored(t, c, b, bresp, t0)
		if got, _ := c.Get(bq, bpkt, 512, t0, out); !bytes.Equal(got, bresp) {
			t.Errorf("%s %s stored under the colliding tag: got %x, want %x", b.name, dns.Type(b.qtype), got, bresp)
		}
		aq := mustQuery(t, apkt)
		if got, _ := c.Get(aq, apkt, 512, t0, out); got != nil {
			t.Errorf("%s answered after its slot went to %s: %x", a.name, b.name, got)
		}
		if n, _ := c.Held(); n != 1 || set.tag[w] != tagOf(c.hash(bq, respVariant(bq, 512))) {
			t.Errorf("%d responses held, slot %d tag %#x: want 1, %s's tag in a's slot", n, w, set.tag[w], b.name)
		}
	}
}

func mustQuery(t testing.TB, pkt []byte) *wire.Query {
	q := new(wire.Query)
	if res, _ := q.Parse(pkt); res != wire.Answer {
		t.Fatal("parse")
	}
	return q
}

// TestResponsesTruncated: a truncated response is not served to a client
// that takes more than it was built for.
func TestResponsesTruncated(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	small := respQuery{name: "big.example.com.", qtype: dns.TypeTXT, rd: true, edns: 1300}
	pkt, q := small.pack(t)
	r := reply(t, pkt, dns.RcodeSuccess, rrs(t, `big.example.com. 100 IN TXT "x"`), nil, nil)
	r[2] |= wire.FlagTC >> 8
	c := NewResponses(64)
	c.Put(q, pkt, 1300, r, t0)
	out := make([]byte, 0, 4096)
	if got, _ := c.Get(q, pkt, 1300, t0, out); got == nil {
		t.Errorf("miss for the limit it was built for")
	}
	if got, _ := c.Get(q, pkt, 4000, t0, out); got != nil {
		t.Errorf("a truncated response served to a larger limit in its class")
	}
}

// TestResponsesRing: entries go into a ring that wraps. Once the ring has
// written over an entry its slot misses (it never serves the bytes of
// another), the latest entries hit with their own bytes, and an entry
// that is asked while it is among the oldest quarter moves ahead and
// stays, however many wraps pass.
func TestResponsesRing(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	// 4096 slots, a ring of 64 KiB: about 600 of these entries.
	c := newResponses(4096, minRing)
	type entry struct {
		pkt  []byte
		q    *wire.Query
		resp []byte
	}
	mk := func(name string) entry {
		rq := respQuery{name: name, qtype: dns.TypeA, rd: true, edns: 1232}
		pkt, q := rq.pack(t)
		return entry{pkt, q, reply(t, pkt, dns.RcodeSuccess, rrs(t, name+" 300 IN A 192.0.2.1"), nil, nil)}
	}
	hot := mk("hot.example.")
	c.Put(hot.q, hot.pkt, 1232, hot.resp, t0)
	out := make([]byte, 0, 1232)
	check := func(e entry, want bool) {
		t.Helper()
		got, _ := c.Get(e.q, e.pkt, 1232, t0, out)
		if (got != nil) != want {
			t.Fatalf("%s: hit %v, want %v (ring head %d)", e.q.Name(), got != nil, want, c.head)
		}
		if got != nil && !bytes.Equal(got, e.resp) {
			t.Fatalf("%s: served %x, want %x", e.q.Name(), got, e.resp)
		}
	}
	var all []entry
	for i := range 4000 {
		e := mk(fmt.Sprintf("n%d.example.", i))
		all = append(all, e)
		c.Put(e.q, e.pkt, 1232, e.resp, t0)
		if i%100 == 0 {
			check(hot, true)
		}
	}
	if c.head < 4*uint64(len(c.ring)) {
		t.Fatalf("the ring wrapped %d times, want 4 or more", c.head/uint64(len(c.ring)))
	}
	for i, e := range all {
		if i%100 == 0 {
			// Hits move entries too: the ring moves on while they are read.
			check(hot, true)
		}
		switch {
		case i >= len(all)-200:
			check(e, true)
		case i < len(all)-1000:
			check(e, false)
		default:
			// Between: a hit only with its own bytes (check compares).
			if got, _ := c.Get(e.q, e.pkt, 1232, t0, out); got != nil && !bytes.Equal(got, e.resp) {
				t.Fatalf("%s: served %x, want %x", e.q.Name(), got, e.resp)
			}
		}
	}
	// The rule, not the bytes, decides: an entry the ring has passed
	// over misses even where its bytes happen to be intact.
	c.head += uint64(len(c.ring))
	check(hot, false)
}

// TestResponsesTooLarge: a response over a quarter of the ring is not
// stored (nor does it take ring space).
func TestResponsesTooLarge(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	rq := respQuery{name: "big.example.", qtype: dns.TypeTXT, rd: true, edns: 1232}
	pkt, q := rq.pack(t)
	var an []dns.RR
	for range 200 {
		an = append(an, rrs(t, `big.example. 300 IN TXT "`+strings.Repeat("x", 100)+`"`)...)
	}
	c := newResponses(64, minRing)
	c.Put(q, pkt, 65535, reply(t, pkt, dns.RcodeSuccess, an, nil, nil), t0)
	if c.head != 0 || c.sets[0].tag != [Ways]uint32{} {
		t.Errorf("a response of more than %d bytes stored (ring head %d)", minRing/4, c.head)
	}
}

// TestResponsesZeroAllocs: a hit allocates nothing.
func TestResponsesZeroAllocs(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	rq := respQuery{name: "www.example.com.", qtype: dns.TypeA, rd: true, edns: 1232}
	pkt, q := rq.pack(t)
	c := NewResponses(0)
	stored(t, c, rq, reply(t, pkt, dns.RcodeSuccess, rrs(t, "www.example.com. 300 IN A 192.0.2.1"), nil, nil), t0)
	out := make([]byte, 0, 1232)
	now := t0.Add(time.Second)
	if n := testing.AllocsPerRun(1000, func() {
		if got, _ := c.Get(q, pkt, 1232, now, out); got == nil {
			t.Fatal("miss")
		}
	}); n != 0 {
		t.Errorf("%v allocations per hit", n)
	}
}

// BenchmarkResponsesHit is a hit among 1000 cached responses (of 8192
// slots).
func BenchmarkResponsesHit(b *testing.B) {
	t0 := time.Unix(1_800_000_000, 0)
	c := NewResponses(0)
	const n = 1000
	pkts := make([][]byte, n)
	qs := make([]*wire.Query, n)
	for i := range pkts {
		rq := respQuery{name: aName(i), qtype: dns.TypeA, rd: true, edns: 1232}
		pkts[i], qs[i] = rq.pack(b)
		stored(b, c, rq, reply(b, pkts[i], dns.RcodeSuccess, rrs(b, aName(i)+" 300 IN A 192.0.2.1"), nil, nil), t0)
	}
	out := make([]byte, 0, 1232)
	now := t0.Add(time.Second)
	b.ReportAllocs()
	b.ResetTimer()
	misses := 0
	for i := 0; i < b.N; i++ {
		if got, _ := c.Get(qs[i%n], pkts[i%n], 1232, now, out); got == nil {
			misses++
		}
	}
	b.ReportMetric(float64(misses)/float64(b.N), "misses/op")
}

// TestResponsesHeld: Held counts the responses stored (a key stored again
// once, one evicted from a full set not at all) and the bytes of the sets
// and of the ring written; Clear empties the count.
func TestResponsesHeld(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	c := newResponses(64, minRing)
	sets := int64(len(c.sets)) * int64(unsafe.Sizeof(respSet{}))
	if n, b := c.Held(); n != 0 || b != sets {
		t.Fatalf("empty: Held() = %d, %d; want 0, %d", n, b, sets)
	}
	put := func(name string) {
		rq := respQuery{name: name, qtype: dns.TypeA, rd: true, edns: 1232}
		pkt, _ := rq.pack(t)
		stored(t, c, rq, reply(t, pkt, dns.RcodeSuccess, rrs(t, name+" 300 IN A 192.0.2.1"), nil, nil), t0)
	}
	for i := range 20 {
		put(fmt.Sprintf("n%d.example.", i))
	}
	put("n3.example.")
	want := 0
	for i := range c.sets {
		for _, h := range c.sets[i].tag {
			if h != 0 {
				want++
			}
		}
	}
	if n, b := c.Held(); n != want || want == 0 || b != sets+int64(c.head) {
		t.Errorf("Held() = %d, %d; want %d (of 20 names in %d slots), %d", n, b, want, c.Size(), sets+int64(c.head))
	}
	c.Clear()
	if n, _ := c.Held(); n != 0 {
		t.Errorf("after Clear: %d responses held", n)
	}
}

// TestResponsesSetsPointerFree: the sets live outside the Go heap
// (mapped), where the collector does not look: they must hold no
// pointer.
func TestResponsesSetsPointerFree(t *testing.T) {
	var walk func(reflect.Type) string
	walk = func(ty reflect.Type) string {
		switch ty.Kind() {
		case reflect.Array:
			return walk(ty.Elem())
		case reflect.Struct:
			for i := range ty.NumField() {
				if p := walk(ty.Field(i).Type); p != "" {
					return ty.Field(i).Name + "." + p
				}
			}
			return ""
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			return ""
		}
		return ty.String()
	}
	if p := walk(reflect.TypeFor[respSet]()); p != "" {
		t.Errorf("respSet holds a %s", p)
	}
}

// TestResponsesPlacement: bench/run.sh's res-hits asks 10,000 questions
// over and over of a cache of 32768 slots. With one set per hash, the
// sets that five or more of them hash to (about 350 names) missed on
// every round, each miss a resolution; with two sets per hash (the less
// used takes a new response) none should.
func TestResponsesPlacement(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	const n = 10000
	c := NewResponses(32768)
	pkts := make([][]byte, n)
	qs := make([]*wire.Query, n)
	resps := make([][]byte, n)
	for i := range pkts {
		rq := respQuery{name: aName(i), qtype: dns.TypeA, rd: true}
		pkts[i], qs[i] = rq.pack(t)
		resps[i] = reply(t, pkts[i], dns.RcodeSuccess, rrs(t, aName(i)+" 300 IN A 192.0.2.1"), nil, nil)
		c.Put(qs[i], pkts[i], 512, resps[i], t0)
	}
	out := make([]byte, 0, 1232)
	for round := range 2 {
		misses := 0
		for i := range qs {
			if got, _ := c.Get(qs[i], pkts[i], 512, t0, out); got == nil {
				misses++
				c.Put(qs[i], pkts[i], 512, resps[i], t0) // as the resolution would
			}
		}
		if misses > n/1000 {
			t.Errorf("round %d: %d of %d cached questions missed", round, misses, n)
		}
	}
}

// aQuestions returns n queries, of aName(0..n-1) A with RD and without
// EDNS, and their one-record answers.
func aQuestions(tb testing.TB, n int) (pkts, resps [][]byte) {
	pkts, resps = make([][]byte, n), make([][]byte, n)
	for i := range pkts {
		rq := respQuery{name: aName(i), qtype: dns.TypeA, rd: true}
		pkts[i], _ = rq.pack(tb)
		resps[i] = reply(tb, pkts[i], dns.RcodeSuccess, rrs(tb, aName(i)+" 300 IN A 192.0.2.1"), nil, nil)
	}
	return pkts, resps
}

// BenchmarkResponsesHitWide is a hit among 10,000 cached responses in
// 32768 slots, asked in a scattered order, each query parsed into the one
// wire.Query as a worker does: bench/run.sh's res-hits, where the sets
// and the ring no longer fit the CPU's nearer caches (run it under
// callgrind --cache-sim=yes to count the misses per hit).
func BenchmarkResponsesHitWide(b *testing.B) {
	t0 := time.Unix(1_800_000_000, 0)
	const n = 10000
	c := NewResponses(32768)
	pkts, resps := aQuestions(b, n)
	var q wire.Query
	out := make([]byte, 0, 1232)
	for range 2 { // a miss is stored again, as its resolution would be
		for i := range pkts {
			q.Parse(pkts[i])
			if got, _ := c.Get(&q, pkts[i], 512, t0, out); got == nil {
				c.Put(&q, pkts[i], 512, resps[i], t0)
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	misses := 0
	for i := 0; i < b.N; i++ {
		j := i * 7919 % n
		q.Parse(pkts[j])
		if got, _ := c.Get(&q, pkts[j], 512, t0, out); got == nil {
			misses++
		}
	}
	b.ReportMetric(float64(misses)/float64(b.N), "misses/op")
}

// TestResponsesSetLayout: a set is 8 bytes a slot, half a cache line,
// and no set straddles two lines: a hit reads one line before the
// entry. Before, a set took a line (16 bytes a slot: its use time and
// all of its pos), and before that four (64 bytes a slot, the entry's
// header in its slot).
func TestResponsesSetLayout(t *testing.T) {
	var s respSet
	const line = 64
	if size := unsafe.Sizeof(s); size != 8*Ways || line%size != 0 {
		t.Errorf("respSet: %d bytes, want %d, a divisor of a line", size, 8*Ways)
	}
	c := NewResponses(64)
	if p := uintptr(unsafe.Pointer(unsafe.SliceData(c.sets))); p%line != 0 {
		t.Errorf("the mapped sets start at %#x, not on a line", p)
	}
}

// putName stores a one-record answer to name's A question, with RD and
// without EDNS, and returns it with the query.
func putName(t testing.TB, c *Responses, name string, now time.Time) (pkt []byte, q *wire.Query, resp []byte) {
	t.Helper()
	rq := respQuery{name: name, qtype: dns.TypeA, rd: true}
	pkt, q = rq.pack(t)
	resp = reply(t, pkt, dns.RcodeSuccess, rrs(t, name+" 300 IN A 192.0.2.1"), nil, nil)
	c.Put(q, pkt, 512, resp, now)
	return pkt, q, resp
}

// TestResponsesPosWrap: a slot keeps 32 bits of its entry's pos, and
// head runs on past 1<<32. Entries on either side of that wrap hit with
// their own bytes, and an entry from one wrap before misses though its
// bytes lie intact just where its 32 bits point, because the sweeps at
// each sweepEvery emptied its slot. head jumps over the gigabytes
// between, as if the ring had taken them for other sets.
func TestResponsesPosWrap(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	c := newResponses(4096, minRing)
	type stored struct {
		pkt, resp []byte
		q         *wire.Query
	}
	put := func(name string) stored {
		pkt, q, resp := putName(t, c, name, t0)
		return stored{pkt, resp, q}
	}
	out := make([]byte, 0, 512)
	hit := func(e stored) []byte { got, _ := c.Get(e.q, e.pkt, 512, t0, out); return got }

	// Names of one length: every entry takes size bytes, and those
	// ending at a multiple of the ring's length leave its start unwritten.
	old := put("old000.example.")
	size := c.head
	if 21*size > uint64(len(c.ring)) {
		t.Fatalf("entries of %d bytes: 21 do not fit the ring", size)
	}
	c.head = sweepEvery - size
	first := put("one000.example.")
	if c.head != sweepEvery {
		t.Fatalf("head at %d, want %d", c.head, uint64(sweepEvery))
	}
	if n, _ := c.Held(); n != 1 {
		t.Errorf("after the first sweep: %d responses held, want 1 (the sweep's Put's)", n)
	}
	// Twenty entries up to 1<<32, whose last ends at the ring's end:
	// old's bytes, at the ring's start, are intact, and its 32 bits of
	// pos, 0, are where head's are.
	c.head = 1<<32 - 20*size
	var late []stored
	for i := range 20 {
		late = append(late, put(fmt.Sprintf("bef%03d.example.", i)))
	}
	if c.head != 1<<32 || c.head%uint64(len(c.ring)) != 0 {
		t.Fatalf("head at %#x, want 1<<32 at the ring's start", c.head)
	}
	if got := hit(old); got != nil {
		t.Errorf("an entry 4 GiB behind head answered: %x", got)
	}
	if got := hit(first); got != nil {
		t.Errorf("an entry 2 GiB behind head answered: %x", got)
	}
	for i := range 20 {
		late = append(late, put(fmt.Sprintf("aft%03d.example.", i)))
	}
	for _, e := range late {
		if got := hit(e); !bytes.Equal(got, e.resp) {
			t.Errorf("%s: got %x, want %x (head %#x)", e.q.Name(), got, e.resp, c.head)
		}
	}
	if n, _ := c.Held(); n != len(late) {
		t.Errorf("%d responses held, want %d", n, len(late))
	}
}

// replaceInFull stores k0..k3.example. in c, a cache of one set, asks
// k0 again (k1 is then the slot unused longest), calls before, stores
// k4.example., and reports which of k0..k4 hit then.
func replaceInFull(t *testing.T, c *Responses, before func()) (hit []bool) {
	t0 := time.Unix(1_800_000_000, 0)
	type key struct {
		pkt []byte
		q   *wire.Query
	}
	var keys []key
	for i := range 4 {
		pkt, q, _ := putName(t, c, fmt.Sprintf("k%d.example.", i), t0)
		keys = append(keys, key{pkt, q})
	}
	out := make([]byte, 0, 512)
	if got, _ := c.Get(keys[0].q, keys[0].pkt, 512, t0, out); got == nil {
		t.Fatal("k0 missed")
	}
	before()
	pkt, q, _ := putName(t, c, "k4.example.", t0)
	keys = append(keys, key{pkt, q})
	for _, k := range keys {
		got, _ := c.Get(k.q, k.pkt, 512, t0, out)
		hit = append(hit, got != nil)
	}
	return hit
}

// TestResponsesClockWrap: the use times are ticks of a 32-bit clock
// that wraps; a new response in a full set replaces the slot unused
// longest, right across the wrap.
func TestResponsesClockWrap(t *testing.T) {
	c := NewResponses(4) // one set
	// k0..k3 used at ticks 1<<32-2, 1<<32-1, 0, 1, k0 again at 2: k1
	// is the oldest, k2 the smallest tick.
	c.clock = ^uint32(0) - 2
	if hit := replaceInFull(t, c, func() {}); !slices.Equal(hit, []bool{true, false, true, true, true}) {
		t.Errorf("k0..k4 hit %v, want all but k1", hit)
	}
}

// TestResponsesWrittenOverFirst: a slot whose entry the ring wrote over
// holds nothing, and a new response in its set takes it before the
// slot unused longest.
func TestResponsesWrittenOverFirst(t *testing.T) {
	c := newResponses(4, minRing) // one set
	// k1 is unused longest; k4's entry, of k0's size, goes over k0's,
	// at the ring's start.
	if hit := replaceInFull(t, c, func() { c.head = uint64(len(c.ring)) }); !slices.Equal(hit, []bool{false, true, true, true, true}) {
		t.Errorf("k0..k4 hit %v, want all but k0", hit)
	}
}

// BenchmarkResponsesPutFull is a Put of a new response into a full cache
// of 32768 slots whose entries are all intact, the questions in a
// scattered order: each Put's place and victim compare the use times of
// eight slots in use, which are in their entries' headers in the ring
// (run it under callgrind --cache-sim=yes to count the misses per Put).
func BenchmarkResponsesPutFull(b *testing.B) {
	t0 := time.Unix(1_800_000_000, 0)
	const n = 40000
	c := newResponses(32768, 64<<20) // room for 600,000 of these entries: none written over
	pkts, resps := aQuestions(b, n)
	var q wire.Query
	for i := range pkts {
		q.Parse(pkts[i])
		c.Put(&q, pkts[i], 512, resps[i], t0)
	}
	if full, _ := c.Held(); full < c.Size()*9/10 {
		b.Fatalf("%d of %d slots filled", full, c.Size())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := i * 7919 % n
		q.Parse(pkts[j])
		c.Put(&q, pkts[j], 512, resps[j], t0)
	}
}
