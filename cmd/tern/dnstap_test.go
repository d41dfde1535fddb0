package main

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dt "github.com/dnstap/golang-dnstap"
	"github.com/miekg/dns"
	"google.golang.org/protobuf/proto"

	"github.com/tern-dns/tern/internal/dnstap"
	"github.com/tern-dns/tern/internal/peer"
)

// TestDnstapFile's and TestDnstapSocket's listener addresses (issue
// 15's block).
const (
	opsDnstap       = "127.0.0.183"
	opsDnstapSocket = "127.0.0.184"
)

// sentQuery is a query a test sent and what it knows of it.
type sentQuery struct {
	query []byte // the query's bytes as sent
	reply *dns.Msg
	tcp   bool
	local netip.AddrPort // the client's address and port
}

// exchangeFrom sends m over netw ("udp" or "tcp") to addr from a socket
// of its own and returns what the dnstap record of it must show.
func exchangeFrom(t *testing.T, netw, addr string, m *dns.Msg) sentQuery {
	t.Helper()
	c, err := net.Dial(netw, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	co := &dns.Conn{Conn: c}
	if _, err := co.Write(q); err != nil {
		t.Fatal(err)
	}
	r, err := co.ReadMsg()
	if err != nil {
		t.Fatalf("%s %s: %v", netw, m.Question[0].Name, err)
	}
	return sentQuery{query: q, reply: r, tcp: netw == "tcp", local: netip.MustParseAddrPort(c.LocalAddr().String())}
}

// TestDnstapFile: with [dnstap] file, every answer of tern serve is in
// the file once it has stopped (SIGTERM), as an AUTH_QUERY and an
// AUTH_RESPONSE with the client's address and port, the transport, and
// the query and answer bytes; the library's reader and BIND's
// dnstap-read both read it.
func TestDnstapFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "dnstap.fstrm")
	cfg := filepath.Join(dir, "tern.toml")
	conf := fmt.Sprintf("[server]\ncontrol = \"\"\ndata-dir = \"data\"\n[dnstap]\nfile = %q\n", out)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	ch := startChild(t, "serve", "-c", cfg, "--listen", opsDnstap+":0", "--workers", "2")
	const n = 20
	var sent []sentQuery
	for i := 0; i < n; i++ {
		for _, netw := range []string{"udp", "tcp"} {
			m := new(dns.Msg)
			name := "www.example.test."
			if i%2 == 1 {
				name = fmt.Sprintf("nx%d-%s.example.test.", i, netw)
			}
			m.SetQuestion(name, dns.TypeA)
			m.Id = uint16(1000 + len(sent))
			sent = append(sent, exchangeFrom(t, netw, ch.addr, m))
		}
	}
	if err := ch.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := ch.wait(t); code != 0 {
		t.Fatalf("exit %d: %s", code, ch.logs.String())
	}
	msgs := readDnstap(t, out)
	server := netip.MustParseAddrPort(ch.addr)
	byKey := map[string]*dt.Message{}
	for _, m := range msgs {
		if m.GetResponsePort() != uint32(server.Port()) || !bytes.Equal(m.GetResponseAddress(), server.Addr().AsSlice()) {
			t.Errorf("%v: response address %v port %d, want %v", m.GetType(), net.IP(m.GetResponseAddress()), m.GetResponsePort(), server)
		}
		byKey[fmt.Sprintf("%v/%v/%d", m.GetType(), m.GetSocketProtocol(), m.GetQueryPort())] = m
	}
	if len(msgs) != 2*len(sent) {
		t.Errorf("%d dnstap messages, want %d", len(msgs), 2*len(sent))
	}
	for _, s := range sent {
		proto := dt.SocketProtocol_UDP
		if s.tcp {
			proto = dt.SocketProtocol_TCP
		}
		what := fmt.Sprintf("%s over %v from %v", s.reply.Question[0].Name, proto, s.local)
		q := byKey[fmt.Sprintf("%v/%v/%d", dt.Message_AUTH_QUERY, proto, s.local.Port())]
		r := byKey[fmt.Sprintf("%v/%v/%d", dt.Message_AUTH_RESPONSE, proto, s.local.Port())]
		if q == nil || r == nil {
			t.Errorf("%s: query %v, response %v recorded", what, q != nil, r != nil)
			continue
		}
		for _, m := range []*dt.Message{q, r} {
			if m.GetSocketFamily() != dt.SocketFamily_INET || !bytes.Equal(m.GetQueryAddress(), s.local.Addr().AsSlice()) || m.GetQueryTimeSec() == 0 {
				t.Errorf("%s: %v family %v address %v time %d", what, m.GetType(), m.GetSocketFamily(), net.IP(m.GetQueryAddress()), m.GetQueryTimeSec())
			}
		}
		if !bytes.Equal(q.GetQueryMessage(), s.query) {
			t.Errorf("%s: query message %x, sent %x", what, q.GetQueryMessage(), s.query)
		}
		got := new(dns.Msg)
		if err := got.Unpack(r.GetResponseMessage()); err != nil {
			t.Errorf("%s: response message: %v", what, err)
			continue
		}
		if got.Id != s.reply.Id || got.Rcode != s.reply.Rcode || len(got.Answer) != len(s.reply.Answer) || got.Question[0] != s.reply.Question[0] || r.GetResponseTimeSec() == 0 {
			t.Errorf("%s: response recorded\n%v\nreceived\n%v", what, got, s.reply)
		}
	}

	// BIND's reader: one line a message.
	path, ok := peer.FindTool("dnstap-read")
	if !ok {
		if os.Getenv("TERN_REQUIRE_PEERS") != "" {
			t.Fatal("dnstap-read not found (TERN_REQUIRE_PEERS is set; Debian: bind9-dnsutils)")
		}
		t.Skip("dnstap-read not found (Debian: bind9-dnsutils)")
	}
	text, err := exec.Command(path, out).CombinedOutput()
	if err != nil {
		t.Fatalf("dnstap-read: %v: %s", err, text)
	}
	lines := strings.Split(strings.TrimSpace(string(text)), "\n")
	if len(lines) != 2*len(sent) || !strings.Contains(lines[0], " AQ ") || !strings.Contains(lines[1], " AR ") {
		t.Errorf("dnstap-read: %d lines, want %d, starting AQ, AR:\n%s", len(lines), 2*len(sent), text)
	}
}

