package config

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/acl"
	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/upstream"
	validation "github.com/tern-dns/tern/internal/validator"
)

// Defaults of the [resolver] table that are not resolve.DefaultLimits'.
const (
	// defaultCacheSize is Unbound's rrset-cache-size and msg-cache-size
	// together, order of magnitude: 256 MiB.
	defaultCacheSize = "256MiB"
	// defaultMaxResolutions bounds the resolutions running at once, as
	// Unbound's num-queries-per-thread (1024) does per thread.
	defaultMaxResolutions = 1024
	// defaultMaxPerClient bounds the queries of one client waiting on a
	// resolution: DNSBomb (2024) accumulates many slow answers and
	// releases them together at a victim.
	defaultMaxPerClient = 32
	// defaultClientPrefixIPv4 and defaultClientPrefixIPv6 are the
	// prefixes one client counts in for max-per-client: an IPv4
	// address, an IPv6 /64 (one host may send from a whole /64).
	defaultClientPrefixIPv4 = 32
	defaultClientPrefixIPv6 = 64
	// defaultMaxWaiting bounds the queries of all clients waiting on
	// resolutions: Unbound's num-queries-per-thread (1024) for four
	// threads.
	defaultMaxWaiting = 4096
)

// defaultAllow are the clients allowed to recurse when allow is absent:
// this host only, as Unbound's default access-control.
var defaultAllow = []string{"127.0.0.0/8", "::1/128"}

