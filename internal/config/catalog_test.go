package config

import (
	"strings"
	"testing"
)

// TestCatalogKeys: the catalog zone keys (RFC 9432) are checked with
// the [[zone]] line named; a good producer and a good consumer load.
func TestCatalogKeys(t *testing.T) {
	const remote = "[[remote]]\nname = \"p\"\naddress = [\"192.0.2.1\"]\n"
	for _, tc := range []struct {
		name, input string
		want        string // "" when it loads
	}{
		{"producer", "[[zone]]\norigin = \"cat.test\"\n[[zone]]\norigin = \"a.test\"\nfile = \"a\"\ncatalog = \"Cat.Test\"\n", ""},
		{"empty producer", "[[zone]]\norigin = \"cat.test\"\ncatalog-role = \"generate\"\n", ""},
		{"consumer", remote + "[[zone]]\norigin = \"cat.test\"\nprimary = [\"p\"]\ncatalog-role = \"interpret\"\n", ""},
		{"unknown catalog", "[[zone]]\norigin = \"a.test\"\nfile = \"a\"\ncatalog = \"cat.test\"\n",
			`t.toml:1: zone "a.test.": catalog "cat.test." is not a [[zone]] of the configuration`},
		{"catalog with a file", "[[zone]]\norigin = \"cat.test\"\nfile = \"c\"\n[[zone]]\norigin = \"a.test\"\nfile = \"a\"\ncatalog = \"cat.test\"\n",
			`t.toml:1: zone "cat.test.": a catalog zone Tern produces has no file and no primary`},
		{"catalog with a primary", remote + "[[zone]]\norigin = \"cat.test\"\nprimary = [\"p\"]\n[[zone]]\norigin = \"a.test\"\nfile = \"a\"\ncatalog = \"cat.test\"\n",
			`t.toml:4: zone "cat.test.": a catalog zone Tern produces has no file and no primary`},
		{"generate with a file", "[[zone]]\norigin = \"cat.test\"\nfile = \"c\"\ncatalog-role = \"generate\"\n",
			`t.toml:1: zone "cat.test.": a catalog zone Tern produces has no file`},
		{"catalog a member", "[[zone]]\norigin = \"top.test\"\n[[zone]]\norigin = \"cat.test\"\ncatalog = \"top.test\"\n[[zone]]\norigin = \"a.test\"\nfile = \"a\"\ncatalog = \"cat.test\"\n",
			`t.toml:6: zone "a.test.": catalog "cat.test." is itself a member of catalog "top.test."`},
		{"member of itself", "[[zone]]\norigin = \"a.test\"\nfile = \"a\"\ncatalog = \"a.test\"\n",
			`t.toml:1: zone "a.test.": catalog "a.test." is the zone itself`},
		{"member of a consumed catalog", remote + "[[zone]]\norigin = \"cat.test\"\nprimary = [\"p\"]\ncatalog-role = \"interpret\"\n[[zone]]\norigin = \"a.test\"\nfile = \"a\"\ncatalog = \"cat.test\"\n",
			`t.toml:4: zone "cat.test.": a catalog consumed (catalog-role = "interpret") is not one zones here can name`},
		{"interpret without primary", "[[zone]]\norigin = \"cat.test\"\ncatalog-role = \"interpret\"\n",
			`t.toml:1: zone "cat.test.": catalog-role = "interpret" needs primary`},
		{"bad role", "[[zone]]\norigin = \"cat.test\"\nfile = \"c\"\ncatalog-role = \"consume\"\n",
			`t.toml:1: zone "cat.test.": catalog-role "consume" (want "generate" or "interpret")`},
		{"consumer with a member limit", remote + "[[zone]]\norigin = \"cat.test\"\nprimary = [\"p\"]\ncatalog-role = \"interpret\"\ncatalog-max-members = 2\n", ""},
		{"member limit on a producer", "[[zone]]\norigin = \"cat.test\"\ncatalog-role = \"generate\"\ncatalog-max-members = 2\n",
			`t.toml:1: zone "cat.test.": catalog-max-members is for a catalog consumed`},
		{"member limit 0", remote + "[[zone]]\norigin = \"cat.test\"\nprimary = [\"p\"]\ncatalog-role = \"interpret\"\ncatalog-max-members = 0\n",
			`t.toml:4: zone "cat.test.": catalog-max-members 0 is less than 1`},
		{"no file, no members", "[[zone]]\norigin = \"a.test\"\n", `t.toml:1: zone "a.test.": missing file`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("t.toml", []byte(tc.input))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Parse: %v", err)
			case tc.want == "":
				if c.Zones[0].Origin != "cat.test." {
					t.Errorf("origin %q", c.Zones[0].Origin)
				}
			case err == nil:
				t.Fatalf("Parse succeeded, want %q", tc.want)
			case !strings.Contains(err.Error(), tc.want):
				t.Errorf("error %q\ndoes not contain %q", err, tc.want)
			}
		})
	}
}
