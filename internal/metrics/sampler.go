package metrics

import (
	"bytes"
	"net/netip"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/tern-dns/tern/internal/zone"
)

// SampleEvery is how many queries a worker answers per query it
// samples for the status page's busiest names and clients
// (Shard.Sampled). A sample is a copy of the name and the client's
// address into the worker's own buffer (Shard.Sample), no lock and no
// shared write, some 10-20 ns: one in 16 costs about a nanosecond a
// query, and a quiet server still shows its names within seconds.
const SampleEvery = 16

// sampleBufLen is how many samples a worker buffers between two
// hand-overs to the sampler (at most one per Flush, and none while the
// sampler has not taken the last one): samples taken while both buffers
// are busy are dropped, which keeps the sampler's work per second
// bounded whatever the traffic (the busiest names stay the busiest).
const sampleBufLen = 32

// topSize bounds each table of the sampler: memory stays about 20 KB
// whatever the traffic.
const topSize = 64

// sample is one sampled query: its name in wire form and its client.
type sample struct {
	name   [255]byte
	n      uint8
	client netip.Addr
}

// sampleBuf is a worker's samples since its last hand-over.
type sampleBuf struct {
	n int
	s [sampleBufLen]sample
}

// workerSamples are a Shard's two sample buffers. The worker fills
// bufs[cur]; Flush hands it to the sampler by storing cur+1 in ready
// (when ready is 0: the sampler took the last one) and goes on with the
// other buffer. The sampler reads the buffer ready names and stores 0:
// the atomic is the Shard's own (one writer at a time, the owner or the
// sampler), so the query path shares nothing with other workers.
type workerSamples struct {
	bufs  [2]sampleBuf
	cur   uint8
	ready atomic.Uint32
}

// Sampled reports whether the query just counted is to be sampled
// (Sample): one in SampleEvery of the worker's, the first one included.
func (m *Shard) Sampled() bool {
	m.sampleIn--
	if m.sampleIn > 0 {
		return false
	}
	m.sampleIn = SampleEvery
	return true
}

// Sample keeps a query's name (wire form, as wire.Query.Name gives it)
// and client in the worker's buffer, for the sampler to take after the
// next Flush; dropped when the buffer is full.
func (m *Shard) Sample(name []byte, client netip.Addr) {
	b := &m.samples.bufs[m.samples.cur]
	if b.n == sampleBufLen || len(name) > 255 {
		return
	}
	e := &b.s[b.n]
	e.n = uint8(copy(e.name[:], name))
	e.client = client
	b.n++
}

// handOver gives the current sample buffer to the sampler if it has
// samples and the sampler took the last one: called by Flush.
func (m *Shard) handOver() {
	ws := &m.samples
	if ws.bufs[ws.cur].n == 0 || ws.ready.Load() != 0 {
		return
	}
	ws.ready.Store(uint32(ws.cur) + 1)
	ws.cur ^= 1
	ws.bufs[ws.cur].n = 0
}

// sampler keeps the names and clients seen most often among the sampled
// queries, by the space-saving algorithm (Metwally et al.): a table of
// topSize counters; a new key takes the place of the least counted one,
// with its count plus one, so that a key that is really frequent cannot
// be missed. Counts are halved every minute (decay), so the table
// follows what is busy now. Fixed arrays: nothing is allocated per
// sample. It is fed by collect, from the workers' buffers, on the
// status goroutine (Set.Tick); mu orders that with the readers.
type sampler struct {
	mu      sync.Mutex
	names   [topSize]nameCount
	nnames  int
	clients [topSize]clientCount
	nclient int
	// total is the samples counted since the start.
	total uint64
}

type nameCount struct {
	name  [255]byte
	n     uint8
	count uint64
}

type clientCount struct {
	addr  netip.Addr
	count uint64
}

// collect takes the sample buffers the shards handed over.
func (s *sampler) collect(shards []*Shard) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range shards {
		r := m.samples.ready.Load()
		if r == 0 {
			continue
		}
		b := &m.samples.bufs[r-1]
		for i := range b.n {
			s.addName(b.s[i].name[:b.s[i].n])
			s.addClient(b.s[i].client)
		}
		s.total += uint64(b.n)
		m.samples.ready.Store(0)
	}
}

func (s *sampler) addName(name []byte) {
	low := -1
	for i := range s.nnames {
		e := &s.names[i]
		if int(e.n) == len(name) && bytes.Equal(e.name[:e.n], name) {
			e.count++
			return
		}
		if low < 0 || e.count < s.names[low].count {
			low = i
		}
	}
	var count uint64 = 1
	if s.nnames < topSize {
		low = s.nnames
		s.nnames++
	} else {
		count = s.names[low].count + 1
	}
	e := &s.names[low]
	e.n = uint8(copy(e.name[:], name))
	e.count = count
}

func (s *sampler) addClient(a netip.Addr) {
	low := -1
	for i := range s.nclient {
		e := &s.clients[i]
		if e.addr == a {
			e.count++
			return
		}
		if low < 0 || e.count < s.clients[low].count {
			low = i
		}
	}
	var count uint64 = 1
	if s.nclient < topSize {
		low = s.nclient
		s.nclient++
	} else {
		count = s.clients[low].count + 1
	}
	s.clients[low] = clientCount{addr: a, count: count}
}

// decay halves every count, dropping what reaches 0.
func (s *sampler) decay() {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := 0
	for i := range s.nnames {
		if s.names[i].count /= 2; s.names[i].count > 0 {
			s.names[j] = s.names[i]
			j++
		}
	}
	s.nnames = j
	j = 0
	for i := range s.nclient {
		if s.clients[i].count /= 2; s.clients[i].count > 0 {
			s.clients[j] = s.clients[i]
			j++
		}
	}
	s.nclient = j
}

// Top is one of the busiest names or clients: its sampled count (each
// sample stands for about SampleEvery queries; counts are halved every
// minute).
type Top struct {
	Key   string `json:"key"`
	Count uint64 `json:"count"`
}

// top returns the n busiest names and clients, busiest first.
func (s *sampler) top(n int) (names, clients []Top) {
	s.mu.Lock()
	for i := range s.nnames {
		e := &s.names[i]
		names = append(names, Top{Key: zone.NameString(e.name[:e.n]), Count: e.count})
	}
	for i := range s.nclient {
		clients = append(clients, Top{Key: s.clients[i].addr.String(), Count: s.clients[i].count})
	}
	s.mu.Unlock()
	for _, l := range []*[]Top{&names, &clients} {
		sort.Slice(*l, func(i, j int) bool {
			a, b := (*l)[i], (*l)[j]
			return a.Count > b.Count || a.Count == b.Count && a.Key < b.Key
		})
		if len(*l) > n {
			*l = (*l)[:n]
		}
	}
	return names, clients
}
