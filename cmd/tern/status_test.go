package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/metrics"
)

// serveStatus starts tern serve with example.com, one worker, and a
// metrics listener, all on ip.
func serveStatus(t *testing.T, ip string) (dnsAddr, httpAddr string) {
	t.Helper()
	return serveMetrics(t, ip, "--workers", "1", "--zone", "example.com=../../examples/example.com.zone")
}

// getStatus reads /status.json from the listener at addr.
func getStatus(t *testing.T, addr string) metrics.Status {
	t.Helper()
	res, err := http.Get("http://" + addr + "/status.json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st metrics.Status
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /status.json: %d %v", res.StatusCode, err)
	}
	return st
}

// query sends name/qtype over UDP to addr (one try) and checks the
// RCODE.
func query(t *testing.T, addr, name string, qtype uint16, rcode int) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	c := &dns.Client{Timeout: 10 * time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil || r.Rcode != rcode {
		t.Errorf("%s %d: %v %v", name, qtype, r, err)
	}
}

// TestStatusJSON: after known queries /status.json counts them by
// RCODE, the name queried most is the busiest sampled one (the first
// query of a worker and one in SampleEvery after it are sampled), the
// query rate shows them, and the zone is listed with its serial, role
// and load; the page and its files are served with their CSP.
func TestStatusJSON(t *testing.T) {
	dnsAddr, httpAddr := serveStatus(t, "127.0.0.190")
	const busy = 3 * metrics.SampleEvery
	for range busy {
		query(t, dnsAddr, "mail.example.com.", dns.TypeAAAA, dns.RcodeSuccess)
	}
	for range 5 {
		query(t, dnsAddr, "nope.example.com.", dns.TypeA, dns.RcodeNameError)
	}
	if t.Failed() {
		t.FailNow()
	}
	// Samples reach the sampler at the end of a later batch, and at a
	// tick (every second): REFUSED queries until the 4 samples of the
	// first 3*SampleEvery+6 queries are counted (bounded).
	var st metrics.Status
	refused := 0
	deadline := time.Now().Add(30 * time.Second)
	for {
		query(t, dnsAddr, "www.example.org.", dns.TypeA, dns.RcodeRefused)
		refused++
		st = getStatus(t, httpAddr)
		if st.Sampled >= 4 && st.Queries["auth"] == uint64(busy+5+refused) || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if got := st.Queries["auth"]; got != uint64(busy+5+refused) {
		t.Errorf("queries %d, want %d", got, busy+5+refused)
	}
	if st.Rcodes["NOERROR"] != busy || st.Rcodes["NXDOMAIN"] != 5 || st.Rcodes["REFUSED"] != uint64(refused) {
		t.Errorf("rcodes %v", st.Rcodes)
	}
	if len(st.TopNames) == 0 || st.TopNames[0].Key != "mail.example.com." || st.TopNames[0].Count != 3 {
		t.Errorf("top names %v, want mail.example.com. (3 samples) first", st.TopNames)
	}
	if len(st.TopClients) != 1 || st.TopClients[0].Key != "127.0.0.1" && st.TopClients[0].Key != "127.0.0.190" {
		t.Errorf("top clients %v", st.TopClients)
	}
	var sum float64
	for _, p := range st.Rate {
		sum += p.QPS
	}
	if sum <= 0 {
		t.Errorf("no queries in the rate %v", st.Rate)
	}
	if len(st.Zones) != 1 || st.Zones[0].Origin != "example.com." || st.Zones[0].Serial != 2026120201 ||
		st.Zones[0].Role != "primary" || !st.Zones[0].Serving || st.Zones[0].LastEvent != "load" || st.Zones[0].Queries != busy+5 {
		t.Errorf("zones %+v", st.Zones)
	}
	if st.Resolver {
		t.Error("resolver shown without one")
	}

	for path, want := range map[string]string{"/": "<canvas id=\"chart\"", "/status.js": "status.json", "/status.css": "--accent"} {
		res, err := http.Get("http://" + httpAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), want) ||
			!strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("GET %s: %d, CSP %q, %d bytes", path, res.StatusCode, res.Header.Get("Content-Security-Policy"), len(body))
		}
	}
	if res, err := http.Get("http://" + httpAddr + "/nothing"); err != nil || res.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing: %v %v", res, err)
	}
}

// dumpDOM loads url in headless chromium, lets the page run for ten
// seconds of virtual time (its polling included), and returns the DOM
// then.
func dumpDOM(t *testing.T, bin, url string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=10000", "--dump-dom", url}
	cmd := exec.CommandContext(ctx, bin, args...)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%v: %s", err, errb.String())
	}
	return string(out), nil
}

// attr is the value of attribute name in the first tag of html that
// matches tag (a regexp), "" when there is none.
func attr(html, tag, name string) string {
	m := regexp.MustCompile(`<` + tag + `[^>]*>`).FindString(html)
	if v := regexp.MustCompile(`\s` + regexp.QuoteMeta(name) + `="([^"]*)"`).FindStringSubmatch(m); v != nil {
		return v[1]
	}
	return ""
}

// TestStatusPage is issue 15's browser test: headless chromium loads the
// status page of a server answering queries, and after its script has
// drawn, the chart has points, the last one above 0 queries per second;
// the RCODE table has NOERROR and NXDOMAIN rows, the busiest name is the
// one queried most, and the zone shows its serial.
func TestStatusPage(t *testing.T) {
	bin := peerTool(t, "chromium")
	dnsAddr, httpAddr := serveStatus(t, "127.0.0.191")
	// Queries all along, so that every second of the chart has some:
	// mostly one name, some NXDOMAIN. Bounded in count and time.
	stop := make(chan struct{})
	done := make(chan struct{})
	defer func() { close(stop); <-done }()
	go func() {
		defer close(done)
		c := &dns.Client{Timeout: 2 * time.Second}
		for i := 0; i < 20000; i++ {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			m := new(dns.Msg)
			if i%4 == 3 {
				m.SetQuestion("nope.example.com.", dns.TypeA)
			} else {
				m.SetQuestion("www.example.com.", dns.TypeA)
			}
			c.Exchange(m, dnsAddr)
		}
	}()
	// Wait for three points of rate, so the page's first look has a
	// chart to draw.
	deadline := time.Now().Add(30 * time.Second)
	for len(getStatus(t, httpAddr).Rate) < 3 {
		if time.Now().After(deadline) {
			t.Fatal("no rate points after 30 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	var dom string
	for try := 0; try < 3; try++ {
		var err error
		dom, err = dumpDOM(t, bin, "http://"+httpAddr+"/")
		if err == nil && attr(dom, `body`, "data-renders") != "" {
			break
		}
		t.Logf("try %d: %v", try, err)
	}
	points, _ := strconv.Atoi(attr(dom, `canvas id="chart"`, "data-points"))
	last, _ := strconv.ParseFloat(attr(dom, `canvas id="chart"`, "data-last"), 64)
	if points < 2 || last <= 0 {
		t.Errorf("chart: %d points, last %v qps", points, last)
	}
	for _, rc := range []string{"NOERROR", "NXDOMAIN"} {
		if attr(dom, `tr data-rcode="`+rc+`"`, "data-count") == "" {
			t.Errorf("no %s row", rc)
		}
	}
	if got := attr(dom, `table id="names"`+`[^>]*>\s*<tbody>\s*<tr`, "data-name"); got != "www.example.com." {
		t.Errorf("busiest name %q, want www.example.com.", got)
	}
	if got := attr(dom, `tr data-origin="example.com."`, "data-serial"); got != "2026120201" {
		t.Errorf("zone serial %q, want 2026120201", got)
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}
}
