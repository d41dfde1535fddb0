package metrics

import "time"

// Snapshot is the counters' sums at one moment, as tern ctl stats, the
// status page and tests read them: the same counters the Collector
// gives Prometheus.
type Snapshot struct {
	Time time.Time `json:"time"`
	// Queries are the queries answered per server ("auth",
	// "resolver"), Transports, Rcodes and Qtypes all servers' by
	// transport ("udp", "tcp"), RCODE and QTYPE name, Dropped the
	// queries given no answer by reason, Cookies the queries by what
	// their DNS cookie was (metrics.Cookie's names).
	Queries    map[string]uint64 `json:"queries"`
	Transports map[string]uint64 `json:"transports"`
	Rcodes     map[string]uint64 `json:"rcodes"`
	Qtypes     map[string]uint64 `json:"qtypes"`
	Dropped    map[string]uint64 `json:"dropped"`
	Cookies    map[string]uint64 `json:"cookies"`
	// Sizes are the response sizes per server and transport (those
	// with responses).
	Sizes []SizeStats `json:"sizes"`
	// CacheHits and CacheMisses are the resolver's response-cache
	// lookups.
	CacheHits   uint64 `json:"cache_hits"`
	CacheMisses uint64 `json:"cache_misses"`
	// ResolverCache is what the resolver's caches hold now; nil
	// without a resolver.
	ResolverCache *CacheSize `json:"resolver_cache,omitempty"`
	// Resolutions counts the resolver's resolutions, Validation them
	// by DNSSEC outcome (unchecked: validation off), UpstreamTimeouts
	// the exchanges with authorities that timed out.
	Resolutions      uint64            `json:"resolutions"`
	Validation       map[string]uint64 `json:"validation"`
	UpstreamTimeouts uint64            `json:"upstream_timeouts"`
	// ZoneEvents are the zone loads, refreshes and transfers in, by
	// event and result ("ok", "failed").
	ZoneEvents map[string]map[string]uint64 `json:"zone_events"`
	Zones      []ZoneStatus                 `json:"zones"`
}

// SizeStats are the sizes of one server's responses on one transport.
type SizeStats struct {
	Server    string `json:"server"`
	Transport string `json:"transport"`
	Count     uint64 `json:"count"`
	Bytes     uint64 `json:"bytes"`
	// Buckets are the responses per size range, by upper bound in
	// bytes (0: larger than every bound).
	Buckets []SizeBucket `json:"buckets"`
}

// SizeBucket counts the responses of at most Le bytes larger than the
// bucket before's bound (Le 0: larger than every bound).
type SizeBucket struct {
	Le    int    `json:"le"`
	Count uint64 `json:"count"`
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
	snap := Snapshot{Time: time.Now(), Queries: map[string]uint64{}, Transports: map[string]uint64{}, Rcodes: map[string]uint64{},
		Qtypes: map[string]uint64{}, Dropped: map[string]uint64{}, Cookies: map[string]uint64{}, Validation: map[string]uint64{}, ZoneEvents: map[string]map[string]uint64{}}
	for srv := Server(0); srv < numServers; srv++ {
		c := &t.c[srv]
		var n uint64
		for tr := 0; tr < 2; tr++ {
			for q := 0; q < numQtypes; q++ {
				for rc := 0; rc < numRcodes; rc++ {
					if v := c[offQueries+(tr*numQtypes+q)*numRcodes+rc]; v != 0 {
						n += v
						snap.Transports[transports[tr]] += v
						snap.Rcodes[rcodeNames[rc]] += v
						snap.Qtypes[qtypeName(q)] += v
					}
				}
			}
			buckets := c[offSizes+tr*numSizes : offSizes+(tr+1)*numSizes]
			if count := total(buckets); count != 0 {
				st := SizeStats{Server: srv.String(), Transport: transports[tr], Count: count, Bytes: c[offSizeSum+tr]}
				for i, v := range buckets {
					if v == 0 {
						continue
					}
					le := 0
					if i < len(sizeBounds) {
						le = sizeBounds[i]
					}
					st.Buckets = append(st.Buckets, SizeBucket{Le: le, Count: v})
				}
				snap.Sizes = append(snap.Sizes, st)
			}
		}
		snap.Queries[srv.String()] = n
		for d := Drop(0); d < numDrops; d++ {
			snap.Dropped[dropNames[d]] += c[offDrops+int(d)]
		}
		for k := Cookie(0); k < numCookies; k++ {
			snap.Cookies[cookieNames[k]] += c[offCookies+int(k)]
		}
	}
	snap.CacheHits, snap.CacheMisses = t.c[Resolver][offCache], t.c[Resolver][offCache+1]
	snap.ResolverCache = s.resolverCache()
	for i := range s.resolutions.b {
		snap.Resolutions += s.resolutions.b[i].Load()
	}
	for i := range numSecurity {
		snap.Validation[securityNames[i]] = s.validation[i].Load()
	}
	snap.UpstreamTimeouts = s.timeouts.Load()
	for e := Event(0); e < numEvents; e++ {
		snap.ZoneEvents[e.String()] = map[string]uint64{"ok": s.zoneEvents[e][0].Load(), "failed": s.zoneEvents[e][1].Load()}
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
