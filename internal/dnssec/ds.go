package dnssec

import (
	"fmt"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// ParentDS returns the DS records, SHA-256 digests (RFC 4509), that the
// parent zone should serve for origin's keys in dir. In a directory the
// key manager runs they are those of the keys whose CDS is published at
// now: RFC 7344 §4 makes the CDS RRset the DS RRset the parent should
// serve, so during a double-DS rollover (RFC 7583 §3.3.2) both KSKs. In
// any other directory they are those of every KSK of origin. A directory
// with no key for origin is an error that says which zones it has keys
// for. Each DS has its DNSKEY's TTL, as dnssec-dsfromkey gives it.
func ParentDS(dir, origin string, now time.Time) ([]*dns.DS, error) {
	origin = dns.CanonicalName(dns.Fqdn(origin))
	keys, err := PublishedKeys(dir, origin, now)
	if err != nil {
		return nil, err
	}
	managed := keys != nil
	if !managed {
		if keys, err = LoadKeys(dir, origin); err != nil {
			return nil, err
		}
	}
	if len(keys) == 0 {
		return nil, noKeysError(dir, origin)
	}
	var out []*dns.DS
	for _, k := range keys {
		if (managed && !k.CDS) || (!managed && !k.IsKSK()) {
			continue
		}
		ds := k.DNSKEY.ToDS(dns.SHA256)
		if ds == nil {
			return nil, fmt.Errorf("DS for key %d of %s: unsupported key", k.Tag(), origin)
		}
		out = append(out, ds)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds keys for %s but no key-signing key (flags 257) to make a DS of", dir, origin)
	}
	return out, nil
}

// noKeysError says that dir holds no keys for origin, and for which zones
// it does hold keys, as a typo in either is the likely cause.
func noKeysError(dir, origin string) error {
	zones, err := zonesInDir(dir)
	if err != nil {
		return err
	}
	if len(zones) == 0 {
		return fmt.Errorf("%s holds no keys", dir)
	}
	return fmt.Errorf("%s holds no keys for %s (it has keys for %s)", dir, origin, strings.Join(zones, ", "))
}
