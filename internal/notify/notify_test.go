package notify

import (
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/tsig"
)

// receiver is a secondary on loopback (this package's block of issue 13's
// addresses) that records the NOTIFYs it gets and answers as answer says.
type receiver struct {
	addr netip.AddrPort
	mu   sync.Mutex
	got  []*dns.Msg
	tsig []error // the TSIG verification of each (nil: verified or unsigned)
	// answerIf, when set, answers (NOERROR) the NOTIFYs it accepts and
	// drops the others, instead of answer.
	answerIf func(*dns.Msg) bool
	// from gets the source address of each NOTIFY.
	from chan netip.AddrPort
}

// answer returns the rcode to answer the n-th NOTIFY (from 1) with, or
// -1 to drop it.
func listen(t *testing.T, ip string, secrets map[string]string, answer func(n int) int) *receiver {
	t.Helper()
	pc, err := net.ListenPacket("udp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{addr: pc.LocalAddr().(*net.UDPAddr).AddrPort()}
	r.from = make(chan netip.AddrPort, 100)
	srv := &dns.Server{PacketConn: pc, TsigSecret: secrets, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, m *dns.Msg) {
		r.mu.Lock()
		r.got = append(r.got, m)
		r.tsig = append(r.tsig, w.TsigStatus())
		select {
		case r.from <- w.RemoteAddr().(*net.UDPAddr).AddrPort():
		default:
		}
		n, answerIf := len(r.got), r.answerIf
		r.mu.Unlock()
		rc := answer(n)
		if answerIf != nil {
			rc = -1
			if answerIf(m) {
				rc = dns.RcodeSuccess
			}
		}
		if rc < 0 {
			return
		}
		resp := new(dns.Msg)
		resp.SetRcode(m, rc)
		if ts := m.IsTsig(); ts != nil && w.TsigStatus() == nil {
			resp.SetTsig(ts.Hdr.Name, ts.Algorithm, 300, time.Now().Unix())
		}
		w.WriteMsg(resp)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go srv.ActivateAndServe()
	<-started
	t.Cleanup(func() { srv.Shutdown() })
	return r
}

func (r *receiver) messages() ([]*dns.Msg, []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*dns.Msg(nil), r.got...), append([]error(nil), r.tsig...)
}

func soa(serial uint32) *dns.SOA {
	return &dns.SOA{Hdr: dns.RR_Header{Name: "example.test.", Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 300},
		Ns: "ns1.example.test.", Mbox: "host.example.test.", Serial: serial, Refresh: 2, Retry: 3, Expire: 4, Minttl: 60}
}

// fast retries for tests: the waits bound a loaded machine's delays.
var fast = Options{Timeout: 100 * time.Millisecond, MaxTimeout: 400 * time.Millisecond, Attempts: 4}

// TestNotify: the message is RFC 1996's; a secondary that drops NOTIFYs
// gets them again until it answers, one that never answers gets Attempts
// of them, one that refuses gets one; a signed NOTIFY verifies.
func TestNotify(t *testing.T) {
	const keyName, secret = "xfr.", "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA=="
	key := &tsig.Key{Name: keyName, Algorithm: dns.HmacSHA256, Secret: secret}
	tests := []struct {
		name     string
		ip       string
		secrets  map[string]string
		key      *tsig.Key
		answer   func(n int) int
		sent     int
		log      string
		verified bool
	}{
		{"answered", "127.0.0.115", nil, nil, func(int) int { return dns.RcodeSuccess }, 1, "notify: answered", false},
		{"answered on the third", "127.0.0.116", nil, nil, func(n int) int {
			if n < 3 {
				return -1
			}
			return dns.RcodeSuccess
		}, 3, "notify: answered", false},
		{"never answered", "127.0.0.117", nil, nil, func(int) int { return -1 }, fast.Attempts, "notify: gave up", false},
		{"refused", "127.0.0.118", nil, nil, func(int) int { return dns.RcodeRefused }, 1, "notify: refused", false},
		{"signed", "127.0.0.119", map[string]string{keyName: secret}, key, func(int) int { return dns.RcodeSuccess }, 1, "notify: answered", true},
		// A secondary that does not know the key answers NOTAUTH,
		// unsigned (RFC 8945 §5.2): not an answer to a signed NOTIFY,
		// so it is tried again.
		{"signed, key unknown", "127.0.0.120", map[string]string{"other.": secret}, key, func(int) int { return dns.RcodeNotAuth }, fast.Attempts, "notify: gave up", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := listen(t, tc.ip, tc.secrets, tc.answer)
			var log dnstest.LogBuffer
			n := New(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})), fast)
			n.Notify("Example.TEST", soa(7), []Target{{Remote: "ns2", Addr: r.addr, Key: tc.key}})
			n.Wait()
			n.Close()
			got, verified := r.messages()
			if len(got) != tc.sent {
				t.Fatalf("received %d NOTIFYs, want %d; log:\n%s", len(got), tc.sent, log.String())
			}
			if !strings.Contains(log.String(), tc.log) {
				t.Errorf("log lacks %q:\n%s", tc.log, log.String())
			}
			m := got[0]
			// RFC 1996 §3.7: opcode NOTIFY, AA, QUESTION origin SOA, the
			// SOA in the answer section.
			if m.Opcode != dns.OpcodeNotify || !m.Authoritative || m.Response ||
				len(m.Question) != 1 || m.Question[0] != (dns.Question{Name: "example.test.", Qtype: dns.TypeSOA, Qclass: dns.ClassINET}) {
				t.Errorf("NOTIFY:\n%v", m)
			}
			if len(m.Answer) != 1 || m.Answer[0].(*dns.SOA).Serial != 7 {
				t.Errorf("answer section %v", m.Answer)
			}
			if signed := m.IsTsig() != nil; signed != (tc.key != nil) {
				t.Errorf("signed %v", signed)
			}
			if tc.verified && verified[0] != nil {
				t.Errorf("TSIG did not verify: %v", verified[0])
			}
		})
	}
}

