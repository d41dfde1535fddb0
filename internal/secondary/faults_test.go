package secondary

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/tsig"
)

// Secrets of the crafted-stream primary: the key both sides share, and
// another of the same length a forger might use.
const (
	streamSecret = "c2VjcmV0IGtleSBmb3IgdGhlIGV4YW1wbGUgb25seQ=="
	forgedSecret = "b3RoZXIgc2VjcmV0IG9mIHRoZSBzYW1lIGxlbmd0aCEh"
)

// streamPrimary answers SOA queries over UDP and every transfer over TCP
// with a stream it crafts byte by byte (on 127.0.0.107, issue 13's
// block, a kernel-picked port): the zone s.test of serial, in messages of
// 40 records, signed with streamSecret (the request's MAC first, then
// each message's the one before it, RFC 8945 §5.3.1) unless the mode
// says otherwise. Modes:
//
//	good        the whole zone, each message signed
//	cut         the second message's length prefix and half its bytes, then the connection closed
//	corrupt     a record whose RDLENGTH runs past the end of its message
//	forged      every message signed with another secret
//	forged-late the first message signed right, the second with another secret
//	unsigned    no TSIG at all, although the request was signed
type streamPrimary struct {
	mu     sync.Mutex
	serial uint32
	mode   string
}

func (p *streamPrimary) set(serial uint32, mode string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.serial, p.mode = serial, mode
}

// records are the zone of serial: SOA, NS, ns1, and 200 hosts whose
// addresses end in serial; the closing SOA is the caller's.
func (p *streamPrimary) records(serial uint32) []dns.RR {
	var rrs []dns.RR
	add := func(s string) {
		rr, err := dns.NewRR(s)
		if err != nil {
			panic(err)
		}
		rrs = append(rrs, rr)
	}
	add(fmt.Sprintf("s.test. 300 IN SOA ns1.s.test. h.s.test. %d 3600 600 86400 300", serial))
	add("s.test. 300 IN NS ns1.s.test.")
	add("ns1.s.test. 300 IN A 192.0.2.1")
	for i := range 200 {
		add(fmt.Sprintf("h%d.s.test. 300 IN A 10.0.%d.%d", i, i, serial))
	}
	return rrs
}

// stream returns the messages of the transfer answering q (whose TSIG's
// MAC is qmac), each framed with its length.
func (p *streamPrimary) stream(q *dns.Msg, qmac string) [][]byte {
	p.mu.Lock()
	serial, mode := p.serial, p.mode
	p.mu.Unlock()
	rrs := p.records(serial)
	rrs = append(rrs, rrs[0])
	var out [][]byte
	prev := qmac
	for i := 0; i < len(rrs); i += 40 {
		m := new(dns.Msg)
		m.SetReply(q)
		m.Authoritative = true
		m.Extra = nil
		m.Answer = rrs[i:min(i+40, len(rrs))]
		var wire []byte
		var err error
		secret := streamSecret
		if mode == "forged" || mode == "forged-late" && len(out) == 1 {
			secret = forgedSecret
		}
		if mode == "unsigned" || q.IsTsig() == nil {
			wire, err = m.Pack()
		} else {
			m.SetTsig(q.IsTsig().Hdr.Name, q.IsTsig().Algorithm, tsig.Fudge, time.Now().Unix())
			wire, prev, err = dns.TsigGenerate(m, secret, prev, len(out) > 0)
		}
		if err != nil {
			panic(err)
		}
		if mode == "corrupt" && len(out) == 1 {
			// The last record's RDLENGTH made larger than what is left
			// (the message unsigned: the record is the last one).
			wire, _ = m.Pack()
			binary.BigEndian.PutUint16(wire[len(wire)-6:], 200)
		}
		framed := binary.BigEndian.AppendUint16(nil, uint16(len(wire)))
		framed = append(framed, wire...)
		if mode == "cut" && len(out) == 1 {
			out = append(out, framed[:len(framed)/2])
			return out
		}
		out = append(out, framed)
	}
	return out
}