// Resolver is the [resolver] table: the recursive resolver, with its own
// listeners (RFC 5358: recursion is never offered on the authoritative
// ones). Its presence turns the resolver on.
type Resolver struct {
	// Listen lists the resolver's addresses, served on UDP and TCP.
	// Required.
	Listen []string `toml:"listen" want:"a list of \"host:port\" strings"`
	// Allow lists the clients allowed to recurse, as prefixes
	// ("127.0.0.0/8"), addresses, or names of [[acl]]s with the action
	// query (their addresses and prefixes, and their remotes'
	// addresses); others get REFUSED. Default this host:
	// ["127.0.0.0/8", "::1/128"].
	Allow []string `toml:"allow" want:"a list of prefixes such as \"192.0.2.0/24\" or [[acl]] names"`
	// RootHints is a root hints file (root.hints, named.root); "" means
	// the embedded IANA hints. Relative paths are resolved against the
	// config file's directory.
	RootHints string `toml:"root-hints"`
	// QueryLoopback allows upstream queries to loopback and other
	// addresses that are not public (Unbound's do-not-query-localhost
	// turned off); test hierarchies need it. Default false.
	QueryLoopback bool `toml:"query-loopback"`
	// Validation turns DNSSEC validation on (RFC 4033-4035): AD on
	// secure answers, SERVFAIL with an EDE on bogus ones. Default true,
	// as Unbound's and PowerDNS Recursor's; root hints naming servers
	// other than the IANA root's then need a TrustAnchor (tern serve
	// refuses to start without one, or validation = false).
	Validation bool `toml:"validation"`
	// TrustAnchor is a file of DS or DNSKEY records in zone-file form
	// (Debian's /usr/share/dns/root.key); "" means the embedded root
	// anchors (KSK-2017, KSK-2024). Relative paths are resolved against
	// the config file's directory. Read only with validation on.
	TrustAnchor string `toml:"trust-anchor"`
	// NegativeTrustAnchors are domains whose DNSSEC validation is turned
	// off (RFC 7646): their data, and their subdomains', is insecure
	// (no AD, never SERVFAIL for being bogus). A reload (SIGHUP, tern
	// ctl reload) applies a changed list.
	NegativeTrustAnchors []string `toml:"negative-trust-anchors" want:"a list of domain names such as \"broken.example\""`
	// AggressiveNSEC answers negative questions from the validated NSEC
	// and NSEC3 records cached for other names of the same zone (RFC
	// 8198), with validation on; default true, as Unbound's
	// aggressive-nsec since 1.15.
	AggressiveNSEC bool `toml:"aggressive-nsec"`
	// CacheSize bounds the RRset and negative cache in bytes: "256MiB",
	// "1GiB", "500MB".
	CacheSize string `toml:"cache-size" want:"a size string such as \"256MiB\""`
	// CacheMinTTL, CacheMaxTTL and CacheMaxNegativeTTL clamp the TTLs
	// the cache keeps records and negative answers for (cache.Options;
	// defaults 0s, 24h, 1h, Unbound's).
	CacheMinTTL         Duration `toml:"cache-min-ttl"`
	CacheMaxTTL         Duration `toml:"cache-max-ttl"`
	CacheMaxNegativeTTL Duration `toml:"cache-max-negative-ttl"`
	// BogusTTL is how long data that failed validation is kept (its
	// finding answering every question of it, SERVFAIL or the data for
	// CD) before it is asked again: Unbound's val-bogus-ttl, default
	// 60s.
	BogusTTL Duration `toml:"bogus-ttl"`
	// ServeStale is how long past their TTL answers are kept to be
	// served when no authority answers (RFC 8767 max-stale-ttl; it
	// suggests 1 to 3 days); 0s, the default, turns serve-stale off.
	ServeStale Duration `toml:"serve-stale"`
	// StaleAnswerClientTimeout is RFC 8767 §5's client response timer:
	// with serve-stale on, a query whose resolution has not ended
	// after it is answered from stale data when the cache holds some,
	// the resolution going on (BIND's name for it; Unbound's
	// serve-expired-client-timeout). Default 1.8s, the RFC's; 0s turns
	// it off (clients wait for the resolution).
	StaleAnswerClientTimeout Duration `toml:"stale-answer-client-timeout"`
	// QNameMinimisation asks each server only as much of the name as it
	// needs (RFC 9156, relaxed as Unbound's); default true.
	QNameMinimisation bool `toml:"qname-minimisation"`
	// RandomiseCase sends questions with their letters in random case
	// and accepts only answers that repeat it (0x20, Unbound's
	// use-caps-for-id); default false.
	RandomiseCase bool `toml:"randomise-case"`
	// QueryIPv4 and QueryIPv6 ask authorities over the family (Unbound's
	// do-ip4, do-ip6); default true.
	QueryIPv4 bool `toml:"query-ipv4"`
	QueryIPv6 bool `toml:"query-ipv6"`
	// Forward are the forward zones: questions at or below a zone's
	// name go to its servers, recursive resolvers, with RD set.
	Forward []Domain `toml:"forward"`
	// Stub are the stub zones: resolutions of names at or below a zone's
	// name start at its servers, asked as authorities.
	Stub []Domain `toml:"stub"`
	// The limits of one resolution (resolve.Limits); defaults
	// resolve.DefaultLimits.
	MaxUpstreamQueries int      `toml:"max-upstream-queries"`
	MaxCNAMEChain      int      `toml:"max-cname-chain"`
	MaxReferrals       int      `toml:"max-referrals"`
	MaxNSNames         int      `toml:"max-ns-names"`
	MaxNSDepth         int      `toml:"max-ns-depth"`
	MaxRRsetRecords    int      `toml:"max-rrset-records"`
	ResolutionTimeout  Duration `toml:"resolution-timeout"`
	// The limits of DNSSEC validation against the validator attacks
	// (KeyTrap, NSEC3 hashing; validator.Limits, translated by tern
	// serve); defaults validator.DefaultLimits. Names as PowerDNS
	// Recursor's where it has one.
	// MaxRRSIGsPerRRset bounds the RRSIGs tried for one RRset (8).
	MaxRRSIGsPerRRset int `toml:"max-rrsigs-per-rrset"`
	// MaxDNSKEYsPerTag bounds the keys tried for one signature when
	// several share its key tag and algorithm (2).
	MaxDNSKEYsPerTag int `toml:"max-dnskeys-per-tag"`
	// MaxSignatureValidationsPerQuery bounds the signature
	// verifications of one client query, its whole chain included (30).
	MaxSignatureValidationsPerQuery int `toml:"max-signature-validations-per-query"`
	// NSEC3MaxIterations: NSEC3 records with more iterations make an
	// answer insecure (RFC 9276 §3.2; 50).
	NSEC3MaxIterations int `toml:"nsec3-max-iterations"`
	// NSEC3MaxIterationsBogus: NSEC3 records with more iterations make
	// it bogus (150); at least NSEC3MaxIterations.
	NSEC3MaxIterationsBogus int `toml:"nsec3-max-iterations-bogus"`
	// MaxNSEC3HashComputationsPerQuery bounds the NSEC3 hash
	// computations (iterations + 1 each) of one client query (600).
	MaxNSEC3HashComputationsPerQuery int `toml:"max-nsec3-hash-computations-per-query"`
	// MaxResolutions bounds the resolutions running at once; a query
	// that would start one more is answered SERVFAIL. Default 1024.
	MaxResolutions int `toml:"max-resolutions"`
	// MaxPerClient bounds the queries of one client waiting on
	// resolutions; more are dropped (DNSBomb). Default 32.
	MaxPerClient int `toml:"max-per-client"`
	// ClientPrefixIPv4 and ClientPrefixIPv6 are the prefix lengths
	// whose addresses count as one client for MaxPerClient. Default
	// 32 and 64.
	ClientPrefixIPv4 int `toml:"client-prefix-ipv4"`
	ClientPrefixIPv6 int `toml:"client-prefix-ipv6"`
	// MaxWaiting bounds the queries of all clients waiting on
	// resolutions; more are dropped, as Unbound drops them when its
	// request list is full. Default 4096.
	MaxWaiting int `toml:"max-waiting"`
}

