package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const dnsperfSample = `DNS Performance Testing Tool
Version 2.10.0

Statistics:

  Queries sent:         127036
  Queries completed:    127000 (99.97%)
  Queries lost:         36 (0.03%)

  Response codes:       NOERROR 126000 (99.21%), SERVFAIL 1000 (0.79%)
  Average packet size:  request 34, response 64
  Run time (s):         2.000294
  Queries per second:   63508.664226

  Average Latency (s):  0.001151 (min 0.000014, max 0.032793)
  Latency StdDev (s):   0.001884
`

func TestParseDnsperf(t *testing.T) {
	r, err := parseDnsperf(dnsperfSample)
	if err != nil {
		t.Fatal(err)
	}
	if r.sent != 127036 || r.completed != 127000 || r.lost != 36 {
		t.Errorf("counts: %+v", r)
	}
	if r.qps < 63508 || r.qps > 63509 || r.runtimeS < 2 || r.runtimeS > 2.001 {
		t.Errorf("qps/runtime: %+v", r)
	}
	if r.latMeanUs < 1150 || r.latMeanUs > 1152 {
		t.Errorf("latency: %v", r.latMeanUs)
	}
	if r.rcodes["NOERROR"] != 126000 || r.rcodes["SERVFAIL"] != 1000 {
		t.Errorf("rcodes: %v", r.rcodes)
	}
	if _, err := parseDnsperf("dnsperf: could not open file"); err == nil {
		t.Error("garbage parsed without error")
	}
}

func TestParseTernPerf(t *testing.T) {
	r, err := parseTernPerf(`progress...
{"qps": 937.4, "sent": 1315, "completed": 1310, "lost": 5,
 "rcodes": {"NXDOMAIN": 1310}, "runtime_s": 1.4, "latency_avg_s": 0.0106}`)
	if err != nil {
		t.Fatal(err)
	}
	if r.sent != 1315 || r.completed != 1310 || r.lost != 5 || r.rcodes["NXDOMAIN"] != 1310 {
		t.Errorf("counts: %+v", r)
	}
	if r.latMeanUs < 10599 || r.latMeanUs > 10601 || r.runtimeS != 1.4 {
		t.Errorf("latency/runtime: %+v", r)
	}
}

// TestParseVerdict checks the rcode rule through the command itself.
func TestParseVerdict(t *testing.T) {
	f := filepath.Join(t.TempDir(), "out.txt")
	if err := os.WriteFile(f, []byte(dnsperfSample), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		expect string
		min    string
		want   string
	}{
		{"NOERROR", "99", "ok"},
		{"NOERROR", "99.5", "ERROR"},
		{"NXDOMAIN", "99", "ERROR"},
	} {
		out := captureStdout(t, func() error {
			return runParse([]string{"-expect", tc.expect, "-min", tc.min, f})
		})
		if got := strings.Split(out, "\t")[2]; got != tc.want {
			t.Errorf("expect %s min %s: status %q, want %q (%s)", tc.expect, tc.min, got, tc.want, out)
		}
	}
}

func captureStdout(t *testing.T, fn func() error) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	ferr := fn()
	os.Stdout = old
	w.Close()
	b := make([]byte, 4096)
	n, _ := r.Read(b)
	r.Close()
	if ferr != nil {
		t.Fatal(ferr)
	}
	return string(b[:n])
}

func TestQueryRoundTrip(t *testing.T) {
	q, err := buildQuery(0x1234, "www.example.", "AAAA", false, true)
	if err != nil {
		t.Fatal(err)
	}
	// A query parses as a reply with no QR, one OPT with DO in additional.
	q[2] |= 0x84 // pretend: QR + AA
	r, err := parseReply(q)
	if err != nil {
		t.Fatal(err)
	}
	if r.id != 0x1234 || !r.qr || !r.aa || !r.do || !r.has(2, "OPT") {
		t.Errorf("round trip: %+v", r)
	}
	if _, err := parseReply(q[:len(q)-3]); err == nil {
		t.Error("truncated message parsed")
	}
	if _, err := buildQuery(1, "x.", "BOGUS", false, false); err == nil {
		t.Error("unknown type accepted")
	}
}

