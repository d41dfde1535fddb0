package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// genResult is what one load-generator run reports.
type genResult struct {
	qps       float64
	sent      float64
	completed float64
	lost      float64
	latMeanUs float64
	runtimeS  float64 // the generator's own measured run time, 0 if unknown
	rcodes    map[string]float64
}

var (
	reSent   = regexp.MustCompile(`Queries sent:\s+(\d+)`)
	reDone   = regexp.MustCompile(`Queries completed:\s+(\d+)`)
	reLost   = regexp.MustCompile(`Queries lost:\s+(\d+)`)
	reQPS    = regexp.MustCompile(`Queries per second:\s+([0-9.]+)`)
	reLat    = regexp.MustCompile(`Average Latency \(s\):\s+([0-9.]+)`)
	reRcodes = regexp.MustCompile(`Response codes:\s+(.*)`)
	reRun    = regexp.MustCompile(`Run time \(s\):\s+([0-9.]+)`)
	reRcode  = regexp.MustCompile(`([A-Z0-9]+) (\d+) \(`)
)

// parseDnsperf reads dnsperf's final "Statistics:" block.
func parseDnsperf(text string) (genResult, error) {
	r := genResult{rcodes: map[string]float64{}}
	get := func(re *regexp.Regexp) (float64, bool) {
		m := re.FindStringSubmatch(text)
		if m == nil {
			return 0, false
		}
		v, err := strconv.ParseFloat(m[1], 64)
		return v, err == nil
	}
	var ok bool
	if r.sent, ok = get(reSent); !ok {
		return r, fmt.Errorf("no 'Queries sent' in dnsperf output")
	}
	r.completed, _ = get(reDone)
	r.lost, _ = get(reLost)
	r.qps, _ = get(reQPS)
	lat, _ := get(reLat)
	r.latMeanUs = lat * 1e6
	r.runtimeS, _ = get(reRun)
	if m := reRcodes.FindStringSubmatch(text); m != nil {
		for _, c := range reRcode.FindAllStringSubmatch(m[1], -1) {
			v, _ := strconv.ParseFloat(c[2], 64)
			r.rcodes[c[1]] += v
		}
	}
	return r, nil
}

// lookup finds a key case-insensitively, trying several spellings.
func lookup(m map[string]any, keys ...string) (any, bool) {
	for _, k := range keys {
		for mk, v := range m {
			if strings.EqualFold(mk, k) {
				return v, true
			}
		}
	}
	return nil, false
}

func number(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case string:
		f, _ := strconv.ParseFloat(x, 64)
		return f
	}
	return 0
}

// parseTernPerf reads the JSON summary of 'tern perf --json'. It accepts
// a few spellings of each field so that small schema changes in the load
// generator do not break the harness; latencies may be given in seconds
// ("mean"/"mean_s"), milliseconds ("mean_ms"), microseconds ("mean_us")
// or nanoseconds ("mean_ns").
func parseTernPerf(text string) (genResult, error) {
	r := genResult{rcodes: map[string]float64{}}
	i := strings.IndexByte(text, '{')
	j := strings.LastIndexByte(text, '}')
	if i < 0 || j < i {
		return r, fmt.Errorf("no JSON object in tern perf output")
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(text[i:j+1]), &m); err != nil {
		return r, fmt.Errorf("tern perf JSON: %v", err)
	}
	if v, ok := lookup(m, "qps", "queries_per_second"); ok {
		r.qps = number(v)
	}
	if v, ok := lookup(m, "sent", "queries_sent"); ok {
		r.sent = number(v)
	} else {
		return r, fmt.Errorf("tern perf JSON has no 'sent'")
	}
	if v, ok := lookup(m, "completed", "queries_completed"); ok {
		r.completed = number(v)
	}
	if v, ok := lookup(m, "lost", "queries_lost"); ok {
		r.lost = number(v)
	}
	if v, ok := lookup(m, "runtime", "run_time", "runtime_s", "duration_s", "elapsed", "elapsed_s", "duration"); ok {
		r.runtimeS = number(v)
	}
	if v, ok := lookup(m, "rcodes", "response_codes"); ok {
		if rc, ok := v.(map[string]any); ok {
			for k, c := range rc {
				r.rcodes[strings.ToUpper(k)] += number(c)
			}
		}
	}
	if v, ok := lookup(m, "latency_avg_s", "latency_mean_s", "avg_latency_s", "mean_latency_s"); ok {
		r.latMeanUs = number(v) * 1e6
	} else if v, ok := lookup(m, "latencies", "latency"); ok {
		if lm, ok := v.(map[string]any); ok {
			switch {
			case has(lm, "mean_us"):
				r.latMeanUs = number(lm["mean_us"])
			case has(lm, "mean_ms"):
				r.latMeanUs = number(lm["mean_ms"]) * 1e3
			case has(lm, "mean_ns"):
				r.latMeanUs = number(lm["mean_ns"]) / 1e3
			default:
				if x, ok := lookup(lm, "mean_s", "mean", "avg", "average"); ok {
					r.latMeanUs = number(x) * 1e6
				}
			}
		}
	}
	return r, nil
}

