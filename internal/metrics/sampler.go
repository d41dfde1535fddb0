package metrics

import (
	"bytes"
	"net/netip"
	"sort"
	"sync"

	"github.com/tern-dns/tern/internal/zone"
)

// SampleEvery is how many queries a worker answers per query it hands
// the status page's busiest names and clients (Shard.Sampled): the
// sampler takes a lock, and a search of its tables (about a microsecond),
// which per query would cost more than the counting; one in 256 costs a
// few nanoseconds a query.
const SampleEvery = 256

// topSize bounds each table of the sampler: memory stays about 20 KB
// whatever the traffic.
const topSize = 64

// Sampled reports whether the query just counted is to be sampled
// (Sample): one in SampleEvery of the worker's.
func (m *Shard) Sampled() bool {
	m.sampleIn--
	if m.sampleIn > 0 {
		return false
	}
	m.sampleIn = SampleEvery
	return m.sampler != nil
}

// Sample hands the sampler a query's name (wire form, as wire.Query.Name
// gives it) and client.
func (m *Shard) Sample(name []byte, client netip.Addr) {
	m.sampler.add(name, client)
}

// sampler keeps the names and clients seen most often among the sampled
// queries, by the space-saving algorithm (Metwally et al.): a table of
// topSize counters; a new key takes the place of the least counted one,
// with its count plus one, so that a key that is really frequent cannot
// be missed. Counts are halved every minute (decay), so the table
// follows what is busy now. Fixed arrays: nothing is allocated per
// sample.
type sampler struct {
	mu      sync.Mutex
	names   [topSize]nameCount
	nnames  int
	clients [topSize]clientCount
	nclient int
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

func (s *sampler) add(name []byte, client netip.Addr) {
	if len(name) > 255 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addName(name)
	s.addClient(client)
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
// stands for about SampleEvery queries).
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