func TestGenDeterministic(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root.zone")
	var z strings.Builder
	z.WriteString(". 86400 IN SOA a. b. 1 2 3 4 5\n")
	for _, tld := range strings.Fields("com net org de uk fr nl se jp cn") {
		for i := 0; i < 11; i++ { // gen wants at least 100 delegations
			z.WriteString(tld + string(rune('a'+i)) + ". 172800 IN NS ns.example.\n")
		}
	}
	if err := os.WriteFile(root, []byte(z.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(dir string) string {
		var all strings.Builder
		for _, f := range []string{"small.zone", "small-success.txt", "small-nxdomain.txt", "root-referral.txt", "root-nxdomain.txt", "big.zone", "big-success.txt"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			all.Write(b)
		}
		return all.String()
	}
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if err := runGen([]string{"-out", d, "-root", root, "-big", "1000"}); err != nil {
			t.Fatal(err)
		}
	}
	if read(a) != read(b) {
		t.Error("two generations differ")
	}
	ref, _ := os.ReadFile(filepath.Join(a, "root-referral.txt"))
	if n := strings.Count(string(ref), "\n"); n != 110 {
		t.Errorf("%d referral queries, want 110", n)
	}
	nx, _ := os.ReadFile(filepath.Join(a, "root-nxdomain.txt"))
	for _, l := range strings.Split(strings.TrimSpace(string(nx)), "\n") {
		if strings.Contains(string(ref), l) {
			t.Errorf("nxdomain query %q names an existing TLD", l)
		}
	}
}

// TestReportFloors: the echo floors are never the best peer, and the
// ratio table shows Tern against both: the plain echo and the sized one.
func TestReportFloors(t *testing.T) {
	row := func(server string, qps, cpuUs float64) string {
		return fmt.Sprintf("root-referral-do\tternperf\t%s\t8\t1\t%.0f\t1000000\tok\t%.0f\t%.0f\t%.0f\t0.000\t100.0\tNOERROR=%.0f\t-\t99\n",
			server, cpuUs, qps, qps, qps, qps)
	}
	raw := rawHeader + "\n" +
		row("tern", 500000, 900000) + // 1.8 µs per query
		row("nsd", 250000, 900000) + // 3.6
		row("echo", 650000, 900000) +
		row("echosz", 600000, 900000)
	md := reportOf(t, raw)
	want := "| root-referral-do | 2.00 (nsd) | 0.50 (nsd) | 0.77 | 1.30 | 0.83 |"
	if !strings.Contains(md, want) {
		t.Fatalf("results.md lacks the ratio row %q:\n%s", want, md)
	}
}

// TestReportAuthorities: a resolver run's authorities' CPU (raw.tsv's
// last column) is the peak table's median, and a run without it (the
// authoritative phases', or raw.tsv from before the column) shows "–".
func TestReportAuthorities(t *testing.T) {
	row := func(w, server string, rep int, auth string) string {
		return fmt.Sprintf("%s\tdnsperf\t%s\t8\t%d\t900000\t1000000\tok\t50000\t50000\t50000\t0.000\t100.0\tNOERROR=50000\t-\t65%s\n",
			w, server, rep, auth)
	}
	raw := rawHeader + "\n" +
		row("res-mix", "tern", 1, "\t30") + row("res-mix", "tern", 2, "\t36") + row("res-mix", "tern", 3, "\t33") +
		row("res-mix", "unbound", 1, "\t") + row("soa", "tern", 1, "")
	md := reportOf(t, raw)
	for _, want := range []string{
		"| res-mix | tern | 8 | 50,000 | 0.00 | 0.100 | 18.00 | 90 | 65 | 33 | 3 | 0 |",
		"| res-mix | unbound | 8 | 50,000 | 0.00 | 0.100 | 18.00 | 90 | 65 | – | 1 | 0 |",
		"| soa | tern | 8 | 50,000 | 0.00 | 0.100 | 18.00 | 90 | 65 | – | 1 | 0 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("results.md lacks the peak row %q:\n%s", want, md)
		}
	}
}

// reportOf runs the report over raw (a raw.tsv's text, with an empty
// servers.tsv) and returns its results.md.
func reportOf(t *testing.T, raw string) string {
	t.Helper()
	dir := t.TempDir()
	srv := "phase\tserver\tevent\tload_ms\tpss_kb\trss_kb\tnproc\n"
	for name, text := range map[string]string{"raw.tsv": raw, "servers.tsv": srv} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := runReport([]string{"-raw", filepath.Join(dir, "raw.tsv"), "-servers", filepath.Join(dir, "servers.tsv"), "-out", dir}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(md)
}