// start serves p on 127.0.0.107 (TCP and UDP, one port) and returns the
// address.
func (p *streamPrimary) start(t *testing.T) netip.AddrPort {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.107:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().(*net.TCPAddr).AddrPort()
	u, err := net.ListenPacket("udp", addr.String())
	if err != nil {
		l.Close()
		t.Skipf("UDP port %s taken: %v", addr, err)
	}
	t.Cleanup(func() { l.Close(); u.Close() })
	secrets := map[string]string{"xfr.": streamSecret}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, from, err := u.ReadFrom(buf)
			if err != nil {
				return
			}
			q := new(dns.Msg)
			if q.Unpack(buf[:n]) != nil || len(q.Question) != 1 {
				continue
			}
			p.mu.Lock()
			serial := p.serial
			p.mu.Unlock()
			m := new(dns.Msg)
			m.SetReply(q)
			m.Authoritative = true
			m.Answer = p.records(serial)[:1]
			var wire []byte
			if ts := q.IsTsig(); ts != nil {
				m.SetTsig(ts.Hdr.Name, ts.Algorithm, tsig.Fudge, time.Now().Unix())
				wire, _, err = dns.TsigGenerate(m, secrets[ts.Hdr.Name], ts.MAC, false)
			} else {
				wire, err = m.Pack()
			}
			if err == nil {
				u.WriteTo(wire, from)
			}
		}
	}()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				var n [2]byte
				if _, err := io.ReadFull(c, n[:]); err != nil {
					return
				}
				raw := make([]byte, binary.BigEndian.Uint16(n[:]))
				if _, err := io.ReadFull(c, raw); err != nil {
					return
				}
				q := new(dns.Msg)
				if q.Unpack(raw) != nil || len(q.Question) != 1 {
					return
				}
				qmac := ""
				if ts := q.IsTsig(); ts != nil {
					qmac = ts.MAC
				}
				for _, msg := range p.stream(q, qmac) {
					if _, err := c.Write(msg); err != nil {
						return
					}
				}
			}()
		}
	}()
	return addr
}

// TestCraftedTransfers: a transfer (IXFR answered whole, then AXFR) that
// is cut in the middle of a message, holds a record running past its
// message, is signed with another secret (every message, or only a
// later one: RFC 8945 §5.3.1 checks each), or comes unsigned to a
// signed request is rejected: the version served and the stored copy
// stay byte for byte, and a good transfer afterwards is installed.
func TestCraftedTransfers(t *testing.T) {
	p := &streamPrimary{}
	p.set(1, "good")
	addr := p.start(t)
	store := &fakeStore{}
	s := New(store, nil, Options{Timeout: 5 * time.Second})
	file := filepath.Join(t.TempDir(), "s.test.zone")
	key := &tsig.Key{Name: "xfr.", Algorithm: "hmac-sha256.", Secret: streamSecret}
	z := Zone{Origin: "s.test.", File: file, Primaries: []Primary{{Remote: "p", Addr: addr, Key: key}}}
	log := slog.New(slog.DiscardHandler)
	if err := s.refresh(context.Background(), z, false, log); err != nil || store.installs != 1 || store.z.Serial != 1 {
		t.Fatalf("first transfer: %v, installs %d", err, store.installs)
	}
	stored, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ mode, want string }{
		{"cut", "AXFR"},
		{"corrupt", "AXFR"},
		{"forged", "AXFR"},
		{"forged-late", "AXFR"},
		{"unsigned", "AXFR"},
	} {
		p.set(2, tc.mode)
		err := s.refresh(context.Background(), z, false, log)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one naming %q", tc.mode, err, tc.want)
		} else {
			t.Logf("%s: %v", tc.mode, err)
		}
		if store.installs != 1 || store.z.Serial != 1 {
			t.Errorf("%s: installs %d, serial %d served", tc.mode, store.installs, store.z.Serial)
		}
		if now, _ := os.ReadFile(file); string(now) != string(stored) {
			t.Errorf("%s: the stored copy changed", tc.mode)
		}
	}
	p.set(2, "good")
	if err := s.refresh(context.Background(), z, false, log); err != nil || store.installs != 2 || store.z.Serial != 2 {
		t.Errorf("good transfer after the bad ones: %v, installs %d", err, store.installs)
	}
}