// TestNewSerialSupersedes: a new serial stops the NOTIFYs of the old one
// still being retried; the secondary then hears only of the new one.
func TestNewSerialSupersedes(t *testing.T) {
	// The secondary answers only NOTIFYs of serial 2.
	r := listen(t, "127.0.0.121", nil, func(int) int { return -1 })
	r.mu.Lock()
	r.answerIf = func(m *dns.Msg) bool { return m.Answer[0].(*dns.SOA).Serial == 2 }
	r.mu.Unlock()
	var log dnstest.LogBuffer
	n := New(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Options{Timeout: 50 * time.Millisecond, MaxTimeout: 50 * time.Millisecond, Attempts: 1000})
	defer n.Close()
	target := []Target{{Addr: r.addr}}
	n.Notify("example.test", soa(1), target)
	// Wait (bounded) for serial 1 to arrive once, then change the serial.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if got, _ := r.messages(); len(got) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no NOTIFY arrived")
		}
	}
	n.Notify("example.test", soa(2), target)
	n.Wait()
	got, _ := r.messages()
	twos := 0
	for _, m := range got {
		if m.Answer[0].(*dns.SOA).Serial == 2 {
			twos++
		}
	}
	if twos != 1 {
		t.Errorf("%d NOTIFYs of serial 2, want 1 (answered at once)", twos)
	}
	// Serial 1's round was stopped rather than given up (its 1000 tries
	// would take a minute).
	if l := log.String(); !strings.Contains(l, "serial=1") || !strings.Contains(l, "superseded") {
		t.Errorf("serial 1's round was not superseded:\n%s", l)
	}
}

// TestRetryWaitsAfterRefusal: a try refused at once (port unreachable:
// the secondary is not listening yet) is retried after the try's
// interval, not at once, so that a secondary starting after the primary
// still hears of the change. The eight tries used to be spent in
// milliseconds.
func TestRetryWaitsAfterRefusal(t *testing.T) {
	// A free port on this package's address, closed again.
	pc, err := net.ListenPacket("udp", "127.0.0.123:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	pc.Close()
	var log dnstest.LogBuffer
	n := New(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Options{Timeout: time.Second, MaxTimeout: 2 * time.Second, Attempts: 8})
	defer n.Close()
	n.Notify("example.test", soa(9), []Target{{Addr: addr}})
	// Once the first try has been refused, the secondary starts.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(log.String(), "attempt=1"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no first try:\n%s", log.String())
		}
	}
	pc, err = net.ListenPacket("udp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, 512)
		for {
			k, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var m dns.Msg
			if m.Unpack(buf[:k]) == nil {
				resp := new(dns.Msg)
				resp.SetReply(&m)
				out, _ := resp.Pack()
				pc.WriteTo(out, from)
			}
		}
	}()
	n.Wait()
	if !strings.Contains(log.String(), "notify: answered") {
		t.Errorf("never answered:\n%s", log.String())
	}
}

// TestSource: NOTIFYs leave from the address Options.Source gives (the
// server's own, which the secondary knows its primary by), not the one
// the system would pick.
func TestSource(t *testing.T) {
	r := listen(t, "127.0.0.124", nil, func(int) int { return dns.RcodeSuccess })
	src := netip.MustParseAddr("127.0.0.125")
	n := New(nil, Options{Timeout: time.Second, Source: func(netip.AddrPort) netip.Addr { return src }})
	n.Notify("example.test", soa(3), []Target{{Addr: r.addr}})
	n.Wait()
	n.Close()
	if got := (<-r.from).Addr(); got != src {
		t.Errorf("NOTIFY from %s, want %s", got, src)
	}
}
