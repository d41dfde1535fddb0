package acl

import (
	"net/netip"
	"testing"
)

func TestAllow(t *testing.T) {
	l := List{
		{Name: "secondaries", Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("2001:db8::/32")}, Actions: Transfer},
		{Name: "signed", Keys: []string{"xfr."}, Actions: Transfer | Notify},
		{Name: "ns2", Prefixes: []netip.Prefix{netip.MustParsePrefix("198.51.100.2/32")}, Keys: []string{"ns2."}, Actions: Notify},
	}
	for _, tc := range []struct {
		addr   string
		key    string
		action Action
		want   string // the rule that allows, "" for denied
	}{
		{"192.0.2.7", "", Transfer, "secondaries"},
		{"::ffff:192.0.2.7", "", Transfer, "secondaries"}, // IPv4 on a dual-stack socket
		{"2001:db8::53", "", Transfer, "secondaries"},
		{"fe80::1%eth0", "", Transfer, ""},
		{"192.0.2.7", "", Notify, ""},             // action not in the rule
		{"192.0.2.7", "xfr.", Transfer, "signed"}, // keyless rule is for unsigned requests only
		{"192.0.2.7", "other.", Transfer, ""},
		{"203.0.113.1", "", Transfer, ""},
		{"203.0.113.1", "xfr.", Notify, "signed"},
		{"198.51.100.2", "ns2.", Notify, "ns2"},
		{"198.51.100.3", "ns2.", Notify, ""},
		{"198.51.100.2", "", Notify, ""},
		{"198.51.100.2", "ns2.", Update, ""},
	} {
		r := l.Allow(netip.MustParseAddr(tc.addr), tc.key, tc.action)
		got := ""
		if r != nil {
			got = r.Name
		}
		if got != tc.want {
			t.Errorf("%s key %q %s: allowed by %q, want %q", tc.addr, tc.key, tc.action, got, tc.want)
		}
	}
	if List(nil).Allow(netip.MustParseAddr("127.0.0.1"), "", Transfer) != nil {
		t.Error("an empty list allows")
	}
}

func TestActions(t *testing.T) {
	for _, name := range []string{"transfer", "notify", "update"} {
		a, ok := ParseAction(name)
		if !ok || a.String() != name {
			t.Errorf("ParseAction(%q) = %v, %v", name, a, ok)
		}
	}
	if _, ok := ParseAction("xfr"); ok {
		t.Error("ParseAction(xfr) ok")
	}
	if s := (Transfer | Update).String(); s != "transfer+update" {
		t.Errorf("String = %q", s)
	}
}

func TestQueryTable(t *testing.T) {
	pfx := func(ss ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, s := range ss {
			out = append(out, netip.MustParsePrefix(s))
		}
		return out
	}
	if (List{{Name: "xfr", Actions: Transfer}}).QueryTable() != nil {
		t.Fatal("a list without query rules gave a table (want nil: everyone may query)")
	}
	l := List{
		{Name: "xfr", Prefixes: pfx("203.0.113.0/24"), Actions: Transfer},
		{Name: "q", Prefixes: pfx("192.0.2.0/25", "10.1.2.3/32", "2001:db8:aa::/48", "2001:db8:bb:cc:dd::/80", "::ffff:198.51.100.0/120"), Actions: Query | Transfer},
		{Name: "q6", Prefixes: pfx("fd00::1/128"), Actions: Query},
	}
	tab := l.QueryTable()
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"192.0.2.0", true}, {"192.0.2.127", true}, {"192.0.2.128", false},
		{"::ffff:192.0.2.5", true}, {"10.1.2.3", true}, {"10.1.2.4", false},
		{"203.0.113.1", false},                          // a transfer rule only
		{"198.51.100.9", true}, {"198.51.101.9", false}, // mapped prefix taken as IPv4
		{"2001:db8:aa:ffff::1", true}, {"2001:db8:ab::1", false},
		{"2001:db8:bb:cc:dd:1:2:3", true}, {"2001:db8:bb:cc:de::", false},
		{"fd00::1", true}, {"fd00::2", false}, {"fd00::1%eth0", true},
		{"::", false},
	} {
		a := netip.MustParseAddr(tc.addr)
		if got := tab.Contains(a); got != tc.want {
			t.Errorf("Contains(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
	if tab.Contains(netip.Addr{}) {
		t.Error("the invalid address (no client) is allowed")
	}
	all := List{{Name: "all", Actions: Query}, {Name: "q", Prefixes: pfx("192.0.2.0/24"), Actions: Query}}.QueryTable()
	if !all.Contains(netip.MustParseAddr("2001:db8::1")) || !all.Contains(netip.Addr{}) {
		t.Error("a query rule without prefixes does not allow every address")
	}
	a4, a6 := netip.MustParseAddr("192.0.2.200"), netip.MustParseAddr("2001:db8:ff::1")
	if n := testing.AllocsPerRun(100, func() { tab.Contains(a4); tab.Contains(a6) }); n != 0 {
		t.Errorf("Contains allocates %v times", n)
	}
}
