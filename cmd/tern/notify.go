package main

import (
	"fmt"
	"net/netip"
	"sync/atomic"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/notify"
	"github.com/tern-dns/tern/internal/tsig"
	"github.com/tern-dns/tern/internal/zone"
)

// notifying sends the NOTIFYs of the zones that have a notify list
// (RFC 1996), on every serial change the zone manager announces.
type notifying struct {
	n *notify.Notifier
	// targets are each zone's addresses to notify (by canonical origin),
	// replaced whole on a reload.
	targets atomic.Pointer[map[string][]notify.Target]
}

// setTargets takes the notify lists of cfg; keys are its TSIG keys.
func (nf *notifying) setTargets(cfg *config.Config, keys *tsig.Keyring) {
	remotes := make(map[string]*config.Remote, len(cfg.Remotes))
	for i := range cfg.Remotes {
		remotes[cfg.Remotes[i].Name] = &cfg.Remotes[i]
	}
	m := make(map[string][]notify.Target)
	for _, zc := range cfg.Zones {
		origin := dns.CanonicalName(zc.Origin)
		for _, name := range zc.Notify {
			r := remotes[name]
			if r == nil {
				continue // config.Validate reports it
			}
			for _, a := range r.Address {
				ap, err := config.ParseRemoteAddress(a)
				if err != nil {
					continue // config.Validate reports it
				}
				t := notify.Target{Remote: r.Name, Addr: ap}
				if r.Key != "" {
					t.Key = keys.Key(r.Key)
				}
				m[origin] = append(m[origin], t)
			}
		}
	}
	nf.targets.Store(&m)
}

// notifySource returns, for notify.Options.Source, the first address of
// listen (server.listen) that is of dst's family and not a wildcard: the
// address secondaries know this server by. With none, the system picks.
func notifySource(listen []string) func(dst netip.AddrPort) netip.Addr {
	var addrs []netip.Addr
	for _, l := range listen {
		if ap, err := netip.ParseAddrPort(l); err == nil && !ap.Addr().IsUnspecified() {
			addrs = append(addrs, ap.Addr())
		}
	}
	return func(dst netip.AddrPort) netip.Addr {
		for _, a := range addrs {
			if a.Is4() == dst.Addr().Unmap().Is4() {
				return a
			}
		}
		return netip.Addr{}
	}
}

// changed is the zone manager's OnChange function: it starts the NOTIFYs
// of the zone's new serial.
func (nf *notifying) changed(origin string, z *zone.Zone) {
	nf.send(origin, z) // a zone without a notify list has nothing to send
}

// send starts the NOTIFYs of z's serial to the zone's notify list and
// returns the addresses, or why there is nothing to send.
func (nf *notifying) send(origin string, z *zone.Zone) ([]string, error) {
	targets := (*nf.targets.Load())[dns.CanonicalName(origin)]
	if len(targets) == 0 {
		return nil, fmt.Errorf("zone %s: no notify list (notify in its [[zone]] table)", origin)
	}
	if z.SOA == nil {
		return nil, fmt.Errorf("zone %s: no data served (not loaded), nothing to announce", origin)
	}
	rr, err := z.SOARecord().Unpack()
	soa, ok := rr.(*dns.SOA)
	if err != nil || !ok {
		return nil, fmt.Errorf("zone %s: its SOA record: %v", origin, err)
	}
	nf.n.Notify(origin, soa, targets)
	addrs := make([]string, len(targets))
	for i, t := range targets {
		addrs[i] = t.Addr.String()
	}
	return addrs, nil
}