// Domain is a [[resolver.forward]] or [[resolver.stub]] table: a domain
// and the servers asked for it.
type Domain struct {
	// Name is the domain, normalised by Parse to a lowercase FQDN.
	Name string `toml:"name"`
	// Servers are addresses, "192.0.2.1" or with a port,
	// "192.0.2.1:5353", "[2001:db8::1]:53" (default port 53).
	Servers []string `toml:"servers" want:"a list of addresses such as \"192.0.2.1\" or \"[2001:db8::1]:53\""`
}

// ServerAddrs returns the servers as addresses with ports (validated by
// Validate).
func (d Domain) ServerAddrs() []netip.AddrPort {
	var out []netip.AddrPort
	for _, s := range d.Servers {
		if ap, err := parseServer(s); err == nil {
			out = append(out, ap)
		}
	}
	return out
}

// parseServer reads "192.0.2.1", "192.0.2.1:53", "2001:db8::1" or
// "[2001:db8::1]:53"; the port is 53 unless given.
func parseServer(s string) (netip.AddrPort, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.AddrPortFrom(a, 53), nil
	}
	return netip.ParseAddrPort(s)
}

// DefaultResolver returns the [resolver] table with every default and no
// listener.
func DefaultResolver() *Resolver {
	l, v := resolve.DefaultLimits, validation.DefaultLimits
	return &Resolver{
		Allow:                            append([]string(nil), defaultAllow...),
		CacheSize:                        defaultCacheSize,
		QNameMinimisation:                true,
		Validation:                       true,
		AggressiveNSEC:                   true,
		QueryIPv4:                        true,
		QueryIPv6:                        true,
		CacheMaxTTL:                      Duration{cache.DefaultMaxTTL * time.Second},
		CacheMaxNegativeTTL:              Duration{cache.DefaultMaxNegativeTTL * time.Second},
		StaleAnswerClientTimeout:         Duration{cache.StaleClientTimeout},
		BogusTTL:                         Duration{cache.DefaultBogusTTL},
		MaxUpstreamQueries:               l.Queries,
		MaxCNAMEChain:                    l.CNAMEs,
		MaxReferrals:                     l.Referrals,
		MaxNSNames:                       l.NSNames,
		MaxNSDepth:                       l.Depth,
		MaxRRsetRecords:                  l.RRset,
		ResolutionTimeout:                Duration{l.Timeout},
		MaxRRSIGsPerRRset:                v.SigsPerRRset,
		MaxDNSKEYsPerTag:                 v.KeysPerTag,
		MaxSignatureValidationsPerQuery:  v.Checks,
		NSEC3MaxIterations:               v.NSEC3Insecure,
		NSEC3MaxIterationsBogus:          v.NSEC3Bogus,
		MaxNSEC3HashComputationsPerQuery: v.Hashes,
		MaxResolutions:                   defaultMaxResolutions,
		MaxPerClient:                     defaultMaxPerClient,
		ClientPrefixIPv4:                 defaultClientPrefixIPv4,
		ClientPrefixIPv6:                 defaultClientPrefixIPv6,
		MaxWaiting:                       defaultMaxWaiting,
	}
}

// Limits returns the resolution limits the table sets.
func (r *Resolver) Limits() resolve.Limits {
	return resolve.Limits{
		Queries:   r.MaxUpstreamQueries,
		CNAMEs:    r.MaxCNAMEChain,
		Referrals: r.MaxReferrals,
		NSNames:   r.MaxNSNames,
		Depth:     r.MaxNSDepth,
		RRset:     r.MaxRRsetRecords,
		Timeout:   r.ResolutionTimeout.Duration,
	}
}

