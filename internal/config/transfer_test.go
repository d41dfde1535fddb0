package config

import (
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tern-dns/tern/internal/acl"
)

const transferConfig = `[[key]]
name = "XFR"
algorithm = "hmac-sha256"
secret = "c2VjcmV0IGtleSBmb3IgdGhlIGV4YW1wbGUgb25seQ=="

[[remote]]
name = "ns2"
address = ["192.0.2.2:53", "[2001:db8::2]:5353", "192.0.2.3"]
key = "xfr."

[[remote]]
name = "ns3"
address = ["192.0.2.30"]

[[acl]]
name = "to-secondaries"
remote = ["ns2", "ns3"]
action = ["transfer"]

[[acl]]
name = "local"
address = ["127.0.0.0/8", "::1"]
key = ["xfr"]
action = ["transfer", "notify"]

[[zone]]
origin = "example.com"
file = "example.com.zone"
acl = ["to-secondaries", "local"]
notify = ["ns2"]
`

func TestTransferTables(t *testing.T) {
	c, err := Parse("tern.toml", []byte(transferConfig))
	if err != nil {
		t.Fatal(err)
	}
	if k := c.Key("xfr."); k == nil || k.Algorithm != "hmac-sha256" {
		t.Fatalf("key xfr. = %+v (keys %+v)", k, c.Keys)
	}
	if r := c.Remote("ns2"); r == nil || r.Key != "xfr." {
		t.Fatalf("remote ns2 = %+v", r)
	}
	if got := c.Zones[0].Notify; !reflect.DeepEqual(got, []string{"ns2"}) {
		t.Errorf("notify = %v", got)
	}
	l, err := c.ZoneACL(&c.Zones[0])
	if err != nil {
		t.Fatal(err)
	}
	host := func(s string) netip.Prefix { a := netip.MustParseAddr(s); return netip.PrefixFrom(a, a.BitLen()) }
	want := acl.List{
		{Name: "to-secondaries/ns2", Prefixes: []netip.Prefix{host("192.0.2.2"), host("2001:db8::2"), host("192.0.2.3")}, Keys: []string{"xfr."}, Actions: acl.Transfer},
		{Name: "to-secondaries/ns3", Prefixes: []netip.Prefix{host("192.0.2.30")}, Actions: acl.Transfer},
		{Name: "local", Prefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), host("::1")}, Keys: []string{"xfr."}, Actions: acl.Transfer | acl.Notify},
	}
	if !reflect.DeepEqual(l, want) {
		t.Errorf("ZoneACL:\n got %+v\nwant %+v", l, want)
	}
	// The resolved rules at work: ns2 must sign, ns3 must not.
	for _, tc := range []struct {
		addr, key string
		ok        bool
	}{
		{"192.0.2.2", "xfr.", true}, {"192.0.2.2", "", false}, {"192.0.2.30", "", true},
		{"192.0.2.30", "xfr.", false}, {"127.0.0.1", "xfr.", true}, {"127.0.0.1", "", false},
	} {
		if got := l.Allow(netip.MustParseAddr(tc.addr), tc.key, acl.Transfer) != nil; got != tc.ok {
			t.Errorf("%s key %q: allowed %v, want %v", tc.addr, tc.key, got, tc.ok)
		}
	}
}

func TestTransferErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"undefined references", `
[[remote]]
name = "ns2"
address = ["192.0.2.2"]
key = "nokey"

[[acl]]
name = "a"
remote = ["ns9"]
key = ["nokey"]
action = ["transfer"]

[[zone]]
origin = "example.com"
file = "z"
acl = ["b"]
notify = ["ns2", "ns8"]
`, []string{
			`tern.toml:5: remote "ns2": key "nokey." is not defined (no [[key]] has that name)`,
			`tern.toml:9: acl "a": remote "ns9" is not defined (no [[remote]] has that name)`,
			`tern.toml:10: acl "a": key "nokey." is not defined`,
			`tern.toml:16: zone "example.com.": acl "b" is not defined (no [[acl]] has that name)`,
			`tern.toml:17: zone "example.com.": remote "ns8" is not defined`,
		}},
		{"bad values", `
[[key]]
name = "k"
algorithm = "hmac-md5"
secret = "not base64!"

[[key]]
name = "k2"

[[remote]]
name = "r"
address = ["192.0.2.1:0", "ns1.example.net"]

[[remote]]
name = "r2"

[[acl]]
name = "a"
address = ["192.0.2.1/24", "10.0.0.0/33", "x"]
action = ["xfr"]

[[acl]]
name = "b"
`, []string{
			`tern.toml:4: key "k.": algorithm "hmac-md5" (want one of hmac-sha256, hmac-sha384, hmac-sha512, hmac-sha224, hmac-sha1)`,
			`tern.toml:5: key "k.": secret is not base64`,
			`tern.toml:7: key "k2.": missing algorithm`,
			`tern.toml:7: key "k2.": missing secret`,
			`tern.toml:12: remote "r": address "192.0.2.1:0": port 0`,
			`tern.toml:12: remote "r": address "ns1.example.net": want "ip:port" or "ip"`,
			`tern.toml:14: remote "r2": missing address`,
			`tern.toml:19: acl "a": address "192.0.2.1/24": want an address or a prefix (e.g. 192.0.2.0/24): host bits set (the prefix is 192.0.2.0/24)`,
			`tern.toml:19: acl "a": address "10.0.0.0/33": want an address or a prefix`,
			`tern.toml:19: acl "a": address "x": want an address or a prefix`,
			`tern.toml:20: acl "a": action "xfr" (want transfer, notify, update or query)`,
			`tern.toml:22: acl "b": missing action`,
		}},
		{"names", `
[[key]]
name = "k"
algorithm = "hmac-sha1"
secret = "AAAA"

[[key]]
name = "K."
algorithm = "hmac-sha1"
secret = "AAAA"

[[remote]]
address = ["192.0.2.1"]

[[acl]]
name = "a"
action = ["notify"]

[[acl]]
name = "a"
action = ["notify"]
`, []string{
			`tern.toml:8: key "k.": duplicate name (first defined at line 2)`,
			`tern.toml:12: remote #1: missing name`,
			`tern.toml:20: acl "a": duplicate name (first defined at line 15)`,
		}},
		{"primary", `
[[remote]]
name = "ns1"
address = ["192.0.2.1"]

[[zone]]
origin = "example.net"
file = "z"
primary = ["ns1", "ns0"]
`, []string{
			`tern.toml:9: zone "example.net.": remote "ns0" is not defined`,
		}},
		{"query acls", `
[[key]]
name = "k"
algorithm = "hmac-sha256"
secret = "AAAA"

[[acl]]
name = "q"
address = ["192.0.2.0/24"]
key = ["k"]
action = ["query", "transfer"]

[[acl]]
name = "xfr"
address = ["192.0.2.0/24"]
action = ["transfer"]

[[acl]]
name = "open"
action = ["query"]

[resolver]
listen = ["127.0.0.1:5301"]
allow = ["xfr", "nope", "open", "10.0.0.0/8"]
`, []string{
			`tern.toml:10: acl "q": a query ACL matches client addresses only, not keys`,
			`tern.toml:24: resolver.allow: acl "xfr" does not allow the action query`,
			`tern.toml:24: resolver.allow: "nope" is neither a prefix`,
			`tern.toml:24: resolver.allow: acl "open" lists no address or remote`,
		}},
		{"types", `
[[acl]]
name = "a"
action = "transfer"
[[key]]
name = "k"
secret = 5
`, []string{
			`tern.toml:4: acl.action: want a list of actions (transfer, notify, update, query), got a string`,
			`tern.toml:7: key.secret: want a string, got an integer`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("tern.toml", []byte(tc.body))
			if err == nil {
				t.Fatal("no error")
			}
			lines := strings.Split(err.Error(), "\n")
			for _, w := range tc.want {
				found := false
				for _, l := range lines {
					found = found || strings.HasPrefix(l, w)
				}
				if !found {
					t.Errorf("no error %q in:\n%v", w, err)
				}
			}
			if len(lines) != len(tc.want) {
				t.Errorf("%d errors, want %d:\n%v", len(lines), len(tc.want), err)
			}
		})
	}
}

// TestSecondaryFile: a secondary zone's file defaults to ORIGIN + "zone"
// under server.data-dir, where a relative file goes too; a primary
// zone's relative file stays beside the config.
func TestSecondaryFile(t *testing.T) {
	c, err := Parse("/etc/tern/tern.toml", []byte(`
[server]
data-dir = "/var/lib/tern"
[[remote]]
name = "ns1"
address = ["192.0.2.1"]
[[zone]]
origin = "Example.NET"
primary = ["ns1"]
[[zone]]
origin = "example.org"
primary = ["ns1"]
file = "copies/org.zone"
[[zone]]
origin = "example.com"
file = "com.zone"
`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"/var/lib/tern/example.net.zone", "/var/lib/tern/copies/org.zone", "/etc/tern/com.zone"} {
		if got := c.Zones[i].File; got != want {
			t.Errorf("zone %s: file %q, want %q", c.Zones[i].Origin, got, want)
		}
	}
}

// TestQueryACLConfig: an [[acl]] with the action query gives its zones a
// query rule (by address, a remote's addresses too) and the resolver's
// allow takes its name beside prefixes.
func TestQueryACLConfig(t *testing.T) {
	c, err := Parse("tern.toml", []byte(`
[[remote]]
name = "lan-ns"
address = ["198.51.100.7"]

[[acl]]
name = "lan"
address = ["192.0.2.0/24", "2001:db8::/32"]
remote = ["lan-ns"]
action = ["query"]

[[zone]]
origin = "example.test"
file = "z"
acl = ["lan"]

[resolver]
listen = ["127.0.0.1:5301"]
allow = ["127.0.0.0/8", "lan"]
`))
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.ZoneACL(&c.Zones[0])
	if err != nil {
		t.Fatal(err)
	}
	tab := l.QueryTable()
	for addr, want := range map[string]bool{"192.0.2.1": true, "2001:db8::1": true, "198.51.100.7": true, "198.51.100.8": false, "127.0.0.1": false} {
		if got := tab.Contains(netip.MustParseAddr(addr)); got != want {
			t.Errorf("zone query ACL: %s allowed %v, want %v", addr, got, want)
		}
	}
	want := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("198.51.100.7/32"), netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("2001:db8::/32")}
	if got := c.ResolverAllow(); !slices.Equal(got, want) {
		t.Errorf("resolver allow %v, want %v", got, want)
	}
}
