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
	// replaced whole on a reload, one zone's changed for a zone added or
	// removed at run time (setZone).
	targets atomic.Pointer[zone.ByOrigin[[]notify.Target]]
}

// setTargets takes the notify lists of cfg; keys are its TSIG keys.
func (nf *notifying) setTargets(cfg *config.Config, keys *tsig.Keyring) {
	m := make(map[string][]notify.Target)
	for i := range cfg.Zones {
		m[dns.CanonicalName(cfg.Zones[i].Origin)] = zoneTargets(cfg, &cfg.Zones[i], keys)
	}
	nf.targets.Store((*zone.ByOrigin[[]notify.Target])(nil).With(m, noTargets))
}

// setZone makes the notify list of the zone origin (canonical) targets
// (none: no list), sharing every other zone's with the list before:
// one zone's cost for a zone added or removed at run time. Only the
// main loop writes the targets.
func (nf *notifying) setZone(origin string, targets []notify.Target) {
	nf.targets.Store(nf.targets.Load().With(map[string][]notify.Target{origin: targets}, noTargets))
}

// noTargets reports whether a zone's notify list is empty: no entry.
func noTargets(ts []notify.Target) bool { return len(ts) == 0 }

// zoneTargets returns the addresses zc, a zone of cfg, notifies, with
// their keys; keys are cfg's TSIG keys.
func zoneTargets(cfg *config.Config, zc *config.Zone, keys *tsig.Keyring) []notify.Target {
	var ts []notify.Target
	eachRemoteAddr(cfg, zc.Notify, keys, func(remote string, ap netip.AddrPort, key *tsig.Key) {
		ts = append(ts, notify.Target{Remote: remote, Addr: ap, Key: key})
	})
	return ts
}

// eachRemoteAddr calls fn with every address of the remotes names (in
// order), and the remote's key (nil: none). Undefined remotes and bad
// addresses are skipped: config.Validate reports them.
func eachRemoteAddr(cfg *config.Config, names []string, keys *tsig.Keyring, fn func(remote string, ap netip.AddrPort, key *tsig.Key)) {
	for _, name := range names {
		r := cfg.Remote(name)
		if r == nil {
			continue
		}
		var key *tsig.Key
		if r.Key != "" {
			key = keys.Key(r.Key)
		}
		for _, a := range r.Address {
			if ap, err := config.ParseRemoteAddress(a); err == nil {
				fn(r.Name, ap, key)
			}
		}
	}
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
	targets, _ := nf.targets.Load().Get(dns.CanonicalName(origin))
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
