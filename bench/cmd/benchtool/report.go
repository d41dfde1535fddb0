package main

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// run is one row of raw.tsv (written by run.sh, one per load run).
type run struct {
	workload, gen, server string
	clients, rep          int
	cpuUs, wallUs         float64
	status                string
	qps, sent, completed  float64
	lostPct, latUs        float64
	rcodes, reason        string
	genPct                float64 // the generator's CPU utilisation, -1 if unknown
	// authPct is the resolver phase's authorities' CPU utilisation over
	// the run, -1 if unknown or not a resolver run: they share the
	// generator's CPU, so generator + authorities near 100 means that
	// CPU, not the resolver, bounded the run.
	authPct float64
}

// rawHeader is the header line run.sh writes to raw.tsv.
const rawHeader = "workload\tgen\tserver\tclients\trep\tcpu_us\twall_us\tstatus\tqps\tsent\tcompleted\tlost_pct\tlat_us\trcodes\treason\tgen_cpu_pct\tauth_cpu_pct"

func readTSV(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue // header
		}
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		rows = append(rows, strings.Split(sc.Text(), "\t"))
	}
	return rows, sc.Err()
}

func atof(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// point is the median of the ok runs of one (workload, gen, server, clients).
type point struct {
	clients                       int
	qps, lost, lat, cpuQ, cpuUtil float64
	genUtil, authUtil             float64
	ok, bad                       int
}

type key struct{ workload, gen, server string }

// serverOrder is the column order of tables and charts; unknown names go last.
var serverOrder = []string{"tern", "nsd", "knot", "bind", "pdns", "unbound", "pdnsrec", "echo", "echosz"}

// floor reports whether s is one of the echo floors, which are no peers.
func floor(s string) bool { return s == "echo" || s == "echosz" }

func orderIndex(s string) int {
	for i, x := range serverOrder {
		if x == s {
			return i
		}
	}
	return len(serverOrder)
}

func fmtNum(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func fmtQPS(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	// thousands separators for readability
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// runReport aggregates raw.tsv and servers.tsv into results.md and the
// gnuplot data files qps.dat and cpu.dat (peak point per workload/server,
// dnsperf generator) in -out.
func runReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	rawPath := fs.String("raw", "", "raw.tsv")
	srvPath := fs.String("servers", "", "servers.tsv")
	errPath := fs.String("errors", "", "errors.log (optional)")
	metaPath := fs.String("meta", "", "meta.txt: lines copied under the title (optional)")
	out := fs.String("out", "", "output directory")
	order := fs.String("order", "", "workload order for tables and chart (space-separated; default: as in raw.tsv)")
	resPath := fs.String("resolver", "", "resolver.tsv: the resolver phase's mix runs (optional)")
	mixFile := fs.String("mixfile", "", "the mix query file, for the ideal hit rate (optional)")
	fs.Parse(args)

	rows, err := readTSV(*rawPath)
	if err != nil {
		return err
	}
	var runs []run
	for _, f := range rows {
		if len(f) < 15 {
			continue
		}
		genPct := -1.0
		if len(f) > 15 && f[15] != "" {
			genPct = atof(f[15])
		}
		authPct := -1.0
		if len(f) > 16 && f[16] != "" {
			authPct = atof(f[16])
		}
		runs = append(runs, run{
			genPct:   genPct,
			authPct:  authPct,
			workload: f[0], gen: f[1], server: f[2],
			clients: int(atof(f[3])), rep: int(atof(f[4])),
			cpuUs: atof(f[5]), wallUs: atof(f[6]), status: f[7],
			qps: atof(f[8]), sent: atof(f[9]), completed: atof(f[10]),
			lostPct: atof(f[11]), latUs: atof(f[12]), rcodes: f[13], reason: f[14],
		})
	}

	// Orders of first appearance.
	var workloads, gens []string
	seenW, seenG := map[string]bool{}, map[string]bool{}
	serversSeen := map[string]bool{}
	for _, r := range runs {
		if !seenW[r.workload] {
			seenW[r.workload] = true
			workloads = append(workloads, r.workload)
		}
		if !seenG[r.gen] {
			seenG[r.gen] = true
			gens = append(gens, r.gen)
		}
		serversSeen[r.server] = true
	}
	if *order != "" {
		var ordered []string
		for _, wl := range strings.Fields(*order) {
			if seenW[wl] {
				ordered = append(ordered, wl)
				delete(seenW, wl)
			}
		}
		for _, wl := range workloads {
			if seenW[wl] {
				ordered = append(ordered, wl)
			}
		}
		workloads = ordered
	}
	var servers []string
	for s := range serversSeen {
		servers = append(servers, s)
	}
	sort.Slice(servers, func(i, j int) bool {
		a, b := orderIndex(servers[i]), orderIndex(servers[j])
		if a != b {
			return a < b
		}
		return servers[i] < servers[j]
	})

	// Medians per (workload, gen, server, clients).
	type pk struct {
		key
		clients int
	}
	groups := map[pk][]run{}
	for _, r := range runs {
		k := pk{key{r.workload, r.gen, r.server}, r.clients}
		groups[k] = append(groups[k], r)
	}
	points := map[key][]point{}
	for k, rs := range groups {
		var qps, lost, lat, cpuQ, util, gutil, autil []float64
		p := point{clients: k.clients}
		for _, r := range rs {
			if r.status != "ok" {
				p.bad++
				continue
			}
			p.ok++
			qps = append(qps, r.qps)
			lost = append(lost, r.lostPct)
			lat = append(lat, r.latUs/1000)
			if r.completed > 0 {
				cpuQ = append(cpuQ, r.cpuUs/r.completed)
			}
			if r.wallUs > 0 {
				util = append(util, 100*r.cpuUs/r.wallUs)
			}
			if r.genPct >= 0 {
				gutil = append(gutil, r.genPct)
			}
			if r.authPct >= 0 {
				autil = append(autil, r.authPct)
			}
		}
		p.qps, p.lost, p.lat, p.cpuQ, p.cpuUtil = median(qps), median(lost), median(lat), median(cpuQ), median(util)
		p.genUtil, p.authUtil = median(gutil), median(autil)
		points[k.key] = append(points[k.key], p)
	}
	for k := range points {
		sort.Slice(points[k], func(i, j int) bool { return points[k][i].clients < points[k][j].clients })
	}
	// peak: the client count with the highest median QPS.
	peak := func(k key) (point, bool) {
		best, found := point{qps: math.NaN()}, false
		for _, p := range points[k] {
			if p.ok == 0 {
				continue
			}
			if !found || p.qps > best.qps {
				best, found = p, true
			}
		}
		return best, found
	}
	var clientCounts []int
	seenC := map[int]bool{}
	for _, r := range runs {
		if !seenC[r.clients] {
			seenC[r.clients] = true
			clientCounts = append(clientCounts, r.clients)
		}
	}
	sort.Ints(clientCounts)

	var md strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&md, format, a...) }
	w("# Tern benchmark results\n\n")
	if *metaPath != "" {
		if b, err := os.ReadFile(*metaPath); err == nil {
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				w("- %s\n", l)
			}
			w("\n")
		}
	}

	nErr := 0
	for _, r := range runs {
		if r.status != "ok" {
			nErr++
		}
	}
	var checkErrs []string
	if *errPath != "" {
		if b, err := os.ReadFile(*errPath); err == nil {
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if strings.TrimSpace(l) != "" {
					checkErrs = append(checkErrs, l)
				}
			}
		}
	}
	if nErr > 0 || len(checkErrs) > 0 {
		w("**ERRORS: %d of %d runs failed (wrong response codes, or not run because a sample of answers failed the check) and %d problems were logged; see \"Errors\" below. Those runs are not results.**\n\n", nErr, len(runs), len(checkErrs))
	}

	for _, g := range gens {
		w("## Peak per workload and server (generator: %s)\n\n", g)
		w("Median over repeats at the client count (c) that gave the highest median QPS. ")
		w("Server CPU %% near 100 means the server was the bottleneck; generator CPU %% well below 100 means the generator was starved by other load. Authorities CPU %% (resolver workloads): the local hierarchy's authorities, on the generator's CPU; generator + authorities near 100 means that CPU bounded the run.\n\n")
		w("| workload | server | c | QPS | lost %% | mean latency ms | server CPU µs/query | server CPU %% | generator CPU %% | authorities CPU %% | ok runs | error runs |\n")
		w("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, wl := range workloads {
			for _, s := range servers {
				k := key{wl, g, s}
				if len(points[k]) == 0 {
					continue
				}
				bad, ok := 0, 0
				for _, p := range points[k] {
					bad += p.bad
					ok += p.ok
				}
				p, found := peak(k)
				if !found {
					w("| %s | %s | – | **ERROR** | | | | | | | 0 | %d |\n", wl, s, bad)
					continue
				}
				w("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %d | %d |\n", wl, s, p.clients, fmtQPS(p.qps),
					fmtNum(p.lost, 2), fmtNum(p.lat, 3), fmtNum(p.cpuQ, 2), fmtNum(p.cpuUtil, 0), fmtNum(p.genUtil, 0), fmtNum(p.authUtil, 0), ok, bad)
			}
		}
		w("\n")

		w("### Ratios (generator: %s)\n\n", g)
		w("Best peer = highest QPS / lowest CPU per query among the peers measured on the workload (NSD, Knot, BIND and PowerDNS; Unbound and PowerDNS Recursor on the resolver workloads res-*). QPS ratio > 1 and CPU ratio < 1 favour Tern. The sized floor (echosz) pads the echo's replies to the average size of Tern's answers in the workload.\n\n")
		w("| workload | Tern QPS / best peer | Tern CPU/q / best peer | Tern QPS / echo floor | Tern CPU/q / echo floor | Tern QPS / sized floor |\n")
		w("|---|--:|--:|--:|--:|--:|\n")
		for _, wl := range workloads {
			tp, tok := peak(key{wl, g, "tern"})
			bestQ, bestQName := math.NaN(), ""
			bestC, bestCName := math.NaN(), ""
			for _, s := range servers {
				if s == "tern" || floor(s) {
					continue
				}
				p, ok := peak(key{wl, g, s})
				if !ok {
					continue
				}
				if math.IsNaN(bestQ) || p.qps > bestQ {
					bestQ, bestQName = p.qps, s
				}
				if !math.IsNaN(p.cpuQ) && (math.IsNaN(bestC) || p.cpuQ < bestC) {
					bestC, bestCName = p.cpuQ, s
				}
			}
			ep, eok := peak(key{wl, g, "echo"})
			sp, sok := peak(key{wl, g, "echosz"})
			ratio := func(a, b float64, okA, okB bool, name string) string {
				if !okA || !okB || math.IsNaN(a) || math.IsNaN(b) || b == 0 {
					return "–"
				}
				if name != "" {
					return fmt.Sprintf("%.2f (%s)", a/b, name)
				}
				return fmt.Sprintf("%.2f", a/b)
			}
			w("| %s | %s | %s | %s | %s | %s |\n", wl,
				ratio(tp.qps, bestQ, tok, bestQName != "", bestQName),
				ratio(tp.cpuQ, bestC, tok, bestCName != "", bestCName),
				ratio(tp.qps, ep.qps, tok, eok, ""),
				ratio(tp.cpuQ, ep.cpuQ, tok, eok, ""),
				ratio(tp.qps, sp.qps, tok, sok, ""))
		}
		w("\n")

		if len(clientCounts) > 1 {
			w("### QPS by client count (generator: %s, median)\n\n", g)
			w("| workload | server |")
			for _, c := range clientCounts {
				w(" c=%d |", c)
			}
			w("\n|---|---|%s\n", strings.Repeat("--:|", len(clientCounts)))
			for _, wl := range workloads {
				for _, s := range servers {
					k := key{wl, g, s}
					if len(points[k]) == 0 {
						continue
					}
					w("| %s | %s |", wl, s)
					for _, c := range clientCounts {
						cell := ""
						for _, p := range points[k] {
							if p.clients == c {
								if p.ok == 0 {
									cell = "ERROR"
								} else {
									cell = fmtQPS(p.qps)
								}
							}
						}
						w(" %s |", cell)
					}
					w("\n")
				}
			}
			w("\n")
		}
	}

	if *resPath != "" {
		rows, err := readResRows(*resPath)
		if err != nil {
			return err
		}
		if err := resolverTable(w, rows, *mixFile); err != nil {
			return err
		}
	}

	// Memory and load time.
	if *srvPath != "" {
		srows, err := readTSV(*srvPath)
		if err == nil && len(srows) > 0 {
			w("## Zone load time and memory\n\n")
			w("Load time: from starting the server until it first answers the zone's SOA authoritatively (polled every 10 ms). ")
			w("PSS/RSS: summed over the server's whole process tree from /proc/PID/smaps_rollup, right after loading and after all load runs.\n\n")
			w("| zones | server | load time s | PSS MB loaded | PSS MB after runs | RSS MB after runs | processes |\n")
			w("|---|---|--:|--:|--:|--:|--:|\n")
			type mem struct {
				load, pssL, pssE, rssE, nproc string
			}
			var order []string
			ms := map[string]*mem{}
			for _, f := range srows {
				if len(f) < 7 {
					continue
				}
				id := f[0] + "\t" + f[1]
				m, ok := ms[id]
				if !ok {
					m = &mem{load: "–", pssL: "–", pssE: "–", rssE: "–", nproc: "–"}
					ms[id] = m
					order = append(order, id)
				}
				mb := func(kb string) string { return fmtNum(atof(kb)/1024, 1) }
				switch f[2] {
				case "loaded":
					m.load = fmtNum(atof(f[3])/1000, 2)
					m.pssL = mb(f[4])
				case "end":
					m.pssE, m.rssE, m.nproc = mb(f[4]), mb(f[5]), f[6]
				case "failed":
					m.load = "**FAILED**"
				}
			}
			for _, id := range order {
				f := strings.Split(id, "\t")
				m := ms[id]
				w("| %s | %s | %s | %s | %s | %s | %s |\n", f[0], f[1], m.load, m.pssL, m.pssE, m.rssE, m.nproc)
			}
			w("\n")
		}
	}

	if nErr > 0 || len(checkErrs) > 0 {
		w("## Errors\n\n")
		for _, l := range checkErrs {
			w("- %s\n", l)
		}
		for _, r := range runs {
			if r.status != "ok" {
				w("- run %s/%s/%s c=%d rep=%d: %s (rcodes %s)\n", r.workload, r.gen, r.server, r.clients, r.rep, r.reason, r.rcodes)
			}
		}
		w("\n")
	}

	if err := os.WriteFile(filepath.Join(*out, "results.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}

	// Chart data: peak QPS and CPU/query per workload (rows) and server
	// (columns), for the first generator (dnsperf when it ran).
	if len(gens) > 0 {
		g := gens[0]
		for _, gg := range gens {
			if gg == "dnsperf" {
				g = gg
			}
		}
		for _, which := range []string{"qps", "cpu"} {
			var b strings.Builder
			b.WriteString("workload")
			for _, s := range servers {
				b.WriteString("\t" + s)
			}
			b.WriteString("\n")
			for _, wl := range workloads {
				b.WriteString(wl)
				for _, s := range servers {
					p, ok := peak(key{wl, g, s})
					v := "-"
					if ok {
						x := p.qps
						if which == "cpu" {
							x = p.cpuQ
						}
						if !math.IsNaN(x) {
							v = strconv.FormatFloat(x, 'f', 3, 64)
						}
					}
					b.WriteString("\t" + v)
				}
				b.WriteString("\n")
			}
			if err := os.WriteFile(filepath.Join(*out, which+".dat"), []byte(b.String()), 0o644); err != nil {
				return err
			}
		}
		fmt.Printf("%d\n", len(servers)) // number of series, for the plot script
	}
	return nil
}
