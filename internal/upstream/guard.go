package upstream

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/miekg/dns"
)

// NoLoopback wraps an Exchanger so that no query goes to a loopback
// address (127.0.0.0/8, ::1) or an unspecified one (0.0.0.0/8, ::), IPv4
// ones written as IPv4-mapped IPv6 included: the resolver's
// query-loopback = false, Unbound's do-not-query-localhost. A delegation
// to such an address would turn the resolver against services of its
// own host. Such a server is passed over as one that does not answer.
// Over an OptionsExchanger (Client) it is one too, so
// that what the resolver asks of each query (its timeout from the
// infrastructure cache, no EDNS, RD for a forwarder, 0x20's exact case)
// still reaches the network.
func NoLoopback(ex Exchanger) Exchanger {
	if ox, ok := ex.(OptionsExchanger); ok {
		return noLoopbackOptions{noLoopback{ex}, ox}
	}
	return noLoopback{ex}
}

type noLoopback struct{ Exchanger }

// noLoopbackOptions is noLoopback over an OptionsExchanger.
type noLoopbackOptions struct {
	noLoopback
	ox OptionsExchanger
}

func (n noLoopbackOptions) ExchangeOptions(ctx context.Context, server netip.AddrPort, q dns.Question, opt Options) (*dns.Msg, Report, error) {
	if Local(server.Addr()) {
		return nil, Report{}, fmt.Errorf("%s: %w", server.Addr(), ErrNotQueried)
	}
	return n.ox.ExchangeOptions(ctx, server, q, opt)
}

// ErrNotQueried is wrapped by the error of a query NoLoopback did not
// send.
var ErrNotQueried = fmt.Errorf("not queried (a loopback or unspecified address, and query-loopback is off)")

func (n noLoopback) Exchange(ctx context.Context, server netip.AddrPort, q dns.Question) (*dns.Msg, error) {
	if Local(server.Addr()) {
		return nil, fmt.Errorf("%s: %w", server.Addr(), ErrNotQueried)
	}
	return n.Exchanger.Exchange(ctx, server, q)
}

// Local reports whether a is an address NoLoopback does not query:
// loopback or unspecified ("this network", 0.0.0.0/8, RFC 1122 §3.2.1.3:
// Linux delivers a datagram sent to 0.0.0.0 to the host itself).
func Local(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() || a.IsUnspecified() {
		return true
	}
	return a.Is4() && a.As4()[0] == 0
}
