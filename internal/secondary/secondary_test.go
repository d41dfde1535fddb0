package secondary

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/zone"
)

// wireRecords gives rrs as a transfer's reader does: packed into a
// message (names compressed) and read back.
func wireRecords(t testing.TB, rrs []dns.RR) []zone.RR {
	t.Helper()
	var r records
	for len(rrs) > 0 {
		m := new(dns.Msg)
		m.Response, m.Compress = true, true
		k := min(len(rrs), 1000)
		m.Answer, rrs = rrs[:k], rrs[k:]
		msg, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		off := 12
		for range k {
			if off, err = r.add(msg, off); err != nil {
				t.Fatal(err)
			}
		}
	}
	return r.list
}

// fakeStore is a Store holding one zone.
type fakeStore struct {
	mu       sync.Mutex
	z        *zone.Zone
	installs int
}

func (f *fakeStore) Served(string) *zone.Zone { f.mu.Lock(); defer f.mu.Unlock(); return f.z }
func (f *fakeStore) Install(_ context.Context, _ string, z *zone.Zone) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.z, f.installs = z, f.installs+1
	return nil
}
func (f *fakeStore) At(string, string, time.Duration, func(context.Context)) bool { return true }
func (f *fakeStore) Expire(context.Context, string, error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.z = nil
	return nil
}

// fakePrimary serves b.test over UDP and TCP on 127.0.0.105 (issue 13's
// block, a kernel-picked port): the SOA of serial, and an AXFR of the
// records the mode gives: "good", "broken" (a CNAME beside other data:
// the zone does not load) or "cut" (the stream ends without its closing
// SOA).
type fakePrimary struct {
	mu     sync.Mutex
	serial uint32
	mode   string
	// refresh is the SOA's refresh interval (0: 1 second); queries
	// counts the SOA queries answered.
	refresh uint32
	queries int
	// transfers counts the IXFRs asked in mode "catalog".
	transfers int
}

func (p *fakePrimary) set(serial uint32, mode string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.serial, p.mode = serial, mode
}

func (p *fakePrimary) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	p.mu.Lock()
	serial, mode, refresh := p.serial, p.mode, max(p.refresh, 1)
	if r.Question[0].Qtype == dns.TypeSOA {
		p.queries++
	}
	p.mu.Unlock()
	soa, _ := dns.NewRR(fmt.Sprintf("b.test. 300 IN SOA ns1.b.test. h.b.test. %d %d 1 3600 300", serial, refresh))
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	if mode == "down" || mode == "catalog" && r.Question[0].Qtype == dns.TypeSOA {
		m.Rcode = dns.RcodeRefused
		w.WriteMsg(m)
		return
	}
	if mode == "catalog" && r.Question[0].Qtype == dns.TypeIXFR {
		p.mu.Lock()
		p.transfers++
		p.mu.Unlock()
		if len(r.Ns) == 1 && r.Ns[0].(*dns.SOA).Serial >= serial {
			// RFC 1995 §4: current, one SOA.
			m.Answer = []dns.RR{soa}
			w.WriteMsg(m)
			return
		}
		r.Question[0].Qtype = dns.TypeAXFR // the whole zone, AXFR form
	}
	switch r.Question[0].Qtype {
	case dns.TypeSOA:
		m.Answer = []dns.RR{soa}
	case dns.TypeAXFR:
		m.Answer = []dns.RR{soa}
		for _, s := range []string{"b.test. 300 NS ns1.b.test.", "ns1.b.test. 300 A 192.0.2.1", fmt.Sprintf("www.b.test. 300 A 192.0.2.%d", serial)} {
			rr, _ := dns.NewRR(s)
			m.Answer = append(m.Answer, rr)
		}
		if mode == "broken" {
			rr, _ := dns.NewRR("www.b.test. 300 CNAME ns1.b.test.")
			m.Answer = append(m.Answer, rr)
		}
		if mode != "cut" {
			m.Answer = append(m.Answer, soa)
		}
	}
	w.WriteMsg(m)
	if mode == "cut" {
		w.Close()
	}
}

