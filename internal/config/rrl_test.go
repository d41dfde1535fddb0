package config

import (
	"net/netip"
	"testing"
	"time"
)

// TestRRL: the [rrl] table with its defaults, off without it.
func TestRRL(t *testing.T) {
	c, err := Parse("t.toml", []byte("[server]\nlisten = [\"127.0.0.1:53\"]\n"))
	if err != nil || c.RRL != nil {
		t.Fatalf("no [rrl]: %v, %+v", err, c.RRL)
	}
	c, err = Parse("t.toml", []byte("[rrl]\nresponses-per-second = 10\n"))
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	got := c.RRL.Limiter()
	if got.Rate != 10 || got.Window != 15*time.Second || got.Slip != 2 || got.IPv4Prefix != 24 || got.IPv6Prefix != 56 || got.Exempt != nil {
		t.Errorf("defaults: %+v", got)
	}
	c, err = Parse("t.toml", []byte("[rrl]\nresponses-per-second = 5\nwindow = \"1m\"\nslip = 0\nipv4-prefix = 32\nipv6-prefix = 64\nexempt = [\"192.0.2.0/24\", \"2001:db8::1\"]\n"))
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	got = c.RRL.Limiter()
	if got.Rate != 5 || got.Window != time.Minute || got.Slip != 0 || got.IPv4Prefix != 32 || got.IPv6Prefix != 64 || len(got.Exempt) != 2 ||
		got.Exempt[1] != netip.MustParsePrefix("2001:db8::1/128") {
		t.Errorf("set: %+v", got)
	}
}

func TestRRLErrors(t *testing.T) {
	for _, tc := range []struct {
		input string
		want  []string
	}{
		{"[rrl]\nslip = 1\n", []string{"t.toml:1: rrl: responses-per-second is required"}},
		{"[rrl]\nresponses-per-second = 0\n", []string{"t.toml:2: rrl.responses-per-second: must be at least 1, got 0"}},
		{"[rrl]\nresponses-per-second = 1\nwindow = \"0s\"\nslip = 11\nipv4-prefix = 33\nipv6-prefix = 0\n",
			[]string{"t.toml:3: rrl.window: must be between 1s and 1h0m0s, got 0s", "t.toml:4: rrl.slip: must be between 0 (never) and 10, got 11",
				"t.toml:5: rrl.ipv4-prefix: must be between 1 and 32, got 33", "t.toml:6: rrl.ipv6-prefix: must be between 1 and 128, got 0"}},
		{"[rrl]\nresponses-per-second = 1\nwindow = \"2h\"\n", []string{"t.toml:3: rrl.window: must be between 1s and 1h0m0s, got 2h0m0s"}},
		{"[rrl]\nresponses-per-second = 1\nexempt = [\"192.0.2.0/24\",\n \"nonsense\"]\n", []string{"t.toml:4: rrl.exempt: invalid prefix \"nonsense\""}},
		{"[rrl]\nresponses-per-second = \"10\"\n", []string{"t.toml:2: rrl.responses-per-second: want an integer, got a string"}},
		{"[rrl]\nresponses-per-second = 1\nrate = 5\n", []string{"t.toml:3: unknown key rrl.rate"}},
	} {
		wantErrors(t, tc.input, tc.want)
	}
}

// TestDnstap: [dnstap] takes a file or a socket, one of them.
func TestDnstap(t *testing.T) {
	c, err := Parse("t.toml", []byte("[dnstap]\nfile = \"/var/log/tern/dnstap.fstrm\"\n"))
	if err == nil {
		err = c.Validate()
	}
	if err != nil || c.Dnstap == nil || c.Dnstap.File != "/var/log/tern/dnstap.fstrm" || c.Dnstap.Versions != 3 {
		t.Fatalf("file: %v %+v", err, c.Dnstap)
	}
	for _, tc := range []struct {
		input string
		want  []string
	}{
		{"[server]\n[dnstap]\n", []string{"t.toml:2: dnstap: neither file nor socket is set (want one of them)"}},
		{"[dnstap]\nfile = \"/a\"\nsocket = \"/b\"\n", []string{"t.toml:3: dnstap: file and socket are both set (want one of them)"}},
		{"[dnstap]\npath = \"/a\"\n", []string{"t.toml:2: unknown key dnstap.path"}},
		{"[dnstap]\nfile = \"/a\"\nversions = -1\n", []string{"t.toml:3: dnstap.versions: must be between 0 (truncate) and 1000, got -1"}},
	} {
		wantErrors(t, tc.input, tc.want)
	}
}
