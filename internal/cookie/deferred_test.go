package cookie_test

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cookie"
	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/recursor"
	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/server"
)

// stubResolver answers every question with one A record, counting its
// resolutions; its cache holds nothing stale.
type stubResolver struct{ calls atomic.Int64 }

func (s *stubResolver) Resolve(_ context.Context, name string, _ uint16) (*resolve.Result, error) {
	s.calls.Add(1)
	a, err := dns.NewRR(name + " 300 IN A 192.0.2.1")
	if err != nil {
		return nil, err
	}
	return &resolve.Result{Answer: []dns.RR{a}}, nil
}

func (s *stubResolver) Refresh(ctx context.Context, name string, qtype uint16) (*resolve.Result, error) {
	return s.Resolve(ctx, name, qtype)
}

func (s *stubResolver) Stale(string, uint16) (*resolve.Result, bool) { return nil, false }

// TestDeferredCookie: a resolver's answer sent after a resolution
// (deferred through the server's outbox, or over TCP) carries the
// client's cookie and a valid server cookie, as its cache hits do; a
// query without a cookie gets none, and the response cache, filled by
// the resolution, holds no cookie (a later query without one gets
// none, another client's cookie is its own). On the wire, over UDP and
// TCP, on a kernel-picked port of 127.0.0.1.
func TestDeferredCookie(t *testing.T) {
	res := &stubResolver{}
	rec := recursor.New(recursor.Options{Resolver: res, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, ResponseCache: 64, UDPPayload: 1232})
	defer rec.Close()
	keys := cookie.NewKeys()
	s := server.New(server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 1}, cookie.Handler(rec, keys, 1232))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	addr := s.Addrs()[0]
	from := netip.MustParseAddr("127.0.0.1")
	ask := func(t *testing.T, netw, name string, opt []byte) (*dns.Msg, []byte) {
		t.Helper()
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		m.SetEdns0(1232, false)
		if opt != nil {
			o := m.IsEdns0()
			o.Option = append(o.Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: fmt.Sprintf("%x", opt)})
		}
		r, err := dnstest.Exchange(m, netw, addr)
		if err != nil {
			t.Fatal(err)
		}
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			t.Fatalf("%s %s: %v", netw, name, r)
		}
		return r, respCookie(t, r)
	}
	cc := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	other := []byte{9, 9, 9, 9, 9, 9, 9, 9}
	valid := func(t *testing.T, got, cc []byte) {
		t.Helper()
		if len(got) != cookie.ClientLen+cookie.ServerLen || !bytes.Equal(got[:cookie.ClientLen], cc) {
			t.Fatalf("COOKIE %x, want the client cookie %x and a server cookie", got, cc)
		}
		if v := keys.Check(got, from, uint32(time.Now().Unix())); v != cookie.Valid {
			t.Errorf("the server cookie is %v, want valid", v)
		}
	}
	for _, netw := range []string{"udp", "tcp"} {
		t.Run(netw, func(t *testing.T) {
			cold := "cold-" + netw + ".test."
			before := res.calls.Load()
			_, got := ask(t, netw, cold, cc)
			if res.calls.Load() == before {
				t.Fatal("no resolution: the answer was not deferred")
			}
			valid(t, got, cc) // the deferred answer
			// Without a cookie, cold: none.
			if _, got := ask(t, netw, "nocookie-"+netw+".test.", nil); got != nil {
				t.Errorf("a cold query without a cookie got %x", got)
			}
			if netw == "tcp" {
				return // TCP workers' caches are not the UDP worker's
			}
			// The response cache holds what the resolution built, with
			// no cookie: hits get their own client's, or none.
			calls := res.calls.Load()
			if _, got := ask(t, netw, cold, nil); got != nil {
				t.Errorf("a cache hit without a cookie got %x", got)
			}
			_, got = ask(t, netw, cold, other)
			valid(t, got, other)
			if res.calls.Load() != calls {
				t.Errorf("%d resolutions more: not cache hits", res.calls.Load()-calls)
			}
		})
	}
}