// ResolverAllow returns the resolver's allow list as prefixes
// (validated by Validate; an address is its host prefix, an [[acl]]'s
// name the prefixes of its query rules).
func (c *Config) ResolverAllow() []netip.Prefix {
	var out []netip.Prefix
	if c.Resolver == nil {
		return nil
	}
	for _, s := range c.Resolver.Allow {
		if p, err := parsePrefix(s); err == nil {
			out = append(out, p)
			continue
		}
		l, err := c.ruleList(s)
		if err != nil {
			continue
		}
		for _, r := range l {
			if r.Actions&acl.Query != 0 {
				out = append(out, r.Prefixes...)
			}
		}
	}
	return out
}

// CacheBytes returns cache-size in bytes (validated by Validate).
func (r *Resolver) CacheBytes() int64 {
	n, _ := parseSize(r.CacheSize)
	return n
}

// CacheOptions returns the options of the resolver's RRset cache the
// table sets (the clock left to the caller).
func (r *Resolver) CacheOptions() cache.Options {
	return cache.Options{
		Size:           r.CacheBytes(),
		MinTTL:         uint32(r.CacheMinTTL.Seconds()),
		MaxTTL:         uint32(r.CacheMaxTTL.Seconds()),
		MaxNegativeTTL: uint32(r.CacheMaxNegativeTTL.Seconds()),
		Stale:          r.ServeStale.Duration,
		BogusTTL:       r.BogusTTL.Duration,
	}
}

// parsePrefix reads "192.0.2.0/24" or a single address ("192.0.2.1" is
// 192.0.2.1/32). Bits outside the prefix length are an error: the
// writer meant something else.
func parsePrefix(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if p.Masked() != p {
		return netip.Prefix{}, fmt.Errorf("host bits set (the prefix is %s)", p.Masked())
	}
	return p, nil
}

// sizeUnits are the suffixes of a size, longest first so that "MiB" is
// not read as "B".
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
}

// maxCacheSize bounds cache-size where a typo would take the machine:
// 1 TiB.
const maxCacheSize = 1 << 40

// parseSize reads a byte count with a unit: "256MiB", "500MB", "4096B".
func parseSize(s string) (int64, error) {
	for _, u := range sizeUnits {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("invalid size %q (want a whole number and a unit: B, KB, MB, GB, KiB, MiB, GiB)", s)
		}
		if n > maxCacheSize/u.mult {
			return 0, fmt.Errorf("size %q is more than 1TiB", s)
		}
		return n * u.mult, nil
	}
	return 0, fmt.Errorf("invalid size %q (want a number and a unit: \"256MiB\"; units B, KB, MB, GB, KiB, MiB, GiB)", s)
}

