package main

import (
	"net/netip"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/secondary"
	"github.com/tern-dns/tern/internal/tsig"
)

// secondaryZones lists cfg's secondary zones with their primaries'
// addresses and keys; keys are cfg's TSIG keys.
func secondaryZones(cfg *config.Config, keys *tsig.Keyring) []secondary.Zone {
	var out []secondary.Zone
	for i := range cfg.Zones {
		if cfg.Zones[i].Secondary() {
			out = append(out, secondaryZone(cfg, &cfg.Zones[i], keys))
		}
	}
	return out
}

// secondaryZone is zc, a secondary zone of cfg, with its primaries'
// addresses and keys.
func secondaryZone(cfg *config.Config, zc *config.Zone, keys *tsig.Keyring) secondary.Zone {
	z := secondary.Zone{Origin: dns.CanonicalName(zc.Origin), File: zc.File}
	eachRemoteAddr(cfg, zc.Primary, keys, func(remote string, ap netip.AddrPort, key *tsig.Key) {
		z.Primaries = append(z.Primaries, secondary.Primary{Remote: remote, Addr: ap, Key: key})
	})
	return z
}
