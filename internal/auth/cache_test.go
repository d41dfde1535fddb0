package auth

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// cacheQueries are questions of every answer kind, in the variants that
// make up a cache key: EDNS or not, DO, NSID, payload sizes that truncate
// or not, case, RD and CD.
func cacheQueries(t testing.TB) [][]byte {
	t.Helper()
	var pkts [][]byte
	add := func(m *dns.Msg) {
		p, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		pkts = append(pkts, p)
	}
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"www.example.test.", dns.TypeA}, {"WwW.ExAmple.TEST.", dns.TypeA},
		{"example.test.", dns.TypeMX}, {"example.test.", dns.TypeANY},
		{"nope.example.test.", dns.TypeA}, {"www.example.test.", dns.TypeMX},
		{"www.sub.example.test.", dns.TypeA}, {"x.wild.example.test.", dns.TypeA},
		{"a.example.test.", dns.TypeA}, {"x.dn.example.test.", dns.TypeA},
		{"www.other.test.", dns.TypeA}, {"big.example.test.", dns.TypeTXT},
		{"www.signed.test.", dns.TypeA}, {"nope.signed.test.", dns.TypeA},
		{"nope.nsec3.test.", dns.TypeA}, {"www.insecure.signed.test.", dns.TypeA},
		{"example.test.", dns.TypeSOA}, // the NOTIFY below asks the same question
	} {
		for i := 0; i < 8; i++ {
			m := query(q.name, q.qtype)
			m.Id = uint16(1000 + i)
			m.RecursionDesired = i&1 != 0
			m.CheckingDisabled = i&2 != 0
			switch i / 2 {
			case 1:
				m.SetEdns0(1232, false)
			case 2:
				m.SetEdns0(4096, true)
			case 3:
				m.SetEdns0(512, true)
				o := m.IsEdns0()
				o.Option = append(o.Option, &dns.EDNS0_NSID{Code: dns.EDNS0NSID})
			}
			add(m)
		}
	}
	// Not cacheable: a NOTIFY (with the question of a cached QUERY, so
	// answering it from the cache would show) and a malformed query.
	n := query("example.test.", dns.TypeSOA)
	n.Opcode = dns.OpcodeNotify
	add(n)
	pkts = append(pkts, []byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3, 'w'})
	return pkts
}

func cacheResponder(t testing.TB) *Responder {
	t.Helper()
	r := testResponder(t, Options{NSID: []byte("n")})
	signed, _ := signedResponder(t)
	zs := append(r.Zones().Zones(), signed.Zones().Zones()...)
	r.Publish(zone.NewSet(zs...))
	return r
}

// TestCacheMatchesUncached: every query, asked often enough to be stored
// and then hit, gets byte for byte the response the uncached path gives,
// with its own ID, RD, CD and case.
func TestCacheMatchesUncached(t *testing.T) {
	r := cacheResponder(t)
	var plain, cached Scratch
	c := NewCache(DefaultCacheSize)
	cached.UseCache(c)
	out1 := make([]byte, 0, BufferSize)
	out2 := make([]byte, 0, BufferSize)
	pkts := cacheQueries(t)
	for round := 0; round < 3; round++ {
		for _, pkt := range pkts {
			want := r.Answer(&plain, pkt, out1, false)
			got := r.Answer(&cached, pkt, out2, false)
			if !bytes.Equal(got, want) {
				t.Fatalf("round %d: query % x\ncached   % x\nuncached % x", round, pkt, got, want)
			}
		}
	}
	// Every cacheable key must have been stored in round 2 and hit in
	// round 3, unless two keys share a slot.
	hits := 0
	for _, pkt := range pkts {
		question := cachedQuestion(&cached, pkt)
		if hit, _ := c.get(r.gen.Load(), &cached.q, question, variant(&cached.q, r.udpLimit(&cached.q)), out2); hit != nil {
			hits++
		}
	}
	if hits < 100 {
		t.Errorf("%d of %d queries are in the cache, want most", hits, len(pkts))
	}
	// TCP never uses the cache: the same question may have a longer answer.
	m := query("big.example.test.", dns.TypeTXT)
	pkt, _ := m.Pack()
	for i := 0; i < 3; i++ {
		r.Answer(&cached, pkt, out2, false)
	}
	if got, want := r.Answer(&cached, pkt, out2, true), r.Answer(&plain, pkt, out1, true); !bytes.Equal(got, want) {
		t.Fatalf("TCP answer differs from the uncached one")
	}
}