// validateResolver checks the [resolver] table.
func (v *validator) validateResolver(r *Resolver) {
	if len(r.Listen) == 0 {
		v.addf("resolver", "resolver.listen: at least one address is required")
	}
	resolverAddrs := v.listen("resolver.listen", r.Listen)
	for ap, i := range resolverAddrs {
		if _, both := v.serverAddrs[ap]; both {
			v.addf("resolver.listen["+strconv.Itoa(i)+"]", "resolver.listen: %q is also in server.listen (RFC 5358: the resolver has listeners of its own)", r.Listen[i])
		}
	}
	seen := map[string]bool{}
	for i, n := range r.NegativeTrustAnchors {
		at := "resolver.negative-trust-anchors[" + strconv.Itoa(i) + "]"
		if _, ok := dns.IsDomainName(n); !ok || n == "" {
			v.addf(at, "resolver.negative-trust-anchors: invalid name %q", n)
		} else if seen[n] {
			v.addf(at, "resolver.negative-trust-anchors: %s listed twice", n)
		}
		seen[n] = true
	}
	for _, d := range []struct {
		key     string
		domains []Domain
	}{{"forward", r.Forward}, {"stub", r.Stub}} {
		seen := map[string]bool{}
		for i, z := range d.domains {
			at := "resolver." + d.key + "[" + strconv.Itoa(i) + "]"
			switch _, ok := dns.IsDomainName(z.Name); {
			case z.Name == "":
				v.addf(at, "resolver.%s: missing name", d.key)
			case !ok:
				v.addf(at+".name", "resolver.%s: invalid name %q", d.key, z.Name)
			case seen[z.Name]:
				v.addf(at+".name", "resolver.%s: %s listed twice", d.key, z.Name)
			}
			seen[z.Name] = true
			if len(z.Servers) == 0 {
				name := z.Name
				if name == "" {
					name = "#" + strconv.Itoa(i+1)
				}
				v.addf(at, "resolver.%s: %s has no servers", d.key, name)
			}
			// notAsked says why each server is one the resolver would
			// pass over; a zone with only such servers could never be
			// resolved, which Unbound leaves to be found at run time.
			// (Both families off is one error, below, not one per zone.)
			var notAsked []string
			invalid := false
			for j, srv := range z.Servers {
				ap, err := parseServer(srv)
				if err != nil || ap.Port() == 0 {
					v.addf(at+".servers["+strconv.Itoa(j)+"]", "resolver.%s: invalid server %q (want an address, with a port or not, not port 0: 192.0.2.1, 192.0.2.1:5353, [2001:db8::1]:53)", d.key, srv)
					invalid = true
				} else if why := r.notAsked(ap.Addr()); why != "" {
					notAsked = append(notAsked, srv+" "+why)
				}
			}
			if !invalid && (r.QueryIPv4 || r.QueryIPv6) && len(notAsked) > 0 && len(notAsked) == len(z.Servers) {
				v.addf(at+".servers", "resolver.%s: %s has no server the resolver would ask: %s", d.key, z.Name, strings.Join(notAsked, "; "))
			}
		}
	}
	if !r.QueryIPv4 && !r.QueryIPv6 {
		v.addf("resolver.query-ipv4", "resolver: query-ipv4 and query-ipv6 are both false: no authority could be asked")
	}
	for i, s := range r.Allow {
		_, err := parsePrefix(s)
		if err == nil {
			continue
		}
		at := "resolver.allow[" + strconv.Itoa(i) + "]"
		a := v.c.acl(s)
		switch {
		case a == nil && (s == "" || strings.ContainsAny(s, "/:.") || s[0] >= '0' && s[0] <= '9'):
			v.addf(at, "resolver.allow: invalid prefix %q (want e.g. 192.0.2.0/24, 2001:db8::/32 or an address): %v", s, err)
		case a == nil:
			v.addf(at, "resolver.allow: %q is neither a prefix nor the name of an [[acl]] (want e.g. 192.0.2.0/24, an address, or an [[acl]] with the action query)", s)
		case !slices.Contains(a.Action, "query"):
			v.addf(at, "resolver.allow: acl %q does not allow the action query", s)
		case len(a.Address) == 0 && len(a.Remote) == 0:
			// Such a rule allows every address: say so rather than
			// open the resolver by accident.
			v.addf(at, "resolver.allow: acl %q lists no address or remote: it would open the resolver to every client (write \"0.0.0.0/0\" and \"::/0\" for that)", s)
		}
	}
	if _, err := parseSize(r.CacheSize); err != nil {
		v.addf("resolver.cache-size", "resolver.cache-size: %v", err)
	}
	for _, l := range []struct {
		key string
		n   int
	}{
		{"max-upstream-queries", r.MaxUpstreamQueries}, {"max-cname-chain", r.MaxCNAMEChain},
		{"max-referrals", r.MaxReferrals}, {"max-ns-names", r.MaxNSNames}, {"max-ns-depth", r.MaxNSDepth},
		{"max-rrset-records", r.MaxRRsetRecords}, {"max-resolutions", r.MaxResolutions}, {"max-per-client", r.MaxPerClient},
		{"max-waiting", r.MaxWaiting},
		{"max-rrsigs-per-rrset", r.MaxRRSIGsPerRRset}, {"max-dnskeys-per-tag", r.MaxDNSKEYsPerTag},
		{"max-signature-validations-per-query", r.MaxSignatureValidationsPerQuery},
		{"nsec3-max-iterations", r.NSEC3MaxIterations}, {"nsec3-max-iterations-bogus", r.NSEC3MaxIterationsBogus},
		{"max-nsec3-hash-computations-per-query", r.MaxNSEC3HashComputationsPerQuery},
	} {
		if l.n < 1 {
			v.addf("resolver."+l.key, "resolver.%s: must be >= 1, got %d", l.key, l.n)
		}
	}
	if r.NSEC3MaxIterationsBogus < r.NSEC3MaxIterations {
		v.addf("resolver.nsec3-max-iterations-bogus", "resolver.nsec3-max-iterations-bogus: %d is below nsec3-max-iterations (%d): NSEC3 records are insecure above the one and bogus above the other", r.NSEC3MaxIterationsBogus, r.NSEC3MaxIterations)
	}
	for _, p := range []struct {
		key     string
		n, bits int
	}{{"client-prefix-ipv4", r.ClientPrefixIPv4, 32}, {"client-prefix-ipv6", r.ClientPrefixIPv6, 128}} {
		if p.n < 1 || p.n > p.bits {
			v.addf("resolver."+p.key, "resolver.%s: want a prefix length from 1 to %d, got %d", p.key, p.bits, p.n)
		}
	}
	if r.ResolutionTimeout.Duration <= 0 {
		v.addf("resolver.resolution-timeout", "resolver.resolution-timeout: must be positive, got %s", r.ResolutionTimeout.Duration)
	}
	// TTLs are whole seconds of a 32-bit field (RFC 2181 §8: at most
	// 2^31-1); a bound of 0 would mean "the default" to the cache.
	for _, d := range []struct {
		key string
		d   time.Duration
		min time.Duration
	}{
		{"cache-min-ttl", r.CacheMinTTL.Duration, 0}, {"cache-max-ttl", r.CacheMaxTTL.Duration, time.Second},
		{"cache-max-negative-ttl", r.CacheMaxNegativeTTL.Duration, time.Second},
	} {
		if d.d < d.min || d.d > (1<<31-1)*time.Second || d.d%time.Second != 0 {
			v.addf("resolver."+d.key, "resolver.%s: want whole seconds from %s to 2147483647s, got %s", d.key, d.min, d.d)
		}
	}
	if r.CacheMinTTL.Duration > r.CacheMaxTTL.Duration {
		v.addf("resolver.cache-min-ttl", "resolver.cache-min-ttl: %s is more than cache-max-ttl (%s)", r.CacheMinTTL.Duration, r.CacheMaxTTL.Duration)
	}
	if r.BogusTTL.Duration < time.Second {
		v.addf("resolver.bogus-ttl", "resolver.bogus-ttl: must be at least 1s, got %s", r.BogusTTL.Duration)
	}
	if r.ServeStale.Duration < 0 {
		v.addf("resolver.serve-stale", "resolver.serve-stale: must not be negative, got %s", r.ServeStale.Duration)
	}
	if r.StaleAnswerClientTimeout.Duration < 0 {
		v.addf("resolver.stale-answer-client-timeout", "resolver.stale-answer-client-timeout: must not be negative, got %s", r.StaleAnswerClientTimeout.Duration)
	}
}