// readDnstap reads the dnstap messages of a Frame Streams file with
// the library's reader; each record must be a MESSAGE with an identity.
func readDnstap(t *testing.T, path string) []*dt.Message {
	t.Helper()
	records, err := dnstap.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []*dt.Message
	for i, d := range records {
		if d.GetType() != dt.Dnstap_MESSAGE || d.Message == nil || len(d.GetIdentity()) == 0 {
			t.Fatalf("record %d: %v", i, d)
		}
		msgs = append(msgs, d.Message)
	}
	return msgs
}

// TestDnstapSocket: with [dnstap] socket, tern serve connects to the
// collector with the bidirectional Frame Streams handshake and sends
// the records of its answers; stopping it ends the stream.
func TestDnstapSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "tern-dnstap") // short: a socket path is < 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s")
	frames, stopCollector, err := dnstap.Collect(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer stopCollector()
	cfg := filepath.Join(dir, "tern.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[server]\ncontrol = \"\"\ndata-dir = \"data\"\n[dnstap]\nsocket = %q\n", sock)), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, logs, stop := serveStoppable(t, serveAddr, "-c", cfg, "--listen", opsDnstapSocket+":0", "--workers", "1")
	m := new(dns.Msg)
	m.SetQuestion("www.example.test.", dns.TypeA)
	s := exchangeFrom(t, "udp", addr, m)
	stop()
	var types []dt.Message_Type
	deadline := time.After(time.Minute)
	for done := false; !done; {
		select {
		case f, ok := <-frames:
			if !ok {
				done = true
				break
			}
			var d dt.Dnstap
			if err := proto.Unmarshal(f, &d); err != nil {
				t.Fatal(err)
			}
			types = append(types, d.GetMessage().GetType())
			if d.GetMessage().GetQueryPort() != uint32(s.local.Port()) {
				t.Errorf("query port %d, want %d", d.GetMessage().GetQueryPort(), s.local.Port())
			}
		case <-deadline:
			t.Fatalf("the stream did not end within a minute; got %v; log: %s", types, logs.String())
		}
	}
	if len(types) != 2 || types[0] != dt.Message_AUTH_QUERY || types[1] != dt.Message_AUTH_RESPONSE {
		t.Errorf("messages %v, want AUTH_QUERY, AUTH_RESPONSE; log: %s", types, logs.String())
	}
}
