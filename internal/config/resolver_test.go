package config

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/resolve"
	validation "github.com/tern-dns/tern/internal/validator"
)

// TestResolverTable: a [resolver] table takes the defaults for what it
// leaves out, makes the hints path absolute, and converts its values.
func TestResolverTable(t *testing.T) {
	c, err := Parse("/etc/tern/t.toml", []byte("[resolver]\nlisten = [\"127.0.0.1:53\"]\nroot-hints = \"hints\"\ncache-size = \"64MiB\"\nmax-ns-names = 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Resolver
	if r == nil {
		t.Fatal("no Resolver")
	}
	if r.RootHints != "/etc/tern/hints" || !r.Validation || r.TrustAnchor != "" || r.CacheBytes() != 64<<20 || r.QueryLoopback || r.MaxResolutions != 1024 || r.MaxPerClient != 32 ||
		r.ClientPrefixIPv4 != 32 || r.ClientPrefixIPv6 != 64 || r.MaxWaiting != 4096 {
		t.Errorf("%+v", r)
	}
	want := resolve.DefaultLimits
	want.NSNames = 3
	if got := r.Limits(); got != want {
		t.Errorf("limits %+v, want %+v", got, want)
	}
	if got := c.ResolverAllow(); !slices.Equal(got, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}) {
		t.Errorf("allow %v", got)
	}
	if got, want := r.CacheOptions(), (cache.Options{Size: 64 << 20, MaxTTL: 86400, MaxNegativeTTL: 3600}); got.Size != want.Size || got.MinTTL != 0 || got.MaxTTL != want.MaxTTL || got.MaxNegativeTTL != want.MaxNegativeTTL || got.Stale != 0 {
		t.Errorf("cache options %+v, want %+v", got, want)
	}
	va, err := Parse("/etc/tern/t.toml", []byte("[resolver]\nlisten = [\"127.0.0.1:53\"]\ntrust-anchor = \"root.key\"\n"))
	if err != nil || !va.Resolver.Validation || va.Resolver.TrustAnchor != "/etc/tern/root.key" {
		t.Errorf("validation on by default: %v %+v", err, va)
	}
	if !r.Validation {
		t.Error("validation off by default, want on (as Unbound and PowerDNS Recursor)")
	}
	if off, err := Parse("t.toml", []byte("[resolver]\nlisten = [\"127.0.0.1:53\"]\nvalidation = false\n")); err != nil || off.Resolver.Validation {
		t.Errorf("validation = false: %v %+v", err, off)
	}
	c2, err := Parse("t.toml", []byte("[resolver]\nlisten = [\"127.0.0.1:53\"]\ncache-min-ttl = \"30s\"\ncache-max-ttl = \"6h\"\ncache-max-negative-ttl = \"5m\"\nserve-stale = \"24h\"\nstale-answer-client-timeout = \"500ms\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.CacheOptions().BogusTTL; got != time.Minute {
		t.Errorf("default bogus-ttl %v, want Unbound's 60s", got)
	}
	if got := c2.Resolver.CacheOptions(); got.MinTTL != 30 || got.MaxTTL != 6*3600 || got.MaxNegativeTTL != 300 || got.Stale != 24*time.Hour {
		t.Errorf("cache options %+v", got)
	}
	if got := c2.Resolver.StaleAnswerClientTimeout.Duration; got != 500*time.Millisecond {
		t.Errorf("stale-answer-client-timeout %v", got)
	}
	if got := r.StaleAnswerClientTimeout.Duration; got != 1800*time.Millisecond {
		t.Errorf("default stale-answer-client-timeout %v, want RFC 8767's 1.8s", got)
	}
	// No table, no resolver.
	if c, err := Parse("t.toml", nil); err != nil || c.Resolver != nil {
		t.Errorf("empty config: %v %+v", err, c.Resolver)
	}
	// Addresses are host prefixes.
	c, err = Parse("t.toml", []byte("[resolver]\nlisten = [\"[::1]:53\"]\nallow = [\"192.0.2.1\", \"2001:db8::/32\"]\nresolution-timeout = \"3s\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ResolverAllow(); !slices.Equal(got, []netip.Prefix{netip.MustParsePrefix("192.0.2.1/32"), netip.MustParsePrefix("2001:db8::/32")}) {
		t.Errorf("allow %v", got)
	}
	if c.Resolver.Limits().Timeout != 3*time.Second {
		t.Errorf("timeout %v", c.Resolver.Limits().Timeout)
	}
	// The defaults of a table are not shared between configs.
	d := DefaultResolver()
	d.Allow[0] = "x"
	if DefaultResolver().Allow[0] != "127.0.0.0/8" {
		t.Error("DefaultResolver shares its allow list")
	}
}

// TestResolverErrors: every bad value of the table is named with its line.
func TestResolverErrors(t *testing.T) {
	for _, tc := range []struct {
		input string
		want  []string
	}{
		{"[resolver]\n", []string{"t.toml:1: resolver.listen: at least one address is required"}},
		{"[resolver]\nlisten = [\"127.0.0.1\"]\n", []string{"t.toml:2: resolver.listen: invalid address \"127.0.0.1\""}},
		{"[server]\nlisten = [\"127.0.0.1:53\"]\n[resolver]\nlisten = [\"127.0.0.2:53\",\n \"127.0.0.1:53\"]\n",
			[]string{"t.toml:5: resolver.listen: \"127.0.0.1:53\" is also in server.listen"}},
		{"[resolver]\nlisten = [\"127.0.0.1:53\"]\nallow = [\"10.0.0.1/8\", \"nonsense\"]\n",
			[]string{"t.toml:3: resolver.allow: invalid prefix \"10.0.0.1/8\"", "host bits set (the prefix is 10.0.0.0/8)", "\"nonsense\" is neither a prefix nor the name of an [[acl]]"}},
		{"[resolver]\nlisten = [\"127.0.0.1:53\"]\ncache-size = \"256\"\n", []string{"t.toml:3: resolver.cache-size: invalid size \"256\""}},
		{"[resolver]\nlisten = [\"127.0.0.1:53\"]\ncache-size = \"2048GiB\"\n", []string{"t.toml:3: resolver.cache-size: size \"2048GiB\" is more than 1TiB"}},
		{"[resolver]\nlisten = [\"127.0.0.1:53\"]\ncache-size = 256\n", []string{"t.toml:3: resolver.cache-size: want a size string such as \"256MiB\", got an integer"}},
		{"[resolver]\nlisten = [\"127.0.0.1:53\"]\nmax-ns-names = 0\nmax-per-client = -1\n",
			[]string{"t.toml:3: resolver.max-ns-names: must be >= 1, got 0", "t.toml:4: resolver.max-per-client: must be >= 1, got -1"}},
		{"[resolver]\nlisten = [\"127.0.0.1:53\"]\nmax-waiting = 0\nclient-prefix-ipv4 = 33\nclient-prefix-ipv6 = 0\n",
			[]string{"t.toml:3: resolver.max-waiting: must be >= 1, got 0", "t.toml:4: resolver.client-prefix-ipv4: want a prefix length from 1 to 32, got 33",
				"t.toml:5: resolver.client-prefix-ipv6: want a prefix length from 1 to 128, got 0"}},
		{"[resolver]\nlisten = [\"127.0.0.1:53\"]\nclient-prefix-ipv6 = \"/64\"\n", []string{"t.toml:3: resolver.client-prefix-ipv6: want an integer, got a string"}},
		{"[resolver]\nlisten = [\"127.0.0.1:53\"]\nresolution-timeout = \"0s\"\n", []string{"t.toml:3: resolver.resolution-timeout: must be positive"}},
		{"[resolver]\nlisten = [\"127.0.0.1:53\"]\ncache-max-ttl = \"0s\"\ncache-min-ttl = \"1.5s\"\n",
			[]string{"t.toml:3: resolver.cache-max-ttl: want whole seconds from 1s to 2147483647s, got 0s", "t.toml:4: resolver.cache-min-ttl: want whole seconds from 0s", "cache-min-ttl: 1.5s is more than cache-max-ttl (0s)"}},
		{"[resolver]\nlisten = [\"127.0.0.1:53\"]\ncache-min-ttl = \"2h\"\ncache-max-ttl = \"1h\"\nserve-stale = \"-1s\"\nstale-answer-client-timeout = \"-1ms\"\nbogus-ttl = \"0s\"\n",
			[]string{"t.toml:3: resolver.cache-min-ttl: 2h0m0s is more than cache-max-ttl (1h0m0s)", "t.toml:5: resolver.serve-stale: must not be negative", "t.toml:6: resolver.stale-answer-client-timeout: must not be negative", "t.toml:7: resolver.bogus-ttl: must be at least 1s"}},
		{"[resolver]\nlisten = [\"127.0.0.1:53\"]\nquery-lopback = true\n", []string{"t.toml:3: unknown key resolver.query-lopback (did you mean resolver.query-loopback?)"}},
		{"[resolver]\nlisten = [\"127.0.0.1:53\"]\nquery-loopback = \"yes\"\n", []string{"t.toml:3: resolver.query-loopback: want true or false, got a string"}},
		{"[resolver]\nlisten = [\"127.0.0.1:53\"]\nmax-rrsigs-per-rrset = 0\nmax-dnskeys-per-tag = -2\nmax-signature-validations-per-query = 0\nmax-nsec3-hash-computations-per-query = 0\n",
			[]string{"t.toml:3: resolver.max-rrsigs-per-rrset: must be >= 1, got 0", "t.toml:4: resolver.max-dnskeys-per-tag: must be >= 1, got -2",
				"t.toml:5: resolver.max-signature-validations-per-query: must be >= 1, got 0", "t.toml:6: resolver.max-nsec3-hash-computations-per-query: must be >= 1, got 0"}},
		{"[resolver]\nlisten = [\"127.0.0.1:53\"]\nnsec3-max-iterations = 0\n", []string{"t.toml:3: resolver.nsec3-max-iterations: must be >= 1, got 0"}},
		{"[resolver]\nlisten = [\"127.0.0.1:53\"]\nnsec3-max-iterations = 200\n", []string{"t.toml:1: resolver.nsec3-max-iterations-bogus: 150 is below nsec3-max-iterations (200)"}},
		{"[resolver]\nlisten = [\"127.0.0.1:53\"]\nnsec3-max-iterations = 20\nnsec3-max-iterations-bogus = 10\n", []string{"t.toml:4: resolver.nsec3-max-iterations-bogus: 10 is below nsec3-max-iterations (20)"}},
		{"[resolver]\nlisten = [\"127.0.0.1:53\"]\nnsec3-max-iterations = \"50\"\n", []string{"t.toml:3: resolver.nsec3-max-iterations: want an integer, got a string"}},
	} {
		wantErrors(t, tc.input, tc.want)
	}
}

// TestResolverValidationLimits: the [resolver] keys of the validation
// limits default to validation.DefaultLimits and each sets its own field.
func TestResolverValidationLimits(t *testing.T) {
	d := DefaultResolver()
	if got := (validation.Limits{SigsPerRRset: d.MaxRRSIGsPerRRset, KeysPerTag: d.MaxDNSKEYsPerTag, Checks: d.MaxSignatureValidationsPerQuery,
		NSEC3Insecure: d.NSEC3MaxIterations, NSEC3Bogus: d.NSEC3MaxIterationsBogus, Hashes: d.MaxNSEC3HashComputationsPerQuery}); got != validation.DefaultLimits {
		t.Errorf("defaults %+v, want validation.DefaultLimits %+v", got, validation.DefaultLimits)
	}
	for _, tc := range []struct {
		key string
		n   int
		get func(*Resolver) int
	}{
		{"max-rrsigs-per-rrset", 3, func(r *Resolver) int { return r.MaxRRSIGsPerRRset }},
		{"max-dnskeys-per-tag", 4, func(r *Resolver) int { return r.MaxDNSKEYsPerTag }},
		{"max-signature-validations-per-query", 5, func(r *Resolver) int { return r.MaxSignatureValidationsPerQuery }},
		{"nsec3-max-iterations", 6, func(r *Resolver) int { return r.NSEC3MaxIterations }},
		{"nsec3-max-iterations-bogus", 1000, func(r *Resolver) int { return r.NSEC3MaxIterationsBogus }},
		{"max-nsec3-hash-computations-per-query", 8, func(r *Resolver) int { return r.MaxNSEC3HashComputationsPerQuery }},
	} {
		c, err := Parse("t.toml", []byte(fmt.Sprintf("[resolver]\nlisten = [\"127.0.0.1:53\"]\n%s = %d\n", tc.key, tc.n)))
		if err != nil {
			t.Errorf("%s = %d: %v", tc.key, tc.n, err)
			continue
		}
		if got := tc.get(c.Resolver); got != tc.n {
			t.Errorf("%s = %d: got %d", tc.key, tc.n, got)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"256MiB", 256 << 20, true}, {"1GiB", 1 << 30, true}, {"500MB", 500e6, true}, {"4096B", 4096, true},
		{"10 KiB", 10 << 10, true}, {"0B", 0, true}, {"1TiB", 0, false}, {"-1MiB", 0, false}, {"1.5GiB", 0, false}, {"", 0, false},
	} {
		got, err := parseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v", tc.in, got, err)
		}
	}
}

// TestResolverDomains: forward and stub zones, and the switches of the
// resolution, with their defaults and their errors.
func TestResolverDomains(t *testing.T) {
	c, err := Parse("t.toml", []byte(`[resolver]
listen = ["127.0.0.1:53"]
randomise-case = true
query-ipv6 = false
negative-trust-anchors = ["Broken.Example", "x.test."]
[[resolver.forward]]
name = "Corp.Example"
servers = ["192.0.2.1", "[2001:db8::1]:5353"]
[[resolver.stub]]
name = "lab.example."
servers = ["192.0.2.9:53"]
`))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Resolver
	if !r.QNameMinimisation || !r.RandomiseCase || !r.QueryIPv4 || r.QueryIPv6 {
		t.Errorf("switches %+v", r)
	}
	if len(r.Forward) != 1 || r.Forward[0].Name != "corp.example." || !slices.Equal(r.Forward[0].ServerAddrs(),
		[]netip.AddrPort{netip.MustParseAddrPort("192.0.2.1:53"), netip.MustParseAddrPort("[2001:db8::1]:5353")}) {
		t.Errorf("forward %+v", r.Forward)
	}
	if len(r.Stub) != 1 || r.Stub[0].Name != "lab.example." || r.Stub[0].ServerAddrs()[0] != netip.MustParseAddrPort("192.0.2.9:53") {
		t.Errorf("stub %+v", r.Stub)
	}
	if !slices.Equal(r.NegativeTrustAnchors, []string{"broken.example.", "x.test."}) {
		t.Errorf("negative-trust-anchors %q", r.NegativeTrustAnchors)
	}
	// A zone with one server the resolver asks is valid; loopback
	// servers are asked with query-loopback.
	for _, input := range []string{
		"[[resolver.stub]]\nname = \"c.example\"\nservers = [\"127.0.0.1\", \"192.0.2.1\"]\n",
		"query-loopback = true\n[[resolver.forward]]\nname = \"c.example\"\nservers = [\"127.0.0.1:5353\"]\n",
		"query-ipv4 = false\n[[resolver.forward]]\nname = \"c.example\"\nservers = [\"192.0.2.1\", \"2001:db8::1\"]\n",
	} {
		if _, err := Parse("t.toml", []byte("[resolver]\nlisten = [\"127.0.0.1:53\"]\n"+input)); err != nil {
			t.Errorf("%q: %v", input, err)
		}
	}
	for _, tc := range []struct {
		input string
		want  []string
	}{
		{"[[resolver.forward]]\nname = \"a.example\"\nservers = [\"192.0.2.1\", \"nonsense\"]\n",
			[]string{"t.toml:5: resolver.forward: invalid server \"nonsense\""}},
		{"[[resolver.stub]]\nname = \"a..example\"\nservers = [\"192.0.2.1\"]\n[[resolver.stub]]\nservers = []\n",
			[]string{"t.toml:4: resolver.stub: invalid name \"a..example.\"", "t.toml:6: resolver.stub: missing name", "t.toml:6: resolver.stub: #2 has no servers"}},
		{"[[resolver.forward]]\nname = \"a.example\"\nservers = [\"192.0.2.1\"]\n[[resolver.forward]]\nname = \"A.example.\"\nservers = [\"192.0.2.1\"]\n",
			[]string{"t.toml:7: resolver.forward: a.example. listed twice"}},
		{"query-ipv4 = false\nquery-ipv6 = false\n", []string{"t.toml:3: resolver: query-ipv4 and query-ipv6 are both false"}},
		{"[[resolver.forward]]\nname = \"a.example\"\nservers = [\"192.0.2.1:0\"]\n",
			[]string{"t.toml:5: resolver.forward: invalid server \"192.0.2.1:0\""}},
		// Servers the resolver would never ask: a zone with only such
		// servers is an error, one with another server is not.
		{"[[resolver.forward]]\nname = \"a.example\"\nservers = [\"127.0.0.1:5353\",\n \"[::1]:53\"]\n[[resolver.stub]]\nname = \"b.example\"\nservers = [\"0.0.0.0\"]\n[[resolver.stub]]\nname = \"c.example\"\nservers = [\"127.0.0.1\", \"192.0.2.1\"]\n",
			[]string{"t.toml:5: resolver.forward: a.example. has no server the resolver would ask: 127.0.0.1:5353 is a loopback or unspecified address, and query-loopback is false; [::1]:53 is a loopback",
				"t.toml:9: resolver.stub: b.example. has no server the resolver would ask: 0.0.0.0 is a loopback"}},
		{"query-ipv6 = false\n[[resolver.stub]]\nname = \"a.example\"\nservers = [\"2001:db8::1\", \"[2001:db8::2]:53\"]\n",
			[]string{"t.toml:6: resolver.stub: a.example. has no server the resolver would ask: 2001:db8::1 is IPv6, and query-ipv6 is false; [2001:db8::2]:53 is IPv6"}},
		{"query-ipv4 = false\n[[resolver.forward]]\nname = \"a.example\"\nservers = [\"::ffff:192.0.2.1\"]\n",
			[]string{"t.toml:6: resolver.forward: a.example. has no server the resolver would ask: ::ffff:192.0.2.1 is IPv4, and query-ipv4 is false"}},
		{"[[resolver.forward]]\nname = \"a.example\"\nserver = [\"192.0.2.1\"]\n", []string{"t.toml:5: unknown key resolver.forward.server (did you mean resolver.forward.servers?)"}},
		{"negative-trust-anchors = [\"a..example\", \"b.example\", \"B.Example.\", \"\"]\n",
			[]string{"t.toml:3: resolver.negative-trust-anchors: invalid name \"a..example.\"", "t.toml:3: resolver.negative-trust-anchors: b.example. listed twice", "t.toml:3: resolver.negative-trust-anchors: invalid name \"\""}},
		{"negative-trust-anchors = \"b.example\"\n", []string{"t.toml:3: resolver.negative-trust-anchors: want a list of domain names such as \"broken.example\""}},
	} {
		wantErrors(t, "[resolver]\nlisten = [\"127.0.0.1:53\"]\n"+tc.input, tc.want)
	}
}

// wantErrors wants Parse to fail on input with errors holding each of
// want.
func wantErrors(t *testing.T, input string, want []string) {
	t.Helper()
	_, err := Parse("t.toml", []byte(input))
	if err == nil {
		t.Errorf("%q: parsed", input)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q: error %q\ndoes not contain %q", input, err, w)
		}
	}
}
