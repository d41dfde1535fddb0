package trustanchor

import (
	"context"
	"fmt"
	"strings"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/resolve"
)

// ResolverFetch fetches DNSKEY RRsets through r, which should not
// validate (the Store validates them from its own anchors, which a
// resolver's validation could not reach when they are out of date) nor
// cache (a probe asks the authorities, RFC 5011 §2.3).
func ResolverFetch(r *resolve.Resolver) Fetch {
	return func(ctx context.Context, zone string) ([]*dns.DNSKEY, []*dns.RRSIG, error) {
		res, err := r.Resolve(ctx, zone, dns.TypeDNSKEY)
		if err != nil {
			return nil, nil, err
		}
		var keys []*dns.DNSKEY
		var sigs []*dns.RRSIG
		for _, rr := range res.Answer {
			if !strings.EqualFold(rr.Header().Name, zone) {
				continue
			}
			switch rr := rr.(type) {
			case *dns.DNSKEY:
				keys = append(keys, rr)
			case *dns.RRSIG:
				if rr.TypeCovered == dns.TypeDNSKEY {
					sigs = append(sigs, rr)
				}
			}
		}
		if len(keys) == 0 {
			return nil, nil, fmt.Errorf("no DNSKEY records for %s (rcode %s)", zone, dns.RcodeToString[res.Rcode])
		}
		return keys, sigs, nil
	}
}
