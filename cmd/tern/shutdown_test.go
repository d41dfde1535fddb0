package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest"
)

// Issue 15's operations tests (127.0.0.180-189): each test its own.
const (
	opsShutdown = "127.0.0.180"
	opsLogJSON  = "127.0.0.182"
)

// childArgsEnv holds the arguments of the tern process TestServeChild
// runs, separated by newlines.
const childArgsEnv = "TERN_CHILD_ARGS"

// TestServeChild is tern run as a process of its own, with main's
// signal handling, for the tests that signal it or look at its process
// (startChild). It is skipped unless run as that child.
func TestServeChild(t *testing.T) {
	args := os.Getenv(childArgsEnv)
	if args == "" {
		t.Skip("run by startChild only")
	}
	os.Exit(runSignalled(strings.Split(args, "\n")))
}

// child is a tern process started by startChild.
type child struct {
	cmd  *exec.Cmd
	addr string             // the address serve printed
	logs *dnstest.LogBuffer // its standard error
	done chan struct{}      // closed once it ended
	err  error              // cmd.Wait's, once done
}

// startChild runs tern with args in a process of its own and waits
// until it serves; the test's cleanup kills it if it still runs.
func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	ch := &child{logs: new(dnstest.LogBuffer), done: make(chan struct{})}
	ch.cmd = exec.Command(os.Args[0], "-test.run=^TestServeChild$")
	ch.cmd.Env = append(os.Environ(), childArgsEnv+"="+strings.Join(args, "\n"))
	ch.cmd.Stderr = ch.logs
	out, err := ch.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := serveAddr.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		ch.err = ch.cmd.Wait()
		close(ch.done)
	}()
	t.Cleanup(func() {
		select {
		case <-ch.done:
		default:
			ch.cmd.Process.Kill()
			<-ch.done
		}
	})
	select {
	case ch.addr = <-found:
		return ch
	case <-ch.done:
		t.Fatalf("tern ended before serving (%v): %s", ch.err, ch.logs.String())
	case <-time.After(time.Minute):
		t.Fatalf("tern did not serve within a minute: %s", ch.logs.String())
	}
	return nil
}

// wait waits (a minute at most) for the child to end and returns its
// exit code.
func (ch *child) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-ch.done:
	case <-time.After(time.Minute):
		t.Fatalf("tern did not end within a minute: %s", ch.logs.String())
	}
	if ch.err != nil {
		if ee, ok := ch.err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		t.Fatal(ch.err)
	}
	return 0
}

// bigZone is a zone of n TXT records of 250 bytes: about n*280 bytes in
// an AXFR.
func bigZone(origin string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "$ORIGIN %s\n$TTL 300\n@ SOA ns1 hostmaster 1 3600 600 86400 300\n@ NS ns1\nns1 A 192.0.2.1\n", origin)
	long := strings.Repeat("x", 250)
	for i := range n {
		fmt.Fprintf(&b, "t%d TXT %q\n", i, long)
	}
	return b.String()
}

