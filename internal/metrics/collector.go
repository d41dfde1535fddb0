package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The metrics' descriptions.
var (
	descQueries = prometheus.NewDesc("tern_queries_total",
		"Queries answered, by server (auth or resolver), transport, QTYPE and the response's RCODE.",
		[]string{"server", "transport", "qtype", "rcode"}, nil)
	descSizes = prometheus.NewDesc("tern_response_size_bytes",
		"Sizes of the responses sent (resolver: those answered by its workers, not the ones sent when a resolution ends).",
		[]string{"server", "transport"}, nil)
	descLatency = prometheus.NewDesc("tern_answer_duration_seconds",
		"Time spent answering a query on a worker, from the datagram read to its response ready (each answer of a batch counts the batch's average).",
		[]string{"server"}, nil)
	descDropped = prometheus.NewDesc("tern_dropped_queries_total",
		"Queries given no answer, by reason (malformed: not a query, or too long to read; limit: over the resolver's limits; rrl: rate limited; dnstap: answered, but its dnstap record dropped).",
		[]string{"server", "reason"}, nil)
	descCookies = prometheus.NewDesc("tern_cookies_total",
		"Queries by what their DNS cookie was (none; client-only; valid; refreshed: valid but old, a fresh one sent; bad: not ours, over TCP, answered; malformed: FORMERR sent; badcookie: not ours, over UDP, BADCOOKIE sent).",
		[]string{"server", "result"}, nil)
	descZoneQueries = prometheus.NewDesc("tern_zone_queries_total",
		"Queries the authoritative listeners answered from each zone.",
		[]string{"zone"}, nil)
	descCache = prometheus.NewDesc("tern_resolver_response_cache_total",
		"Lookups in the resolver workers' response caches, by result (hit, miss).",
		[]string{"result"}, nil)
	descCacheRRsets = prometheus.NewDesc("tern_resolver_cache_rrsets",
		"RRsets in the resolver's RRset cache (each with its RRSIGs), live or expired but not yet evicted.", nil, nil)
	descCacheNegative = prometheus.NewDesc("tern_resolver_cache_negative_entries",
		"NXDOMAIN and NODATA entries in the resolver's cache (RFC 2308), live or expired but not yet evicted.", nil, nil)
	descCacheBytes = prometheus.NewDesc("tern_resolver_cache_bytes",
		"Bytes the resolver's RRset and negative cache holds, by the measure its cache-size bounds.", nil, nil)
	descRespEntries = prometheus.NewDesc("tern_resolver_response_cache_entries",
		"Responses held in the resolver workers' response caches, all workers together.", nil, nil)
	descRespBytes = prometheus.NewDesc("tern_resolver_response_cache_bytes",
		"Bytes the resolver workers' response caches use: their sets and the part of their rings written so far.", nil, nil)
	descResolutions = prometheus.NewDesc("tern_resolver_resolution_duration_seconds",
		"Time each resolution took, from its start to its result.", nil, nil)
	descValidation = prometheus.NewDesc("tern_resolver_validation_total",
		"Resolutions by DNSSEC outcome (unchecked: validation off).",
		[]string{"result"}, nil)
	descUpstream = prometheus.NewDesc("tern_resolver_upstream_duration_seconds",
		"Round-trip time of each answered exchange with an authority.", nil, nil)
	descTimeouts = prometheus.NewDesc("tern_resolver_upstream_timeouts_total",
		"Exchanges with an authority that timed out.", nil, nil)
	descZoneSerial = prometheus.NewDesc("tern_zone_serial",
		"The SOA serial of the version of each zone served.",
		[]string{"zone", "role"}, nil)
	descZoneServing = prometheus.NewDesc("tern_zone_serving",
		"1 when the zone has data to serve, 0 when it failed to load or expired.",
		[]string{"zone", "role"}, nil)
	descZoneEvents = prometheus.NewDesc("tern_zone_events_total",
		"Zone loads, secondary refreshes and transfers in, by result.",
		[]string{"event", "result"}, nil)
	descZoneEventTime = prometheus.NewDesc("tern_zone_event_duration_seconds",
		"Time each zone load, refresh or transfer took.",
		[]string{"event"}, nil)
	descZoneLastEvent = prometheus.NewDesc("tern_zone_last_event_timestamp_seconds",
		"When each zone's last load, refresh or transfer ended (Unix time).",
		[]string{"zone", "event", "result"}, nil)
)