// cachedScratch returns a Scratch with a cache of the default size, the
// cache, and a response buffer.
func cachedScratch() (*Scratch, *Cache, []byte) {
	var s Scratch
	c := NewCache(DefaultCacheSize)
	s.UseCache(c)
	return &s, c, make([]byte, 0, BufferSize)
}

// cachedQuestion parses pkt into s and returns its question bytes.
func cachedQuestion(s *Scratch, pkt []byte) []byte {
	s.q.Parse(pkt)
	if s.q.QuestionEnd < wire.HeaderLen {
		return nil
	}
	return pkt[wire.HeaderLen:s.q.QuestionEnd]
}

// TestCachePublish: publishing new zones empties the cache, so no answer
// from the old data is served after the swap.
func TestCachePublish(t *testing.T) {
	r := testResponder(t, Options{})
	var s Scratch
	s.UseCache(NewCache(DefaultCacheSize))
	out := make([]byte, 0, BufferSize)
	pkt, _ := query("www.example.test.", dns.TypeA).Pack()
	for i := 0; i < 3; i++ {
		r.Answer(&s, pkt, out, false)
	}
	z, err := zone.Read(bytes.NewReader([]byte("$ORIGIN example.test.\n@ 3600 SOA ns hm 2 1 1 1 60\n@ NS ns\nns A 192.0.2.53\nwww A 192.0.2.99\n")), "new.zone", "example.test.")
	if err != nil {
		t.Fatal(err)
	}
	r.Publish(zone.NewSet(z))
	var m dns.Msg
	if err := m.Unpack(r.Answer(&s, pkt, out, false)); err != nil {
		t.Fatal(err)
	}
	if len(m.Answer) != 1 || m.Answer[0].(*dns.A).A.String() != "192.0.2.99" {
		t.Fatalf("after Publish the cache answered %v, want the new address", m.Answer)
	}
}

// TestCacheAdmission: a question seen once is not stored, so a stream of
// one-off names never evicts what repeats.
func TestCacheAdmission(t *testing.T) {
	r := testResponder(t, Options{})
	s, c, out := cachedScratch()
	pkt, _ := query("www.example.test.", dns.TypeA).Pack()
	r.Answer(s, pkt, out, false)
	if n := c.used(); n != 0 {
		t.Fatalf("%d slots used after one sighting, want 0", n)
	}
	r.Answer(s, pkt, out, false)
	if stored := c.used(); stored != 1 {
		t.Fatalf("%d slots used after the second sighting, want 1", stored)
	}
}

func TestCacheZeroAllocs(t *testing.T) {
	r := cacheResponder(t)
	var s Scratch
	s.UseCache(NewCache(DefaultCacheSize))
	out := make([]byte, 0, BufferSize)
	pkts := cacheQueries(t)
	if n := testing.AllocsPerRun(20, func() {
		for _, pkt := range pkts {
			r.Answer(&s, pkt, out, false)
		}
	}); n != 0 {
		t.Errorf("%v allocations per round of queries with the cache, want 0", n)
	}
}

// used counts the cache's stored responses.
func (c *Cache) used() int {
	n := 0
	for i := range c.sets {
		for _, h := range c.sets[i].Hash {
			if h != 0 {
				n++
			}
		}
	}
	return n
}

// holds reports whether pkt's response is stored in c.
func (c *Cache) holds(r *Responder, pkt []byte) bool {
	var s Scratch
	question := cachedQuestion(&s, pkt)
	_, w := c.find(c.hash(question, variant(&s.q, r.udpLimit(&s.q))))
	return w >= 0
}

