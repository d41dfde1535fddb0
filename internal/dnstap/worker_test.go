package dnstap_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	dt "github.com/dnstap/golang-dnstap"
	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/cookie"
	"github.com/tern-dns/tern/internal/dnstap"
	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/rrl"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/zone"
)

// TestWorkerRecordsWhatIsSent: a dnstap Worker around DNS cookies and
// RRL (as tern serve puts it) records each answer byte for byte as it
// is sent: with its COOKIE option, an RRL slip's truncated form, the
// cookie layer's BADCOOKIE; an RRL drop (no answer) is not recorded.
func TestWorkerRecordsWhatIsSent(t *testing.T) {
	z := dnstest.Zone(t, "example.test.", dnstest.ExampleZone)
	resp := auth.New(zone.NewSet(z), auth.Options{})
	h := server.HandlerFunc(func(tcp bool) server.Worker { return resp.NewWorker(tcp, auth.DefaultCacheSize) })
	// One answer a second, every second one dropped slipped.
	limited := rrl.Handler(cookie.Handler(h, cookie.NewKeys(), 1232), rrl.Config{Rate: 1, Window: 15 * time.Second, Slip: 2, IPv4Prefix: 24, IPv6Prefix: 56})
	path := filepath.Join(t.TempDir(), "d.fstrm")
	tap, err := dnstap.Open(dnstap.Options{File: path})
	if err != nil {
		t.Fatal(err)
	}
	w := dnstap.Handler(limited, tap, dnstap.Auth).NewWorker(false)
	query := func(opt string) []byte {
		m := new(dns.Msg)
		m.SetQuestion("www.example.test.", dns.TypeA)
		m.SetEdns0(1232, false)
		m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: opt})
		pkt, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		return pkt
	}
	const client = "0102030405060708"
	forged := client + "01000000" + "00000001" + "0102030405060708"
	client1 := netip.MustParseAddrPort("192.0.2.1:5353")
	var sent [][]byte
	for i, c := range []struct {
		name  string
		opt   string
		check func(*dns.Msg) bool // nil: no answer
	}{
		{"answered, with a server cookie", client, func(m *dns.Msg) bool {
			return len(m.Answer) == 1 && dnstest.CookieOf(m) != "" && dnstest.CookieOf(m) != client
		}},
		{"over the rate: dropped", client, nil},
		{"over the rate: slipped", client, func(m *dns.Msg) bool { return m.Truncated && len(m.Answer) == 0 }},
		{"forged server cookie: BADCOOKIE", forged, func(m *dns.Msg) bool { return m.Rcode == dns.RcodeBadCookie }},
	} {
		out := w.Answer(server.NewRequest(query(c.opt), client1, false, nil), make([]byte, 0, server.BufferSize))
		if a := dnstest.Expect(t, fmt.Sprintf("%d %s", i, c.name), out, c.check); a != nil {
			sent = append(sent, a)
		}
	}
	if err := tap.Close(); err != nil {
		t.Fatal(err)
	}
	frames, err := dnstap.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	for _, f := range frames {
		if m := f.GetMessage(); m.GetType() == dt.Message_AUTH_RESPONSE {
			got = append(got, m.GetResponseMessage())
		}
	}
	if len(got) != len(sent) {
		t.Fatalf("%d responses recorded, want the %d sent", len(got), len(sent))
	}
	for i := range sent {
		if !bytes.Equal(got[i], sent[i]) {
			t.Errorf("response %d recorded\n%x\nwant the one sent\n%x", i, got[i], sent[i])
		}
	}
}
