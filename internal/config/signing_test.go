package config

import (
	"strings"
	"testing"
	"time"
)

func TestSigning(t *testing.T) {
	c, err := Parse("/etc/tern/tern.toml", []byte(`
[[zone]]
origin = "example.com"
file = "example.com.zone"
[zone.signing]
key-dir = "keys/example.com"
algorithm = "ed25519"
nsec3 = true
opt-out = true
zsk-lifetime = "720h"
signature-validity = "336h"
signature-refresh = "120h"
serial-policy = "unixtime"
`))
	if err != nil {
		t.Fatal(err)
	}
	sg := c.Zones[0].Signing
	if sg == nil || sg.KeyDir != "/etc/tern/keys/example.com" || sg.Algorithm != "ed25519" || !sg.NSEC3 || !sg.OptOut || sg.SerialPolicy != "unixtime" {
		t.Fatalf("signing %+v", sg)
	}
	if sg.ZSKLifetime.Duration != 720*time.Hour || sg.SignatureRefresh.Duration != 120*time.Hour {
		t.Errorf("durations %+v", sg)
	}
	if c.Zones[0].Signing == nil || Default().Zones != nil {
		t.Error("defaults changed")
	}
	for _, tc := range []struct{ body, want string }{
		{"[zone.signing]\nalgorithm = \"rsasha1\"\n", `tern.toml:2: zone "example.com.": signing: missing key-dir`},
		{"[zone.signing]\nkey-dir = \"k\"\nalgorithm = \"rsasha1\"\n", `algorithm "rsasha1"`},
		{"[zone.signing]\nkey-dir = \"k\"\nopt-out = true\n", "opt-out needs nsec3"},
		{"[zone.signing]\nkey-dir = \"k\"\nserial-policy = \"weekly\"\n", `serial policy "weekly" (want increment, unixtime or dateserial)`},
		{"[zone.signing]\nkey-dir = \"k\"\nsignature-validity = \"1h\"\nsignature-refresh = \"2h\"\n", "signature-refresh must be shorter"},
		{"[zone.signing]\nkey-dir = \"k\"\nbogus = 1\n", "unknown key zone.signing.bogus"},
	} {
		_, err := Parse("tern.toml", []byte("\n[[zone]]\norigin = \"example.com\"\nfile = \"z\"\n"+tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.body, err, tc.want)
		}
	}
}
