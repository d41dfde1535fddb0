package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that no input makes Parse panic, and that a successful
// Parse always yields a configuration that still validates.
func FuzzParse(f *testing.F) {
	if ex, err := os.ReadFile(filepath.Join("..", "..", "examples", "tern.toml")); err == nil {
		f.Add(ex)
	}
	for _, s := range []string{
		"",
		"[server]\nlisten = [\"127.0.0.1:53\", \"[::1]:53\"]\nworkers = 2\n",
		"[server]\nudp-payload = 1\ntcp-idle-timeout = \"-1s\"\n",
		"[identity]\nchaos = false\nversion = \"\"\nnsid = \"0xzz\"\n",
		"[[zone]]\norigin = \"a.test\"\nfile = \"a\"\n[[zone]]\norigin = \"A.TEST.\"\n",
		"zone = [{origin = \"a\", file = \"b\"}, {}]\n",
		"server = { listen = [\"x\"] }\n",
		"[server\nfoo = \n",
		"a.b.c = 1\n[x.y]\n[[z.w]]\n",
		"[[zone]]\norigin = \"\\\\.\\\\000..\"\nfile = 3\n",
		// Schema checks: a type error beside an unknown near-miss key,
		// both reported with their lines.
		"[server]\nlisten = \"127.0.0.1:53\"\nlisen = []\n[idnetity]\nnsid = 5\n",
		"[[zone]]\norigin = \"a.test\"\nfile = \"a\"\n[zone.signing]\nalgorithm = 1\nbogus = true\n",
		// Transfer tables and the references between them.
		"[[key]]\nname = \"k\"\nalgorithm = \"hmac-sha256\"\nsecret = \"AAAA\"\n[[remote]]\nname = \"r\"\naddress = [\"192.0.2.1\"]\nkey = \"k\"\n" +
			"[[acl]]\nname = \"a\"\nremote = [\"r\"]\naddress = [\"10.0.0.0/8\"]\nkey = [\"K.\"]\naction = [\"transfer\"]\n[[zone]]\norigin = \"a.test\"\nfile = \"a\"\nacl = [\"a\"]\nnotify = [\"r\"]\n",
		"[[acl]]\nname = \"a\"\nremote = [\"nope\"]\naction = [\"xfr\"]\n[[zone]]\norigin = \"a.test\"\nfile = \"a\"\nprimary = [\"r\"]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.toml", data)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Errorf("Parse accepted a config that fails Validate: %v", err)
		}
		if _, err := c.Identity.NSIDBytes(); err != nil {
			t.Errorf("Parse accepted bad NSID: %v", err)
		}
	})
}
