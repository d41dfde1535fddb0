package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnssec"
)

// signHierarchy signs every zone of the resolver benchmark's hierarchy in
// place (resgen -sign), bottom up: each zone with one ECDSA P-256 key
// (ZSK and KSK in one, the most common algorithm of signed zones and
// Tern's default) and an NSEC chain, its DS added to its parent's file
// before the parent is signed; the root's DS goes to anchor, the trust
// anchor the validating resolvers are given. auths are writeZones'
// authorities: the second-level zones', then the TLDs', then the root's
// are signed. Zones are signed concurrently, one goroutine per CPU.
func signHierarchy(auths []authority, anchor string, now time.Time) error {
	ds := map[string][]string{} // parent origin -> DS records of its children
	var mu sync.Mutex
	for i := len(auths) - 1; i >= 0; i-- {
		zones := auths[i].zones
		work := make(chan [2]string)
		errs := make(chan error, len(zones))
		var wg sync.WaitGroup
		for range runtime.GOMAXPROCS(0) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for z := range work {
					mu.Lock()
					extra := ds[z[0]]
					mu.Unlock()
					d, err := signZoneFile(z[0], z[1], extra, now)
					if err != nil {
						errs <- err
						continue
					}
					parent := "."
					if _, end := dns.NextLabel(z[0], 0); z[0] != "." && !end {
						off, _ := dns.NextLabel(z[0], 0)
						parent = z[0][off:]
					}
					mu.Lock()
					if z[0] == "." {
						ds["anchor"] = append(ds["anchor"], d)
					} else {
						ds[parent] = append(ds[parent], d)
					}
					mu.Unlock()
				}
			}()
		}
		for _, z := range zones {
			work <- z
		}
		close(work)
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return err
		}
	}
	if len(ds["anchor"]) == 0 {
		return fmt.Errorf("the root zone was not signed")
	}
	return writeLines(anchor, ds["anchor"])
}

// signZoneFile signs the zone origin of file, with the DS records extra
// added at its delegations, writes it back and returns its DS (SHA-256).
func signZoneFile(origin, file string, extra []string, now time.Time) (string, error) {
	f, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	text := string(f) + "\n" + strings.Join(extra, "\n") + "\n"
	zp := dns.NewZoneParser(strings.NewReader(text), origin, file)
	var rrs []dns.RR
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		rrs = append(rrs, rr)
	}
	if err := zp.Err(); err != nil {
		return "", err
	}
	k, err := dnssec.GenerateKey(origin, dns.ZONE|dns.SEP, dns.ECDSAP256SHA256, resTTL, nil)
	if err != nil {
		return "", fmt.Errorf("%s: %w", origin, err)
	}
	k.SignZone, k.SignKeys = true, true
	signed, err := dnssec.SignZone(context.Background(), rrs, origin, []*dnssec.Key{k}, dnssec.Options{Workers: 1}, now)
	if err != nil {
		return "", fmt.Errorf("%s: %w", origin, err)
	}
	lines := make([]string, 0, len(signed)+1)
	lines = append(lines, "$ORIGIN "+origin)
	for _, rr := range signed {
		lines = append(lines, rr.String())
	}
	tmp := file + ".tmp"
	if err := writeLines(tmp, lines); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, file); err != nil {
		return "", err
	}
	d := k.DNSKEY.ToDS(dns.SHA256)
	return d.String(), nil
}

// anchorPath is where resgen -sign writes the root's DS.
func anchorPath(dir string) string { return filepath.Join(dir, "root.key") }
