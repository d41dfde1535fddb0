package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// perfResponder answers every UDP query on loopback by echoing it with QR
// set; it stops when the test ends.
func perfResponder(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Skipf("cannot listen on loopback: %v", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 4096)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if n >= 12 {
				buf[2] |= 0x80
				_, _ = c.WriteToUDPAddrPort(buf[:n], from)
			}
		}
	})
	t.Cleanup(func() {
		c.Close()
		wg.Wait()
	})
	return c.LocalAddr().(*net.UDPAddr).Port
}

func writeQueries(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "queries.txt")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPerfCommandJSON(t *testing.T) {
	port := perfResponder(t)
	qf := writeQueries(t, "; test\nwww.example.com A\nexample.com MX\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	// -t 10: no query may count as lost because a loaded machine stalled.
	code := runPerf(ctx, []string{"-s", "127.0.0.1", "-p", strconv.Itoa(port), "-d", qf, "-n", "50", "-t", "10", "-D", "-E", "10:0102", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	var s struct {
		QPS       float64           `json:"qps"`
		Sent      uint64            `json:"sent"`
		Completed uint64            `json:"completed"`
		Lost      uint64            `json:"lost"`
		Rcodes    map[string]uint64 `json:"rcodes"`
		AvgReq    uint64            `json:"avg_request_bytes"`
	}
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	if s.Sent != 100 || s.Completed != 100 || s.Lost != 0 || s.Rcodes["NOERROR"] != 100 || s.QPS <= 0 {
		t.Errorf("summary %+v", s)
	}
	// 12 header + question + 11 OPT + 6 option octets (DO and -E applied).
	if s.AvgReq < 12+17+11+6 {
		t.Errorf("average request %d octets: EDNS option missing?", s.AvgReq)
	}
}

func TestPerfCommandText(t *testing.T) {
	port := perfResponder(t)
	qf := writeQueries(t, "a.example A\n")
	var out, errb bytes.Buffer
	code := runPerf(context.Background(), []string{"-s", "127.0.0.1", "-p", strconv.Itoa(port), "-d", qf, "-l", "0.3", "-Q", "1000", "-e=false"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	for _, want := range []string{"[Status] Testing complete (time limit)", "Statistics:", "Queries per second:", "Average packet size:  request 27,", "Latency percentiles (s): p50"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestPerfCommandErrors(t *testing.T) {
	qf := writeQueries(t, "ok.example A\nbad..example A\n")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-s", "not-an-ip"}, 2, "IP address"},
		{[]string{"-p", "70000"}, 2, "port out of range"},
		{[]string{"-E", "nonsense"}, 2, "code:hexvalue"},
		{[]string{"-d", qf}, 1, "line 2"},
		{[]string{"-d", filepath.Join(t.TempDir(), "missing")}, 1, "no such file"},
		{[]string{"extra"}, 2, "unexpected arguments"},
	} {
		var out, errb bytes.Buffer
		code := runPerf(context.Background(), tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d stderr %q, want exit %d and %q", tc.args, code, errb.String(), tc.code, tc.want)
		}
	}
}
