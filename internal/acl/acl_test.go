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