// TestCacheFourWays: four repeating questions that share a set all stay
// stored, however their hits are spread; a fifth replaces the one used
// least recently. (Names whose two sets are one, in a cache of two.)
func TestCacheFourWays(t *testing.T) {
	r := testResponder(t, Options{})
	var s Scratch
	c := NewCache(2 * ways)
	s.UseCache(c)
	out := make([]byte, 0, BufferSize)
	// Find five names of one set (the seed is random, so search).
	var pkts [][]byte
	for i := 0; len(pkts) < ways+1; i++ {
		pkt, _ := query(fmt.Sprintf("n%d.example.test.", i), dns.TypeA).Pack()
		var ps Scratch
		question := cachedQuestion(&ps, pkt)
		h := c.hash(question, variant(&ps.q, r.udpLimit(&ps.q)))
		if c.sets2.First(h) == 0 && c.sets2.Second(h) == 0 {
			pkts = append(pkts, pkt)
		}
	}
	held := func() string {
		var b strings.Builder
		for _, p := range pkts {
			if c.holds(r, p) {
				b.WriteByte('1')
			} else {
				b.WriteByte('0')
			}
		}
		return b.String()
	}
	for round := 0; round < 2; round++ {
		for _, p := range pkts[:ways] {
			r.Answer(&s, p, out, false)
		}
	}
	if got := held(); got != "11110" {
		t.Fatalf("after two sightings of four names, held %s, want 11110", got)
	}
	// Many hits on all but the second, then the fifth name twice: the
	// second is the LRU victim.
	for i := 0; i < 300; i++ {
		r.Answer(&s, pkts[[]int{0, 2, 3}[i%3]], out, false)
	}
	r.Answer(&s, pkts[ways], out, false)
	r.Answer(&s, pkts[ways], out, false)
	if got := held(); got != "10111" {
		t.Fatalf("after hits on names 1, 3, 4 and two sightings of the fifth, held %s, want 10111", got)
	}
}

// TestCachePlacement: a working set of n questions asked over and over
// of a cache of about 3n slots (8192, a worker's default) is stored by
// its second round (a response is stored on its key's second miss) and
// hits on every round after. With one set per hash, the sets that five or
// more of its questions hash to (about 1% of them, some 100 questions)
// missed on every round; with two sets per hash (the less used takes a
// new response) none should.
func TestCachePlacement(t *testing.T) {
	r := testResponder(t, Options{})
	var s Scratch
	c := NewCache(DefaultCacheSize)
	s.UseCache(c)
	out := make([]byte, 0, BufferSize)
	n := c.size() / 3
	pkts := make([][]byte, n)
	for i := range pkts {
		pkts[i], _ = query(fmt.Sprintf("n%d.example.test.", i), dns.TypeA).Pack()
	}
	for round := range 5 {
		misses := 0
		for _, p := range pkts {
			if !c.holds(r, p) {
				misses++
			}
			r.Answer(&s, p, out, false)
		}
		if round >= 2 && misses > 0 {
			t.Errorf("round %d: %d of %d questions missed", round+1, misses, n)
		}
	}
}

// TestCacheLargeAnswer: an answer over a kilobyte within the default UDP
// limit (a root NXDOMAIN with DO is about 1030 bytes) is stored too.
func TestCacheLargeAnswer(t *testing.T) {
	text := "$ORIGIN example.test.\n@ 3600 SOA ns hm 2 1 1 1 60\n@ NS ns\nns A 192.0.2.53\n"
	for i := 0; i < 5; i++ {
		text += "big TXT \"" + strings.Repeat(string(rune('a'+i)), 200) + "\"\n"
	}
	z, err := zone.Read(strings.NewReader(text), "large.zone", "example.test.")
	if err != nil {
		t.Fatal(err)
	}
	r := New(zone.NewSet(z), Options{})
	s, c, out := cachedScratch()
	m := query("big.example.test.", dns.TypeTXT)
	m.SetEdns0(1232, false)
	pkt, _ := m.Pack()
	var resp []byte
	for i := 0; i < 2; i++ {
		resp = r.Answer(s, pkt, out, false)
	}
	if len(resp) <= 1024 || len(resp) > 1232 {
		t.Fatalf("test answer is %d bytes, want 1025-1232", len(resp))
	}
	if !c.holds(r, pkt) {
		t.Fatalf("%d-byte answer not stored", len(resp))
	}
}