// start serves p on 127.0.0.105 and returns its address.
func (p *fakePrimary) start(t *testing.T) netip.AddrPort {
	t.Helper()
	var addr netip.AddrPort
	for _, network := range []string{"tcp", "udp"} {
		srv := &dns.Server{Net: network, Handler: p}
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		if network == "tcp" {
			l, err := net.Listen("tcp", "127.0.0.105:0")
			if err != nil {
				t.Fatal(err)
			}
			srv.Listener = l
			addr = l.Addr().(*net.TCPAddr).AddrPort()
		} else {
			c, err := net.ListenPacket("udp", addr.String())
			if err != nil {
				t.Skipf("UDP port %s taken: %v", addr, err)
			}
			srv.PacketConn = c
		}
		go srv.ActivateAndServe()
		<-started
		t.Cleanup(func() { srv.Shutdown() })
	}
	return addr
}

// TestBrokenTransfer: a transfer that ends early or yields a zone that
// does not load is rejected: the version served and the stored copy stay.
func TestBrokenTransfer(t *testing.T) {
	p := &fakePrimary{}
	p.set(1, "good")
	addr := p.start(t)
	store := &fakeStore{}
	s := New(store, nil, Options{Timeout: 5 * time.Second})
	file := filepath.Join(t.TempDir(), "b.test.zone")
	z := Zone{Origin: "b.test.", File: file, Primaries: []Primary{{Remote: "p", Addr: addr}}}
	log := slog.New(slog.DiscardHandler)
	if err := s.refresh(context.Background(), z, false, log); err != nil || store.installs != 1 || store.z.Serial != 1 {
		t.Fatalf("first transfer: %v, installs %d", err, store.installs)
	}
	stored, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ mode, want string }{
		{"broken", "does not load"},
		{"cut", "AXFR"},
	} {
		p.set(2, tc.mode)
		err := s.refresh(context.Background(), z, false, log)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s transfer: err %v, want %q", tc.mode, err, tc.want)
		}
		if store.installs != 1 || store.z.Serial != 1 {
			t.Errorf("%s transfer: installs %d, serial %d served", tc.mode, store.installs, store.z.Serial)
		}
		if now, _ := os.ReadFile(file); string(now) != string(stored) {
			t.Errorf("%s transfer: the stored copy changed:\n%s", tc.mode, now)
		}
	}
	// The same serial again: a SOA query, no transfer.
	p.set(1, "good")
	if err := s.refresh(context.Background(), z, false, log); err != nil || store.installs != 1 {
		t.Errorf("current serial: %v, installs %d", err, store.installs)
	}
	p.set(2, "good")
	if err := s.refresh(context.Background(), z, false, log); err != nil || store.installs != 2 || store.z.Serial != 2 {
		t.Errorf("newer serial: %v, installs %d", err, store.installs)
	}
}

// TestRefusedSOAQuery: a primary that refuses SOA queries but serves
// transfers (Knot, for a catalog zone it generates: mode "catalog") is
// asked for the transfer: AXFR without a copy, then IXFR of the serial
// served, whose one-SOA answer (RFC 1995 §4) means current, with
// nothing installed and no AXFR.
func TestRefusedSOAQuery(t *testing.T) {
	p := &fakePrimary{}
	p.set(1, "catalog")
	addr := p.start(t)
	store := &fakeStore{}
	s := New(store, nil, Options{Timeout: 5 * time.Second})
	z := Zone{Origin: "b.test.", File: filepath.Join(t.TempDir(), "b.test.zone"), Primaries: []Primary{{Remote: "p", Addr: addr}}}
	log := slog.New(slog.DiscardHandler)
	if err := s.refresh(context.Background(), z, false, log); err != nil || store.installs != 1 || store.z.Serial != 1 {
		t.Fatalf("first transfer: %v, installs %d", err, store.installs)
	}
	if err := s.refresh(context.Background(), z, false, log); err != nil || store.installs != 1 || p.transfers != 1 {
		t.Errorf("current serial: %v, installs %d, IXFRs %d (want 1, 1)", err, store.installs, p.transfers)
	}
	p.set(2, "catalog")
	if err := s.refresh(context.Background(), z, false, log); err != nil || store.installs != 2 || store.z.Serial != 2 {
		t.Errorf("newer serial: %v, installs %d", err, store.installs)
	}
}