func has(m map[string]any, k string) bool { _, ok := m[k]; return ok }

// runParse reads one generator report (file argument) and prints a TSV row:
//
//	CPU_US WALL_US STATUS QPS SENT COMPLETED LOST_PCT LAT_MEAN_US RCODES REASON
//
// CPU_US is -cpu-us passed through (the server's CPU time over the run);
// WALL_US is the generator's own run time when it reports one (dnsperf's
// "Run time"), else -wall-us, the interval the harness measured around it.
// STATUS is "ok" or "ERROR". A run is an error when nothing was answered or
// when less than -min (default 99%) of the answers carry the -expect rcode:
// e.g. a server answering REFUSED because it did not load the zone, or a
// NXDOMAIN workload answered NOERROR. Such a run is not a result.
func runParse(args []string) error {
	fs := flag.NewFlagSet("parse", flag.ExitOnError)
	gen := fs.String("gen", "dnsperf", "dnsperf or ternperf")
	expect := fs.String("expect", "NOERROR", "the rcode every answer should carry")
	min := fs.Float64("min", 99, "minimum share (%) of answers with the expected rcode")
	cpuUs := fs.Float64("cpu-us", 0, "server CPU microseconds used during the run")
	wallUs := fs.Float64("wall-us", 0, "wall-clock microseconds measured around the run")
	fs.Parse(args)
	if fs.NArg() != 1 {
		return fmt.Errorf("need one report file")
	}
	b, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	var r genResult
	switch *gen {
	case "dnsperf":
		r, err = parseDnsperf(string(b))
	case "ternperf":
		r, err = parseTernPerf(string(b))
	default:
		return fmt.Errorf("unknown -gen %q", *gen)
	}
	status, reason := "ok", "-"
	if err != nil {
		status, reason = "ERROR", err.Error()
	}
	lostPct := 0.0
	if r.sent > 0 {
		lostPct = 100 * r.lost / r.sent
	}
	var total float64
	var codes []string
	for k, v := range r.rcodes {
		total += v
		codes = append(codes, fmt.Sprintf("%s=%.0f", k, v))
	}
	sort.Strings(codes)
	rc := strings.Join(codes, ",")
	if rc == "" {
		rc = "-"
	}
	if status == "ok" {
		switch {
		case r.completed == 0 || total == 0:
			status, reason = "ERROR", "no answers"
		case 100*r.rcodes[*expect]/total < *min:
			status = "ERROR"
			reason = fmt.Sprintf("only %.1f%% %s (want >= %.0f%%)", 100*r.rcodes[*expect]/total, *expect, *min)
		}
	}
	reason = strings.ReplaceAll(reason, "\t", " ")
	wall := *wallUs
	if r.runtimeS > 0 {
		wall = r.runtimeS * 1e6
	}
	fmt.Printf("%.0f\t%.0f\t%s\t%.1f\t%.0f\t%.0f\t%.3f\t%.1f\t%s\t%s\n", *cpuUs, wall, status, r.qps, r.sent, r.completed, lostPct, r.latMeanUs, rc, reason)
	return nil
}