// Describe sends every metric's description: Set is a
// prometheus.Collector.
func (s *Set) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descQueries, descSizes, descLatency, descDropped, descCookies,
		descZoneQueries, descCache, descCacheRRsets, descCacheNegative, descCacheBytes, descRespEntries, descRespBytes, descResolutions, descValidation, descUpstream, descTimeouts,
		descZoneSerial, descZoneServing, descZoneEvents, descZoneEventTime, descZoneLastEvent} {
		ch <- d
	}
}

// totals are the sums of every Shard's published counters, per server.
type totals struct {
	c     [numServers][numCounters]uint64
	zones []uint64
}

// sum adds up the shards' published counters and the resolver's
// deferred answers (under the resolver's query counters).
func (s *Set) sum() *totals {
	s.mu.Lock()
	shards := append([]*Shard(nil), s.shards...)
	nz := len(s.zoneNames)
	s.mu.Unlock()
	t := &totals{zones: make([]uint64, nz)}
	for _, m := range shards {
		c := &t.c[m.server]
		for i := range m.pub {
			c[i] += m.pub[i].Load()
		}
		if pz := m.pubZon.Load(); pz != nil {
			for i := range *pz {
				if i < nz {
					t.zones[i] += (*pz)[i].Load()
				}
			}
		}
	}
	for i := range s.deferred {
		t.c[Resolver][offQueries+i] += s.deferred[i].Load()
	}
	return t
}

var transports = [2]string{"udp", "tcp"}

// sizeFloats are sizeBounds as Prometheus takes bounds.
var sizeFloats = func() (f [len(sizeBounds)]float64) {
	for i, b := range sizeBounds {
		f[i] = float64(b)
	}
	return f
}()

