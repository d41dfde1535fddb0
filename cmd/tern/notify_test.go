package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/journal"
)

// notifyReceiver is a secondary on loopback that answers every NOTIFY
// and keeps the serials they carried.
type notifyReceiver struct {
	conn    net.PacketConn
	mu      sync.Mutex
	serials []uint32
}

func newNotifyReceiver(t *testing.T, ip string) *notifyReceiver {
	t.Helper()
	pc, err := net.ListenPacket("udp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	r := &notifyReceiver{conn: pc}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 65535)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			m := new(dns.Msg)
			if m.Unpack(buf[:n]) != nil || m.Opcode != dns.OpcodeNotify || len(m.Answer) != 1 {
				continue
			}
			if soa, ok := m.Answer[0].(*dns.SOA); ok {
				r.mu.Lock()
				r.serials = append(r.serials, soa.Serial)
				r.mu.Unlock()
			}
			resp := new(dns.Msg)
			resp.SetReply(m)
			if out, err := resp.Pack(); err == nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	return r
}

// wait waits (bounded) for a NOTIFY of serial.
func (r *notifyReceiver) wait(t *testing.T, serial uint32) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		r.mu.Lock()
		for _, s := range r.serials {
			if s == serial {
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
	}
	t.Fatalf("no NOTIFY of serial %d; got %v", serial, r.serials)
}

// TestServeNotifiesAndJournals: tern serve NOTIFYs a zone's notify list
// at start and after a reload that changes the serial, records the change
// in the zone's journal under server.data-dir, and answers an IXFR from
// the old serial with the difference (RFC 1995 §4).
func TestServeNotifiesAndJournals(t *testing.T) {
	dir := t.TempDir()
	ns2 := newNotifyReceiver(t, "127.0.0.122")
	zoneFile := filepath.Join(dir, "a.zone")
	writeZone := func(serial int) {
		text := fmt.Sprintf("$ORIGIN a.test.\n$TTL 300\n@ SOA ns1 h %d 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\nwww A 192.0.2.%d\n", serial, serial)
		if err := os.WriteFile(zoneFile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeZone(1)
	cfg := filepath.Join(dir, "tern.toml")
	text := fmt.Sprintf(`[server]
listen = ["127.0.0.1:0"]
workers = 1
data-dir = "data"

[[remote]]
name = "ns2"
address = [%q]

[[acl]]
name = "to-ns2"
remote = ["ns2"]
action = ["transfer"]

[[zone]]
origin = "a.test"
file = "a.zone"
notify = ["ns2"]
acl = ["to-ns2"]
`, ns2.conn.LocalAddr().String())
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, logs := serveLog(t, "-c", cfg)
	ns2.wait(t, 1)
	writeZone(2)
	hup(t, logs, "msg=reloaded", 1)
	ns2.wait(t, 2)
	// The server is secondary-to-be ns2's primary: its IXFR from 1.
	ixfr := new(dns.Msg)
	ixfr.SetIxfr("a.test.", 1, "ns1.a.test.", "h.a.test.")
	// From ns2's address: the ACL names the remote.
	d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.122")}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tr := &dns.Transfer{Conn: &dns.Conn{Conn: conn}}
	ch, err := tr.In(ixfr, addr)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for env := range ch {
		if env.Error != nil {
			t.Fatal(env.Error)
		}
		for _, rr := range env.RR {
			got = append(got, strings.Join(strings.Fields(rr.String()), " "))
		}
	}
	want := []string{
		"a.test. 300 IN SOA ns1.a.test. h.a.test. 2 7200 3600 1209600 300",
		"a.test. 300 IN SOA ns1.a.test. h.a.test. 1 7200 3600 1209600 300",
		"www.a.test. 300 IN A 192.0.2.1",
		"a.test. 300 IN SOA ns1.a.test. h.a.test. 2 7200 3600 1209600 300",
		"www.a.test. 300 IN A 192.0.2.2",
		"a.test. 300 IN SOA ns1.a.test. h.a.test. 2 7200 3600 1209600 300",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("IXFR from 1:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	j, _, err := journal.Open(journal.Path(filepath.Join(dir, "data"), "a.test."), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if first, last, ok := j.Serials(); !ok || first != 1 || last != 2 {
		t.Errorf("journal serials %d to %d (%v), want 1 to 2; log:\n%s", first, last, ok, logs.String())
	}
}
