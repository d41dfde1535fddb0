package metrics

import "time"

// Snapshot is the counters' sums at one moment, as the status page and
// tests read them.
type Snapshot struct {
	Time time.Time `json:"time"`
	// Queries are the queries answered per server ("auth",
	// "resolver"), Rcodes and Qtypes all servers' by RCODE and QTYPE
	// name, Dropped the queries given no answer by reason.
	Queries map[string]uint64 `json:"queries"`
	Rcodes  map[string]uint64 `json:"rcodes"`
	Qtypes  map[string]uint64 `json:"qtypes"`
	Dropped map[string]uint64 `json:"dropped"`
	// CacheHits and CacheMisses are the resolver's response-cache
	// lookups.
	CacheHits   uint64 `json:"cache_hits"`
	CacheMisses uint64 `json:"cache_misses"`
	// Resolutions counts the resolver's resolutions.
	Resolutions uint64       `json:"resolutions"`
	Zones       []ZoneStatus `json:"zones"`
}

// ZoneStatus is a zone's state with its queries and last event.
type ZoneStatus struct {
	ZoneState
	Queries uint64 `json:"queries"`
	// LastEvent is the zone's last load, refresh or transfer ("" when
	// none was counted), at LastAt, failed with LastError.
	LastEvent string    `json:"last_event,omitempty"`
	LastAt    time.Time `json:"last_at,omitzero"`
	LastError string    `json:"last_error,omitempty"`
}

// Snapshot sums the counters now.
func (s *Set) Snapshot() Snapshot {
	t := s.sum()
	snap := Snapshot{Time: time.Now(), Queries: map[string]uint64{}, Rcodes: map[string]uint64{},
		Qtypes: map[string]uint64{}, Dropped: map[string]uint64{}}
	for srv := Server(0); srv < numServers; srv++ {
		c := &t.c[srv]
		var n uint64
		for tr := 0; tr < 2; tr++ {
			for q := 0; q < numQtypes; q++ {
				for rc := 0; rc < numRcodes; rc++ {
					if v := c[offQueries+(tr*numQtypes+q)*numRcodes+rc]; v != 0 {
						n += v
						snap.Rcodes[rcodeNames[rc]] += v
						snap.Qtypes[qtypeName(q)] += v
					}
				}
			}
		}
		snap.Queries[srv.String()] = n
		for d := Drop(0); d < numDrops; d++ {
			snap.Dropped[dropNames[d]] += c[offDrops+int(d)]
		}
	}
	snap.CacheHits, snap.CacheMisses = t.c[Resolver][offCache], t.c[Resolver][offCache+1]
	for i := range s.resolutions.b {
		snap.Resolutions += s.resolutions.b[i].Load()
	}
	zs, last := s.zoneStates()
	s.mu.Lock()
	idx := make(map[string]uint32, len(zs))
	for _, z := range zs {
		idx[z.Origin] = s.zoneIdx[z.Origin]
	}
	s.mu.Unlock()
	for _, z := range zs {
		st := ZoneStatus{ZoneState: z}
		if i := idx[z.Origin]; i != 0 && int(i) < len(t.zones) {
			st.Queries = t.zones[i]
		}
		if l, ok := last[z.Origin]; ok {
			st.LastEvent, st.LastAt, st.LastError = l.Event.String(), l.At, l.Err
		}
		snap.Zones = append(snap.Zones, st)
	}
	return snap
}