// Collect sends the metrics' values, summed over the workers' Shards at
// this moment.
func (s *Set) Collect(ch chan<- prometheus.Metric) {
	t := s.sum()
	for srv := Server(0); srv < numServers; srv++ {
		c := &t.c[srv]
		name := srv.String()
		for tr := 0; tr < 2; tr++ {
			for q := 0; q < numQtypes; q++ {
				for rc := 0; rc < numRcodes; rc++ {
					if v := c[offQueries+(tr*numQtypes+q)*numRcodes+rc]; v != 0 {
						ch <- prometheus.MustNewConstMetric(descQueries, prometheus.CounterValue, float64(v),
							name, transports[tr], qtypeName(q), rcodeNames[rc])
					}
				}
			}
			buckets := c[offSizes+tr*numSizes : offSizes+(tr+1)*numSizes]
			if count := total(buckets); count != 0 {
				ch <- prometheus.MustNewConstHistogram(descSizes, count, float64(c[offSizeSum+tr]),
					cumulative(sizeFloats[:], buckets), name, transports[tr])
			}
		}
		lat := c[offLatency : offLatency+numLatency]
		if count := total(lat); count != 0 {
			ch <- prometheus.MustNewConstHistogram(descLatency, count, float64(c[offLatSum])/1e9,
				cumulative(latencyBounds[:], lat), name)
		}
		for d := Drop(0); d < numDrops; d++ {
			ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(c[offDrops+int(d)]), name, dropNames[d])
		}
		for k := Cookie(0); k < numCookies; k++ {
			ch <- prometheus.MustNewConstMetric(descCookies, prometheus.CounterValue, float64(c[offCookies+int(k)]), name, cookieNames[k])
		}
	}
	s.mu.Lock()
	names := s.zoneNames
	s.mu.Unlock()
	for i := 1; i < len(t.zones) && i < len(names); i++ {
		ch <- prometheus.MustNewConstMetric(descZoneQueries, prometheus.CounterValue, float64(t.zones[i]), names[i])
	}
	rc := &t.c[Resolver]
	ch <- prometheus.MustNewConstMetric(descCache, prometheus.CounterValue, float64(rc[offCache]), "hit")
	ch <- prometheus.MustNewConstMetric(descCache, prometheus.CounterValue, float64(rc[offCache+1]), "miss")
	if cs := s.resolverCache(); cs != nil {
		ch <- prometheus.MustNewConstMetric(descCacheRRsets, prometheus.GaugeValue, float64(cs.RRsets))
		ch <- prometheus.MustNewConstMetric(descCacheNegative, prometheus.GaugeValue, float64(cs.Negative))
		ch <- prometheus.MustNewConstMetric(descCacheBytes, prometheus.GaugeValue, float64(cs.Bytes))
		ch <- prometheus.MustNewConstMetric(descRespEntries, prometheus.GaugeValue, float64(cs.Responses))
		ch <- prometheus.MustNewConstMetric(descRespBytes, prometheus.GaugeValue, float64(cs.ResponseBytes))
	}
	s.resolutions.collect(ch, descResolutions)
	for i := range numSecurity {
		ch <- prometheus.MustNewConstMetric(descValidation, prometheus.CounterValue, float64(s.validation[i].Load()), securityNames[i])
	}
	s.upstream.collect(ch, descUpstream)
	ch <- prometheus.MustNewConstMetric(descTimeouts, prometheus.CounterValue, float64(s.timeouts.Load()))
	for e := Event(0); e < numEvents; e++ {
		ch <- prometheus.MustNewConstMetric(descZoneEvents, prometheus.CounterValue, float64(s.zoneEvents[e][0].Load()), e.String(), "ok")
		ch <- prometheus.MustNewConstMetric(descZoneEvents, prometheus.CounterValue, float64(s.zoneEvents[e][1].Load()), e.String(), "failed")
		s.zoneTook[e].collect(ch, descZoneEventTime, e.String())
	}
	zs, last := s.zoneStates()
	for _, z := range zs {
		ch <- prometheus.MustNewConstMetric(descZoneSerial, prometheus.GaugeValue, float64(z.Serial), z.Origin, z.Role)
		serving := 0.0
		if z.Serving {
			serving = 1
		}
		ch <- prometheus.MustNewConstMetric(descZoneServing, prometheus.GaugeValue, serving, z.Origin, z.Role)
	}
	for origin, l := range last {
		result := "ok"
		if l.Err != "" {
			result = "failed"
		}
		ch <- prometheus.MustNewConstMetric(descZoneLastEvent, prometheus.GaugeValue,
			float64(l.At.UnixNano())/1e9, origin, l.Event.String(), result)
	}
}

// collect sends h as a histogram of seconds, when it counted anything.
func (h *histogram) collect(ch chan<- prometheus.Metric, d *prometheus.Desc, labels ...string) {
	var b [numLatency]uint64
	for i := range h.b {
		b[i] = h.b[i].Load()
	}
	if count := total(b[:]); count != 0 {
		ch <- prometheus.MustNewConstHistogram(d, count, float64(h.sum.Load())/1e9, cumulative(latencyBounds[:], b[:]), labels...)
	}
}

// qtypeName is bucket q's label.
func qtypeName(q int) string {
	if q == otherQtype {
		return "other"
	}
	return qtypes[q].name
}

func total(b []uint64) uint64 {
	var n uint64
	for _, v := range b {
		n += v
	}
	return n
}

// cumulative turns per-bucket counts (the last one +Inf's) into
// Prometheus's cumulative buckets by upper bound.
func cumulative(bounds []float64, b []uint64) map[float64]uint64 {
	m := make(map[float64]uint64, len(bounds))
	var n uint64
	for i, ub := range bounds {
		n += b[i]
		m[ub] = n
	}
	return m
}