// TestShutdownGraceful: SIGTERM while a dynamic update waits for its
// zonefile-sync (an hour) and an AXFR of a large zone is in progress
// (its client reading slowly, with a small receive buffer: the server
// has most of it still to send): the transfer completes, the zone file
// holds the update, tern logs "shutting down" and "stopped" and exits
// 0. Without the graceful stop the transfer is cut off and the file
// keeps its old content (the update only in the journal).
func TestShutdownGraceful(t *testing.T) {
	dir := t.TempDir()
	const records = 40000 // about 11 MB: more than the sockets' buffers
	if err := os.WriteFile(filepath.Join(dir, "big.zone"), []byte(bigZone("big.test.", records)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, zoneFile := updConfig(t, dir, "1h", "\n[[zone]]\norigin = \"big.test\"\nfile = \"big.zone\"\nacl = [\"local\"]\n")
	ch := startChild(t, "serve", "-c", cfg, "--listen", opsShutdown+":0", "--workers", "1")

	// The update, answered: journaled, not yet in the file.
	addSigned(t, ch, `flushed.dyn.test. 60 TXT "at shutdown"`)
	if b, _ := os.ReadFile(zoneFile); strings.Contains(string(b), "flushed") {
		t.Fatal("the zone file holds the update before the stop")
	}

	// The AXFR, its first message read.
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
	}}
	conn, err := d.Dial("tcp", ch.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tr := &dns.Transfer{Conn: &dns.Conn{Conn: conn}}
	q := new(dns.Msg)
	q.SetAxfr("big.test.")
	env, err := tr.In(q, ch.addr)
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	first := <-env
	if first.Error != nil {
		t.Fatal(first.Error)
	}
	got += len(first.RR)

	if err := ch.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The server stops while the transfer is under way.
	for deadline := time.Now().Add(time.Minute); !strings.Contains(ch.logs.String(), "shutting down"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no 'shutting down' logged: %s", ch.logs.String())
		}
	}
	var last dns.RR
	for e := range env {
		if e.Error != nil {
			t.Fatalf("AXFR after %d records: %v\nlog: %s", got, e.Error, ch.logs.String())
		}
		got += len(e.RR)
		if len(e.RR) > 0 {
			last = e.RR[len(e.RR)-1]
		}
	}
	// SOA, NS, A, the TXTs, SOA.
	if want := records + 4; got != want || last == nil || last.Header().Rrtype != dns.TypeSOA {
		t.Errorf("AXFR: %d records ending with %v, want %d ending with the SOA", got, last, want)
	}
	if code := ch.wait(t); code != 0 {
		t.Errorf("exit code %d, want 0; log:\n%s", code, ch.logs.String())
	}
	b, err := os.ReadFile(zoneFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `flushed.dyn.test.	60	IN	TXT	"at shutdown"`) {
		t.Errorf("zone file after the stop lacks the update:\n%s\nlog:\n%s", b, ch.logs.String())
	}
	logs := ch.logs.String()
	for _, want := range []string{"shutting down", "zone file written", "msg=stopped"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

// TestLogJSON: with server.log-format = "json" every line tern serve
// logs is a JSON object with time, level and msg; the start's lines
// carry their keys (starting: version; serving: listen, the address
// served); with query-log = 1 the one query asked is logged with its
// client, qname, qtype, rcode, transport and size.
func TestLogJSON(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tern.toml")
	if err := os.WriteFile(cfg, []byte("[server]\nlog-format = \"json\"\nquery-log = 1\ncontrol = \"\"\ndata-dir = \"data\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, logs, stop := serveStoppable(t, serveAddr, "-c", cfg, "--listen", opsLogJSON+":0", "--workers", "1")
	m := new(dns.Msg)
	m.SetQuestion("www.example.test.", dns.TypeA)
	if _, err := dnstest.Exchange(m, "udp", addr); err != nil {
		t.Fatal(err)
	}
	stop()
	seen := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("log line not JSON: %v: %q", err, line)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := obj[k]; !ok {
				t.Errorf("log line without %q: %q", k, line)
			}
		}
		if msg, _ := obj["msg"].(string); msg != "" {
			seen[msg] = obj
		}
	}
	if v, _ := seen["starting"]["version"].(string); v == "" {
		t.Errorf("no starting line with a version: %v", seen["starting"])
	}
	if l, _ := seen["serving"]["listen"].(string); l != addr {
		t.Errorf("serving line's listen %q, want %q", l, addr)
	}
	if q := seen["query"]; q["qname"] != "www.example.test." || q["qtype"] != "A" || q["rcode"] != "NOERROR" || q["transport"] != "udp" || q["client"] == nil || q["size"] == nil {
		t.Errorf("query-log = 1: query line %v", q)
	}
	for _, msg := range []string{"shutting down", "stopped"} {
		if seen[msg] == nil {
			t.Errorf("no %q line: %s", msg, logs.String())
		}
	}
}

// addSigned adds rr to dyn.test. on ch by a dynamic update signed with
// key upd, and fails the test unless it is answered NOERROR.
func addSigned(t *testing.T, ch *child, rr string) {
	t.Helper()
	u := new(dns.Msg)
	u.SetUpdate("dyn.test.")
	r, err := dns.NewRR(rr)
	if err != nil {
		t.Fatal(err)
	}
	u.Insert([]dns.RR{r})
	u.SetTsig("upd.", dns.HmacSHA256, 300, time.Now().Unix())
	c := &dns.Client{Net: "tcp", Timeout: 10 * time.Second, TsigSecret: map[string]string{"upd.": updSecret}}
	resp, _, err := c.Exchange(u, ch.addr)
	if err != nil || resp.Rcode != dns.RcodeSuccess {
		t.Fatalf("update: %v %v\nlog: %s", resp, err, ch.logs.String())
	}
}