// TestApplyIXFR: RFC 1995 §4's incremental answer, two versions in one
// (1 to 2 to 3), applied to the version served; a difference that
// deletes a record the version lacks is an error (the caller falls back
// to AXFR).
func TestApplyIXFR(t *testing.T) {
	served, err := zone.Read(strings.NewReader("$ORIGIN c.test.\n$TTL 300\n@ SOA ns1 h 1 1 1 3600 300\n@ NS ns1\nns1 A 192.0.2.1\nwww A 192.0.2.1\nold TXT \"x\"\n"), "c.test.zone", "c.test.")
	if err != nil {
		t.Fatal(err)
	}
	rrs := func(ss ...string) []zone.RR {
		var out []dns.RR
		for _, s := range ss {
			rr, err := dns.NewRR("$ORIGIN c.test.\n" + s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rr)
		}
		return wireRecords(t, out)
	}
	soa := func(n int) string { return fmt.Sprintf("@ 300 SOA ns1 h %d 1 1 3600 300", n) }
	got, err := applyIXFR(served, rrs(soa(3),
		soa(1), "www 300 A 192.0.2.1", soa(2), "www 300 A 192.0.2.2", "new 300 A 192.0.2.9",
		soa(2), "OLD 60 TXT \"x\"", "www 300 A 192.0.2.2", soa(3), "www 300 A 192.0.2.3",
		soa(3)))
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, rr := range got {
		text = append(text, rrString(rr))
	}
	want := []string{
		"c.test.\t300\tIN\tSOA\tns1.c.test. h.c.test. 3 1 1 3600 300",
		"c.test.\t300\tIN\tNS\tns1.c.test.",
		"new.c.test.\t300\tIN\tA\t192.0.2.9",
		"ns1.c.test.\t300\tIN\tA\t192.0.2.1",
		"www.c.test.\t300\tIN\tA\t192.0.2.3",
	}
	slices.Sort(text[1:])
	if !slices.Equal(text, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(text, "\n"), strings.Join(want, "\n"))
	}
	for _, tc := range []struct {
		name string
		ixfr []zone.RR
		want []string // the new version's records but its SOA, sorted; nil: an error saying "lacks"
	}{
		{"deleting a record not served", rrs(soa(2), soa(1), "gone 300 A 192.0.2.7", soa(2), soa(2)), nil},
		{"deleting a record twice", rrs(soa(3), soa(1), "www 300 A 192.0.2.1", soa(2), soa(2), "www 300 A 192.0.2.1", soa(3), soa(3)), nil},
		{"a served record added again with a new TTL", rrs(soa(2), soa(1), soa(2), "www 60 A 192.0.2.1", soa(2)), []string{
			"c.test.\t300\tIN\tNS\tns1.c.test.",
			"ns1.c.test.\t300\tIN\tA\t192.0.2.1",
			"old.c.test.\t300\tIN\tTXT\t\"x\"",
			"www.c.test.\t60\tIN\tA\t192.0.2.1",
		}},
		{"added, then deleted by a later version", rrs(soa(3), soa(1), soa(2), "tmp 300 A 192.0.2.5", soa(2), "TMP 300 A 192.0.2.5", "old 300 TXT \"x\"", soa(3), soa(3)), []string{
			"c.test.\t300\tIN\tNS\tns1.c.test.",
			"ns1.c.test.\t300\tIN\tA\t192.0.2.1",
			"www.c.test.\t300\tIN\tA\t192.0.2.1",
		}},
	} {
		got, err := applyIXFR(served, tc.ixfr)
		if tc.want == nil {
			if err == nil || !strings.Contains(err.Error(), "lacks") {
				t.Errorf("%s: %v, want an error saying 'lacks'", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		text = text[:0]
		for _, rr := range got[1:] {
			text = append(text, rrString(rr))
		}
		slices.Sort(text)
		if !slices.Equal(text, tc.want) || got[0].Type() != dns.TypeSOA {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, strings.Join(text, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}