// TestAheadPays: a window of names that do not repeat makes the cache
// cold, and answering ahead pays; a window of one repeated name makes it
// warm, and it does not; stored responses past aheadBytes make it pay
// again, as hits then wait on memory. Without a cache it always pays.
func TestAheadPays(t *testing.T) {
	r := testResponder(t, Options{})
	var s Scratch
	if !s.AheadPays() {
		t.Fatal("no cache: ahead does not pay")
	}
	c := NewCache(DefaultCacheSize)
	s.UseCache(c)
	out := make([]byte, 0, BufferSize)
	if s.AheadPays() {
		t.Fatal("new cache: ahead pays")
	}
	for i := 0; i < coldWindow; i++ {
		pkt, _ := query(fmt.Sprintf("nx%d.example.test.", i), dns.TypeA).Pack()
		r.Answer(&s, pkt, out, false)
	}
	if !s.AheadPays() {
		t.Fatal("after a window of one-off names: ahead does not pay")
	}
	pkt, _ := query("www.example.test.", dns.TypeA).Pack()
	for i := 0; i < coldWindow; i++ {
		r.Answer(&s, pkt, out, false)
	}
	if s.AheadPays() {
		t.Fatal("after a window of one repeated name: ahead pays")
	}
	// Large answers, each asked twice (stored), then hit for a window.
	text := "$ORIGIN example.test.\n@ 3600 SOA ns hm 2 1 1 1 60\n@ NS ns\nns A 192.0.2.53\n"
	const names = 400
	for i := 0; i < names; i++ {
		text += fmt.Sprintf("t%d TXT \"%s\" \"%s\" \"%s\"\n", i, strings.Repeat("a", 250), strings.Repeat("b", 250), strings.Repeat("c", 250))
	}
	z, err := zone.Read(strings.NewReader(text), "large.zone", "example.test.")
	if err != nil {
		t.Fatal(err)
	}
	r.Publish(zone.NewSet(z))
	var big [][]byte
	for i := 0; i < names; i++ {
		m := query(fmt.Sprintf("t%d.example.test.", i), dns.TypeTXT)
		m.SetEdns0(1232, false)
		p, _ := m.Pack()
		big = append(big, p)
	}
	for round := 0; round < 3; round++ {
		for _, p := range big {
			r.Answer(&s, p, out, false)
		}
	}
	if c.bytes <= aheadBytes || c.cold {
		t.Fatalf("%d bytes stored (cold %v), want more than %d and warm", c.bytes, c.cold, aheadBytes)
	}
	if !s.AheadPays() {
		t.Fatal("warm cache holding more than aheadBytes: ahead does not pay")
	}
	// Publishing empties the cache, and the count with it.
	r.Publish(zone.NewSet(z))
	r.Answer(&s, big[0], out, false)
	if c.bytes != 0 {
		t.Fatalf("%d bytes counted after a publication, want 0", c.bytes)
	}
}

// BenchmarkCacheHit answers the cacheable queries of cacheQueries, every
// one a hit after two rounds.
func BenchmarkCacheHit(b *testing.B) {
	r := cacheResponder(b)
	s, _, out := cachedScratch()
	pkts := cacheQueries(b)
	for range 2 {
		for _, pkt := range pkts {
			r.Answer(s, pkt, out, false)
		}
	}
	answerCycle(b, r, s, pkts, out)
}

// answerCycle is a benchmark's loop: s answers pkts in turn.
func answerCycle(b *testing.B, r *Responder, s *Scratch, pkts [][]byte, out []byte) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.Answer(s, pkts[i%len(pkts)], out, false)
		i++
	}
}

// BenchmarkCacheMiss answers names that do not repeat within the cache's
// memory of misses (65536 NXDOMAIN questions cycled through a cache of
// 8192 slots): every query a miss that is remembered and not stored, a
// random-subdomain flood's cost of the cache.
func BenchmarkCacheMiss(b *testing.B) {
	r := testResponder(b, Options{})
	s, c, out := cachedScratch()
	pkts := make([][]byte, 65536)
	for i := range pkts {
		pkts[i], _ = query(fmt.Sprintf("nx%d.example.test.", i), dns.TypeA).Pack()
	}
	for _, pkt := range pkts {
		r.Answer(s, pkt, out, false)
	}
	answerCycle(b, r, s, pkts, out)
	if n := c.used(); n != 0 {
		b.Fatalf("%d responses stored, want none", n)
	}
}