// notAsked says why the resolver would not ask a server at a ("is a
// loopback address, and query-loopback is false"), or "" when it would:
// the family is turned off (resolve.Options.NoIPv4, NoIPv6), or a is an
// address upstream.NoLoopback refuses.
func (r *Resolver) notAsked(a netip.Addr) string {
	switch {
	case a.Unmap().Is4() && !r.QueryIPv4:
		return "is IPv4, and query-ipv4 is false"
	case !a.Unmap().Is4() && !r.QueryIPv6:
		return "is IPv6, and query-ipv6 is false"
	case !r.QueryLoopback && upstream.Local(a):
		return "is a loopback or unspecified address, and query-loopback is false"
	}
	return ""
}

// resolvePaths makes the root hints and trust anchor paths absolute
// against the config file's directory, and the forward and stub names
// and the negative trust anchors canonical.
func (r *Resolver) resolvePaths(path string) {
	for i, n := range r.NegativeTrustAnchors {
		if n != "" {
			r.NegativeTrustAnchors[i] = canonicalOrigin(n)
		}
	}
	for _, ds := range [][]Domain{r.Forward, r.Stub} {
		for i := range ds {
			if ds[i].Name != "" {
				ds[i].Name = canonicalOrigin(ds[i].Name)
			}
		}
	}
	for _, f := range []*string{&r.RootHints, &r.TrustAnchor} {
		if *f != "" && path != "" && !filepath.IsAbs(*f) {
			*f = filepath.Join(filepath.Dir(path), *f)
		}
	}
}
