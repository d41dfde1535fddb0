package upstream

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/miekg/dns"
)

// TestNoLoopback: with query-loopback off, no query goes to this host.
func TestNoLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		local bool
	}{
		{"127.0.0.1", true}, {"127.255.0.9", true}, {"::1", true}, {"::ffff:127.0.0.1", true}, {"0.0.0.0", true},
		{"0.1.2.3", true}, {"::", true}, {"192.0.2.1", false}, {"10.0.0.1", false}, {"2001:db8::1", false}, {"::ffff:192.0.2.1", false},
	} {
		if got := Local(netip.MustParseAddr(tc.addr)); got != tc.local {
			t.Errorf("Local(%s) = %v", tc.addr, got)
		}
	}
	sent := 0
	ex := NoLoopback(exchangerFunc(func(context.Context, netip.AddrPort, dns.Question) (*dns.Msg, error) {
		sent++
		return new(dns.Msg), nil
	}))
	q := dns.Question{Name: "x.", Qtype: dns.TypeA, Qclass: dns.ClassINET}
	if _, err := ex.Exchange(context.Background(), netip.MustParseAddrPort("127.0.0.1:53"), q); !errors.Is(err, ErrNotQueried) || sent != 0 {
		t.Errorf("loopback: %v, %d sent", err, sent)
	}
	if _, err := ex.Exchange(context.Background(), netip.MustParseAddrPort("192.0.2.1:53"), q); err != nil || sent != 1 {
		t.Errorf("public: %v, %d sent", err, sent)
	}
	// Over Client it keeps the resolver's per-query options
	// (without them a forwarder could not be asked with RD=1, nor a
	// server without EDNS): it is an OptionsExchanger, which refuses
	// loopback addresses too.
	ox, ok := NoLoopback(&Client{}).(OptionsExchanger)
	if !ok {
		t.Fatal("NoLoopback(Client) is not an OptionsExchanger")
	}
	if _, _, err := ox.ExchangeOptions(context.Background(), netip.MustParseAddrPort("127.0.0.1:53"), q, Options{Recursive: true}); !errors.Is(err, ErrNotQueried) {
		t.Errorf("loopback through ExchangeOptions: %v", err)
	}
}

type exchangerFunc func(context.Context, netip.AddrPort, dns.Question) (*dns.Msg, error)

func (f exchangerFunc) Exchange(ctx context.Context, s netip.AddrPort, q dns.Question) (*dns.Msg, error) {
	return f(ctx, s, q)
}
