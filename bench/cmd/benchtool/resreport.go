package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
)

// resRow is one row of resolver.tsv: a resolver after one mix run.
type resRow struct {
	workload, gen, server string
	rep                   int
	sent, completed       float64
	pss0, pss1            float64 // kB, after start and after the run
	srvQueries, srvHits   float64 // the server's own counters, NaN if it has none
	srvRRsets             float64
	// srvNegative, srvMessages and srvCacheBytes: the negative entries,
	// whole responses (Unbound's message cache, PowerDNS Recursor's
	// packet cache, Tern's response caches) and bytes the server says
	// its caches hold; NaN if it does not tell (or an older
	// resolver.tsv without them).
	srvNegative, srvMessages, srvCacheBytes float64
}

// resHeader is the header line run.sh writes to resolver.tsv.
const resHeader = "workload\tgen\tserver\trep\tsent\tcompleted\tpss0_kb\tpss1_kb\tsrv_queries\tsrv_hits\tsrv_rrsets\tsrv_negative\tsrv_messages\tsrv_cache_bytes"

func readResRows(path string) ([]resRow, error) {
	rows, err := readTSV(path)
	if err != nil {
		return nil, err
	}
	num := func(s string) float64 {
		if s == "-" || s == "" {
			return math.NaN()
		}
		return atof(s)
	}
	var out []resRow
	for _, f := range rows {
		if len(f) < 11 {
			continue
		}
		opt := func(i int) float64 {
			if i < len(f) {
				return num(f[i])
			}
			return math.NaN()
		}
		out = append(out, resRow{
			workload: f[0], gen: f[1], server: f[2], rep: int(atof(f[3])),
			sent: atof(f[4]), completed: atof(f[5]), pss0: atof(f[6]), pss1: atof(f[7]),
			srvQueries: num(f[8]), srvHits: num(f[9]), srvRRsets: num(f[10]),
			srvNegative: opt(11), srvMessages: opt(12), srvCacheBytes: opt(13),
		})
	}
	return out, nil
}

// distinctPrefix returns, for each n in ns, how many distinct lines the
// first n lines of the query file hold (the file read again from the top
// past its end, as the generators do with -n > 1).
func distinctPrefix(path string, ns []int) (map[int]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, ";") {
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := map[int]int{}
	if len(lines) == 0 {
		return out, nil
	}
	sorted := append([]int(nil), ns...)
	sort.Ints(sorted)
	seen := map[string]bool{}
	i := 0
	for _, n := range sorted {
		for ; i < n && i < 2*len(lines); i++ { // past one pass nothing is new
			seen[lines[i%len(lines)]] = true
		}
		out[n] = len(seen)
	}
	return out, nil
}

// resolverTable writes the mix runs' cache and memory table: per run, the
// hit rate the server reports, the ideal hit rate of the questions asked
// (1 - distinct/asked: what a resolver with an unbounded cache and no
// duplicate upstream queries would reach), and the memory the cache grew
// by, per distinct question answered and per RRset the server says it
// holds.
func resolverTable(w func(string, ...any), rows []resRow, mixFile string) error {
	if len(rows) == 0 {
		return nil
	}
	var ns []int
	for _, r := range rows {
		ns = append(ns, int(r.sent))
	}
	distinct := map[int]int{}
	if mixFile != "" {
		var err error
		if distinct, err = distinctPrefix(mixFile, ns); err != nil {
			return err
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.workload != b.workload {
			return a.workload < b.workload
		}
		if a.gen != b.gen {
			return a.gen < b.gen
		}
		if orderIndex(a.server) != orderIndex(b.server) {
			return orderIndex(a.server) < orderIndex(b.server)
		}
		return a.rep < b.rep
	})
	w("## Resolver cache: hit rate and memory (mix runs)\n\n")
	w("Each mix run starts a fresh resolver and replays the Zipf query file once. ")
	w("Hit rate (server): the share of client queries the server counts as answered from its cache (Unbound: num.cachehits / num.queries, its message cache's hits; PowerDNS Recursor: packetcache-hits + cache-hits over questions; Tern: its workers' response-cache hits over the resolver's queries, tern ctl stats). ")
	w("Ideal: 1 - distinct questions / questions sent, what an unbounded cache that never asks twice would reach. ")
	w("Memory: PSS after the run minus PSS after start, per distinct question asked and per RRset the server reports holding (Unbound: rrset.cache.count; PowerDNS Recursor: cache-entries; Tern: resolver_cache.rrsets, positive entries only). ")
	w("Negative: entries of the negative cache (Tern's NXDOMAIN and NODATA entries, PowerDNS Recursor's negcache-entries; Unbound keeps negative answers in its message cache). ")
	w("Messages: whole responses cached (Unbound: msg.cache.count; PowerDNS Recursor: packetcache-entries; Tern: its response caches' entries). ")
	w("Own bytes / RRset: the bytes the server says its RRset and message caches hold (Unbound: mem.cache.rrset + mem.cache.message; PowerDNS Recursor: cache-bytes + packetcache-bytes; Tern: resolver_cache bytes + response_bytes) per RRset: the caches alone, without the process's other growth.\n\n")
	w("| workload | generator | server | rep | sent | distinct | hit rate (server) | ideal | cache growth MB | bytes / distinct question | RRsets (server) | bytes / RRset | negative (server) | messages (server) | own bytes / RRset |\n")
	w("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rows {
		d := float64(distinct[int(r.sent)])
		grow := (r.pss1 - r.pss0) * 1024
		pct := func(a, b float64) string {
			if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
				return "–"
			}
			return fmt.Sprintf("%.1f%%", 100*a/b)
		}
		per := func(n float64) string {
			if math.IsNaN(n) || n <= 0 {
				return "–"
			}
			return fmtNum(grow/n, 0)
		}
		ideal := "–"
		if d > 0 && r.sent > 0 {
			ideal = fmt.Sprintf("%.1f%%", 100*(1-d/r.sent))
		}
		dist := "–"
		if d > 0 {
			dist = fmtQPS(d)
		}
		own := "–"
		if !math.IsNaN(r.srvCacheBytes) && !math.IsNaN(r.srvRRsets) && r.srvRRsets > 0 {
			own = fmtNum(r.srvCacheBytes/r.srvRRsets, 0)
		}
		w("| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.workload, r.gen, r.server, r.rep,
			fmtQPS(r.sent), dist, pct(r.srvHits, r.srvQueries), ideal, fmtNum(grow/(1<<20), 1),
			per(d), fmtNum(r.srvRRsets, 0), per(r.srvRRsets), fmtNum(r.srvNegative, 0), fmtNum(r.srvMessages, 0), own)
	}
	w("\n")
	return nil
}
