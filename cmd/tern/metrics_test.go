package main

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// serveMetrics starts tern serve with args, its DNS listener and a
// metrics listener on ip (kernel-picked ports), and returns the DNS
// address and the metrics listener's.
func serveMetrics(t *testing.T, ip string, args ...string) (dnsAddr, httpAddr string) {
	t.Helper()
	q := regexp.QuoteMeta(ip)
	// What serve prints: the DNS address, then the metrics listener's.
	both, _ := serveUntil(t, regexp.MustCompile(`(?s)(on `+q+`:\d+ .*metrics on http://`+q+`:\d+)/metrics`),
		append([]string{"--listen", ip + ":0", "--metrics", ip + ":0"}, args...)...)
	m := regexp.MustCompile(`on (` + q + `:\d+) .*http://(` + q + `:\d+)`).FindStringSubmatch(strings.ReplaceAll(both, "\n", " "))
	if m == nil {
		t.Fatalf("no addresses in %q", both)
	}
	return m[1], m[2]
}

// scrape returns the /metrics text of the listener at addr.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", res.StatusCode, err)
	}
	return string(body)
}

// sample is the value of the sample line that starts with name{labels}
// in text, "" when there is none.
func sample(text, series string) string {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// askOnce sends one query to addr over netw (no retry: a count off by a
// retry would hide a double count) and fails t unless it is answered
// with rcode want.
func askOnce(t *testing.T, addr, netw, name string, qtype uint16, want int) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	c := &dns.Client{Net: netw, Timeout: 10 * time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil || r.Rcode != want {
		t.Fatalf("%s %s %d: %v %v", netw, name, qtype, r, err)
	}
}

// TestMetrics: with --metrics, the queries a server answers show on
// /metrics by transport, QTYPE, RCODE and zone, by DNS cookie (a query
// with a client cookie alone, one with the server cookie it got back),
// a runt datagram as a malformed drop, and the zone's serial and load; the values as sent
// (one exchange each, no retry: a count off by a retry would hide a
// double count).
func TestMetrics(t *testing.T) {
	dnsAddr, httpAddr := serveMetrics(t, "127.0.0.150", "--zone", "example.com=../../examples/example.com.zone", "--workers", "1")
	ask := func(netw, name string, qtype uint16, want int) {
		t.Helper()
		askOnce(t, dnsAddr, netw, name, qtype, want)
	}
	for range 3 {
		ask("udp", "mail.example.com.", dns.TypeAAAA, dns.RcodeSuccess)
	}
	ask("tcp", "mail.example.com.", dns.TypeAAAA, dns.RcodeSuccess)
	ask("udp", "nope.example.com.", dns.TypeA, dns.RcodeNameError)
	ask("udp", "www.example.org.", dns.TypeMX, dns.RcodeRefused)
	// A client cookie alone, then with the server cookie it got.
	cookie := "0102030405060708"
	for range 2 {
		m := new(dns.Msg)
		m.SetQuestion("mail.example.com.", dns.TypeA)
		m.SetEdns0(1232, false)
		m.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: cookie}}
		r, _, err := (&dns.Client{Timeout: 10 * time.Second}).Exchange(m, dnsAddr)
		if err != nil || r.Rcode != dns.RcodeSuccess || r.IsEdns0() == nil {
			t.Fatalf("cookie query: %v %v", r, err)
		}
		cookie = ""
		for _, o := range r.IsEdns0().Option {
			if c, ok := o.(*dns.EDNS0_COOKIE); ok {
				cookie = c.Cookie
			}
		}
		if len(cookie) != 2*(8+16) {
			t.Fatalf("cookie in the response: %q", cookie)
		}
	}
	c, err := net.Dial("udp", dnsAddr)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte{1, 2, 3}) // a runt: dropped
	c.Close()

	want := map[string]string{
		`tern_queries_total{qtype="AAAA",rcode="NOERROR",server="auth",transport="udp"}`: "3",
		`tern_queries_total{qtype="AAAA",rcode="NOERROR",server="auth",transport="tcp"}`: "1",
		`tern_queries_total{qtype="A",rcode="NXDOMAIN",server="auth",transport="udp"}`:   "1",
		`tern_queries_total{qtype="MX",rcode="REFUSED",server="auth",transport="udp"}`:   "1",
		`tern_zone_queries_total{zone="example.com."}`:                                   "7",
		`tern_cookies_total{result="none",server="auth"}`:                                "6",
		`tern_cookies_total{result="client-only",server="auth"}`:                         "1",
		`tern_cookies_total{result="valid",server="auth"}`:                               "1",
		`tern_cookies_total{result="badcookie",server="auth"}`:                           "0",
		`tern_dropped_queries_total{reason="malformed",server="auth"}`:                   "1",
		`tern_response_size_bytes_count{server="auth",transport="udp"}`:                  "7",
		`tern_zone_serial{role="primary",zone="example.com."}`:                           "2.026120201e+09",
		`tern_zone_serving{role="primary",zone="example.com."}`:                          "1",
		`tern_zone_events_total{event="load",result="ok"}`:                               "1",
	}
	// The runt has no answer to wait for: scrape until it shows.
	var text string
	for try := 0; try < 100; try++ {
		text = scrape(t, httpAddr)
		if sample(text, `tern_dropped_queries_total{reason="malformed",server="auth"}`) == "1" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for series, v := range want {
		if got := sample(text, series); got != v {
			t.Errorf("%s = %q, want %q", series, got, v)
		}
	}
	if !strings.Contains(text, "go_goroutines ") || !strings.Contains(text, "tern_answer_duration_seconds_bucket") {
		t.Errorf("no Go runtime or latency metrics in:\n%s", text)
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", text)
	}
}

// TestMetricsOff: without --metrics nothing listens and serve says
// nothing of metrics.
func TestMetricsOff(t *testing.T) {
	out, _ := serveUntil(t, regexp.MustCompile(`(?s)(tern: serving.*)$`), "--listen", "127.0.0.150:0")
	if strings.Contains(out, "metrics") {
		t.Errorf("serve printed %q", out)
	}
}
