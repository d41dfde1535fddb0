package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestDefault(t *testing.T) {
	c := Default()
	if got := c.Server.Listen; len(got) != 1 || got[0] != "127.0.0.1:5300" {
		t.Errorf("Listen = %v, want [127.0.0.1:5300]", got)
	}
	if c.Server.Workers != 0 || c.Server.UDPPayload != 1232 || c.Server.ResponseCache != 8192 || c.Server.TCPIdleTimeout.Duration != 10*time.Second ||
		c.Server.TCPMaxConnections != 1024 || c.Server.TCPMaxPerClient != 128 || c.Server.TCPMaxPipelined != 64 || c.Server.TCPIOTimeout.Duration != 500*time.Millisecond || c.Server.LogLevel != "info" {
		t.Errorf("server defaults wrong: %+v", c.Server)
	}
	if !c.ChaosEnabled() || c.Identity.Version != "Tern" || c.Identity.ID == "" || c.Identity.NSID != "" {
		t.Errorf("identity defaults wrong: %+v", c.Identity)
	}
	if len(c.Zones) != 0 || c.Path != "" {
		t.Errorf("zones=%v path=%q, want none", c.Zones, c.Path)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
	// Each call must return independent values: the decoder writes through
	// Identity.Enabled, so a shared pointer would leak between configs.
	d := Default()
	*d.Identity.Enabled = false
	d.Server.Listen[0] = "x"
	if !c.ChaosEnabled() || c.Server.Listen[0] != "127.0.0.1:5300" {
		t.Error("Default() configs share state")
	}
}

func TestParseValid(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "abs.zone")
	tests := []struct {
		name  string
		path  string
		input string
		check func(t *testing.T, c *Config)
	}{
		{
			name:  "empty file gives defaults",
			path:  "/etc/tern/tern.toml",
			input: "",
			check: func(t *testing.T, c *Config) {
				if c.Server.UDPPayload != 1232 || c.Server.Listen[0] != "127.0.0.1:5300" || !c.ChaosEnabled() {
					t.Errorf("defaults not applied: %+v", c)
				}
				if c.Path != "/etc/tern/tern.toml" {
					t.Errorf("Path = %q", c.Path)
				}
			},
		},
		{
			name: "all server keys",
			input: `[server]
listen = ["0.0.0.0:53", "[::]:53", "[fe80::1%eth0]:5353"]
workers = 4
udp-payload = 4096
tcp-idle-timeout = "1m30s"
tcp-max-connections = 1
tcp-max-connections-per-client = 3
tcp-max-pipelined = 5
tcp-io-timeout = "2s"
log-level = "debug"
`,
			check: func(t *testing.T, c *Config) {
				s := c.Server
				if len(s.Listen) != 3 || s.Listen[1] != "[::]:53" || s.Workers != 4 || s.UDPPayload != 4096 ||
					s.TCPIdleTimeout.Duration != 90*time.Second || s.TCPMaxConnections != 1 || s.TCPMaxPerClient != 3 || s.TCPMaxPipelined != 5 || s.TCPIOTimeout.Duration != 2*time.Second || s.LogLevel != "debug" {
					t.Errorf("server = %+v", s)
				}
			},
		},
		{
			name:  "data directory and journal bounds",
			input: "[server]\ndata-dir = \"state\"\njournal-max-size = \"1MiB\"\n[[zone]]\norigin = \"a.test\"\nfile = \"a\"\njournal-max-size = \"8KiB\"\n[[zone]]\norigin = \"b.test\"\nfile = \"b\"\n",
			check: func(t *testing.T, c *Config) {
				if want := filepath.Join(filepath.Dir(c.Path), "state"); c.Server.DataDir != want {
					t.Errorf("DataDir = %q, want %q", c.Server.DataDir, want)
				}
				if a, b := c.JournalMaxBytes(&c.Zones[0]), c.JournalMaxBytes(&c.Zones[1]); a != 8<<10 || b != 1<<20 {
					t.Errorf("journal bounds %d, %d", a, b)
				}
			},
		},
		{
			name:  "journal default",
			input: "[[zone]]\norigin = \"a.test\"\nfile = \"a\"\n",
			check: func(t *testing.T, c *Config) {
				if n := c.JournalMaxBytes(&c.Zones[0]); n != 64<<20 {
					t.Errorf("journal bound %d", n)
				}
			},
		},
		{
			name:  "response cache off",
			input: "[server]\nresponse-cache = 0\n",
			check: func(t *testing.T, c *Config) {
				if c.Server.ResponseCache != 0 {
					t.Errorf("ResponseCache = %d", c.Server.ResponseCache)
				}
			},
		},
		{
			name:  "payload bounds inclusive",
			input: "[server]\nudp-payload = 512\n",
			check: func(t *testing.T, c *Config) {
				if c.Server.UDPPayload != 512 {
					t.Errorf("UDPPayload = %d", c.Server.UDPPayload)
				}
			},
		},
		{
			name:  "payload upper bound",
			input: "[server]\nudp-payload = 65535\n",
			check: func(t *testing.T, c *Config) {
				if c.Server.UDPPayload != 65535 {
					t.Errorf("UDPPayload = %d", c.Server.UDPPayload)
				}
			},
		},
		{
			name:  "identity explicit empty version and chaos off",
			input: "[identity]\nchaos = false\nid = \"ns1\"\nversion = \"\"\nnsid = \"0xCAFE\"\n",
			check: func(t *testing.T, c *Config) {
				if c.ChaosEnabled() || c.Identity.ID != "ns1" || c.Identity.Version != "" {
					t.Errorf("identity = %+v", c.Identity)
				}
				b, err := c.Identity.NSIDBytes()
				if err != nil || !bytes.Equal(b, []byte{0xca, 0xfe}) {
					t.Errorf("NSIDBytes = %x, %v", b, err)
				}
			},
		},
		{
			name: "zones normalized and resolved",
			path: "/etc/tern/tern.toml",
			input: `# comment
[[zone]]
origin = "Example.COM"
file = "zones/example.com.zone"

[[zone]]
origin = "example.org."
file = "` + abs + `"

[[zone]]
origin = "."
file = "root.zone"
`,
			check: func(t *testing.T, c *Config) {
				want := []Zone{
					{Origin: "example.com.", File: "/etc/tern/zones/example.com.zone", Line: 2},
					{Origin: "example.org.", File: abs, Line: 6},
					{Origin: ".", File: "/etc/tern/root.zone", Line: 10},
				}
				if len(c.Zones) != len(want) {
					t.Fatalf("zones = %+v", c.Zones)
				}
				for i := range want {
					if !reflect.DeepEqual(c.Zones[i], want[i]) {
						t.Errorf("zone %d = %+v, want %+v", i, c.Zones[i], want[i])
					}
				}
			},
		},
		{
			name:  "relative file kept without config path",
			input: "[[zone]]\norigin = \"a.test\"\nfile = \"a.zone\"\n",
			check: func(t *testing.T, c *Config) {
				if c.Zones[0].File != "a.zone" || c.Zones[0].Origin != "a.test." {
					t.Errorf("zone = %+v", c.Zones[0])
				}
			},
		},
		{
			name:  "inline zone array and dotted keys",
			input: "server.workers = 2\nzone = [\n  {origin = \"a.test\", file = \"a\"},\n  {origin = \"b.test\", file = \"b\"},\n]\n",
			check: func(t *testing.T, c *Config) {
				if c.Server.Workers != 2 || len(c.Zones) != 2 || c.Zones[0].Line != 3 || c.Zones[1].Line != 4 {
					t.Errorf("got workers=%d zones=%+v", c.Server.Workers, c.Zones)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(tt.path, []byte(tt.input))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string // substrings that must all appear in the error
	}{
		{
			name:  "syntax error",
			input: "[server]\nworkers = \n",
			want:  []string{"t.toml:2:"},
		},
		{
			name:  "unterminated table",
			input: "[server\n",
			want:  []string{"t.toml:1:"},
		},
		{
			name:  "unknown keys all reported",
			input: "[server]\nfoo = 1\nlisten = [\"127.0.0.1:53\"]\nbar = 2\n[[zone]]\norigin = \"a\"\nfile = \"a\"\nqq = 1\n[other]\nx = 1\n",
			want: []string{
				"t.toml:2: unknown key server.foo",
				"t.toml:4: unknown key server.bar",
				"t.toml:8: unknown key zone.qq",
				"t.toml:9: unknown key other",
			},
		},
		{
			name:  "unknown top-level key",
			input: "listen = [\"127.0.0.1:53\"]\n",
			want:  []string{"t.toml:1: unknown key listen"},
		},
		{
			name:  "wrong type",
			input: "[server]\n\nworkers = \"four\"\n",
			want:  []string{"t.toml:3:", "server.workers"},
		},
		{
			name:  "bad duration",
			input: "[server]\ntcp-idle-timeout = \"ten seconds\"\n",
			want:  []string{"t.toml:2:", "server.tcp-idle-timeout", "invalid duration"},
		},
		{
			name:  "duration as integer",
			input: "[server]\ntcp-idle-timeout = 10\n",
			want:  []string{"t.toml:2: server.tcp-idle-timeout: want a duration string such as \"10s\", got an integer"},
		},
		{
			name:  "second duration key as integer",
			input: "[server]\ntcp-idle-timeout = \"10s\"\ntcp-io-timeout = 500\n",
			want:  []string{"t.toml:3: server.tcp-io-timeout: want a duration string such as \"10s\", got an integer"},
		},
		{
			name:  "journal sizes",
			input: "[server]\njournal-max-size = \"64\"\n[[zone]]\norigin = \"a.test\"\nfile = \"a\"\njournal-max-size = \"1KiB\"\n",
			want: []string{"t.toml:2: server.journal-max-size: invalid size \"64\"",
				"t.toml:3: zone \"a.test.\": journal-max-size: \"1KiB\" is less than 4KiB"},
		},
		{
			name:  "io timeout zero",
			input: "[server]\ntcp-io-timeout = \"0s\"\n",
			want:  []string{"t.toml:2: server.tcp-io-timeout: must be positive"},
		},
		{
			name:  "duplicate key",
			input: "[server]\nworkers = 1\nworkers = 2\n",
			want:  []string{"t.toml:3:", "already defined"},
		},
		{
			name:  "listen without port",
			input: "[server]\nlisten = [\"127.0.0.1\"]\n",
			want:  []string{"t.toml:2: server.listen: invalid address \"127.0.0.1\""},
		},
		{
			name:  "listen host name",
			input: "[server]\nlisten = [\n  \"127.0.0.1:53\",\n  \"localhost:53\",\n]\n",
			want:  []string{"t.toml:4: server.listen: invalid address \"localhost:53\""},
		},
		{
			name:  "listen bad port",
			input: "[server]\nlisten = [\"[::1]:99999\"]\n",
			want:  []string{"t.toml:2: server.listen: invalid address \"[::1]:99999\""},
		},
		{
			name:  "listen empty",
			input: "[server]\nlisten = []\n",
			want:  []string{"t.toml:2: server.listen: at least one address is required"},
		},
		{
			name:  "listen duplicate",
			input: "[server]\nlisten = [\"[::1]:53\",\n \"[0:0::1]:53\"]\n",
			want:  []string{"t.toml:3: server.listen: duplicate address \"[0:0::1]:53\" (same as \"[::1]:53\")"},
		},
		{
			name:  "negative workers",
			input: "[server]\nworkers = -1\n",
			want:  []string{"t.toml:2: server.workers: must be >= 0"},
		},
		{
			name:  "negative response cache",
			input: "[server]\nresponse-cache = -1\n",
			want:  []string{"t.toml:2: server.response-cache: must be between 0 and 131072, got -1"},
		},
		{
			name:  "payload too small",
			input: "[server]\nudp-payload = 511\n",
			want:  []string{"t.toml:2: server.udp-payload: must be between 512 and 65535, got 511"},
		},
		{
			name:  "payload too large",
			input: "[server]\nudp-payload = 65536\n",
			want:  []string{"t.toml:2: server.udp-payload: must be between 512 and 65535, got 65536"},
		},
		{
			name:  "idle timeout zero",
			input: "[server]\ntcp-idle-timeout = \"0s\"\n",
			want:  []string{"t.toml:2: server.tcp-idle-timeout: must be positive"},
		},
		{
			name:  "max connections zero",
			input: "[server]\ntcp-max-connections = 0\n",
			want:  []string{"t.toml:2: server.tcp-max-connections: must be >= 1, got 0"},
		},
		{
			name:  "tcp limits zero",
			input: "[server]\ntcp-max-pipelined = 0\ntcp-max-connections-per-client = -1\n",
			want: []string{"t.toml:2: server.tcp-max-pipelined: must be >= 1, got 0",
				"t.toml:3: server.tcp-max-connections-per-client: must be >= 1, got -1"},
		},
		{
			name:  "bad log level",
			input: "[server]\nlog-level = \"verbose\"\n",
			want:  []string{"t.toml:2: server.log-level: invalid level \"verbose\""},
		},
		{
			name:  "bad log format",
			input: "[server]\nlog-level = \"info\"\nlog-format = \"xml\"\n",
			want:  []string{"t.toml:3: server.log-format: invalid format \"xml\" (want text or json)"},
		},
		{
			name:  "query log negative",
			input: "[server]\nquery-log = -1\n",
			want:  []string{"t.toml:2: server.query-log: must be >= 0"},
		},
		{
			name:  "group without user",
			input: "[server]\ngroup = \"nogroup\"\n",
			want:  []string{"t.toml:2: server.group: \"nogroup\" set without server.user"},
		},
		{
			name:  "log level case sensitive",
			input: "[server]\nlog-level = \"INFO\"\n",
			want:  []string{"t.toml:2: server.log-level"},
		},
		{
			name:  "bad nsid hex",
			input: "[identity]\nnsid = \"0xZZ\"\n",
			want:  []string{"t.toml:2: identity.nsid: invalid hex"},
		},
		{
			name:  "odd nsid hex",
			input: "[identity]\nnsid = \"0xabc\"\n",
			want:  []string{"t.toml:2: identity.nsid: invalid hex"},
		},
		{
			name:  "empty nsid hex",
			input: "[identity]\nnsid = \"0x\"\n",
			want:  []string{"t.toml:2: identity.nsid: empty hex"},
		},
		{
			name:  "zone without origin",
			input: "[[zone]]\nfile = \"a.zone\"\n",
			want:  []string{"t.toml:1: zone #1: missing origin"},
		},
		{
			name:  "zone without file",
			input: "\n[[zone]]\norigin = \"a.test\"\n",
			want:  []string{"t.toml:2: zone \"a.test.\": missing file"},
		},
		{
			name:  "empty zone reports both",
			input: "[[zone]]\n",
			want:  []string{"t.toml:1: zone #1: missing origin", "t.toml:1: zone #1: missing file"},
		},
		{
			name:  "invalid origin",
			input: "[[zone]]\norigin = \"a..b\"\nfile = \"x\"\n",
			want:  []string{"t.toml:1: zone \"a..b.\": invalid origin name"},
		},
		{
			name:  "label too long",
			input: "[[zone]]\norigin = \"" + strings.Repeat("a", 64) + ".test\"\nfile = \"x\"\n",
			want:  []string{"t.toml:1: zone", "invalid origin name"},
		},
		{
			name:  "duplicate origin case and dot insensitive",
			input: "[[zone]]\norigin = \"example.com\"\nfile = \"a\"\n\n[[zone]]\norigin = \"EXAMPLE.com.\"\nfile = \"b\"\n",
			want:  []string{"t.toml:5: zone \"example.com.\": duplicate origin (first defined at line 1)"},
		},
		{
			name: "every problem reported",
			input: `[server]
listen = ["bad", "127.0.0.1:53", "127.0.0.1:53"]
workers = -3
udp-payload = 100
log-level = "loud"
[identity]
nsid = "0xg"
[[zone]]
origin = "a.test"
[[zone]]
origin = "A.test"
file = "x"
`,
			want: []string{
				"t.toml:2: server.listen: invalid address \"bad\"",
				"t.toml:2: server.listen: duplicate address",
				"t.toml:3: server.workers",
				"t.toml:4: server.udp-payload",
				"t.toml:5: server.log-level",
				"t.toml:7: identity.nsid",
				"t.toml:8: zone \"a.test.\": missing file",
				"t.toml:10: zone \"a.test.\": duplicate origin (first defined at line 8)",
			},
		},
		{
			name:  "inline table keys fall back to outer line",
			input: "\nserver = { workers = -1 }\n",
			want:  []string{"t.toml:2: server.workers"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("t.toml", []byte(tt.input))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", c)
			}
			if c != nil {
				t.Errorf("Parse returned a config along with error %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestUnknownKeysAreSeparateErrors(t *testing.T) {
	_, err := Parse("t.toml", []byte("a = 1\nb = 2\n"))
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 2 {
		t.Fatalf("want 2 joined errors, got %v", err)
	}
}

func TestValidateWithoutFile(t *testing.T) {
	c := Default()
	c.Server.Workers = -1
	c.Zones = []Zone{{Origin: "a.test", File: "a"}, {Origin: "A.TEST.", File: "b"}}
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate succeeded")
	}
	for _, w := range []string{"<config>: server.workers", "<config>: zone \"A.TEST.\": duplicate origin (first defined as zone #1)"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\ndoes not contain %q", err, w)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tern.toml")
	data := "[server]\nworkers = 3\n[[zone]]\norigin = \"a.test\"\nfile = \"a.zone\"\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.Path != path || c.Server.Workers != 3 || c.Zones[0].File != filepath.Join(dir, "a.zone") || c.Zones[0].Line != 3 {
		t.Errorf("got %+v", c)
	}
	if _, err := Load(filepath.Join(dir, "missing.toml")); err == nil || !strings.Contains(err.Error(), "missing.toml") {
		t.Errorf("Load of missing file: %v", err)
	}
}

func TestExampleConfig(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "tern.toml")
	c, err := Load(path)
	if err != nil {
		t.Fatalf("examples/tern.toml: %v", err)
	}
	// The example documents the defaults, so apart from zones it must
	// match Default() exactly; this catches the two drifting apart.
	// Every field is compared, so a key added to Server or Identity is
	// covered without touching this test.
	d := Default()
	if !reflect.DeepEqual(c.Server, d.Server) {
		t.Errorf("server = %+v, default %+v", c.Server, d.Server)
	}
	if !reflect.DeepEqual(c.Identity, d.Identity) {
		t.Errorf("identity = %+v, default %+v", c.Identity, d.Identity)
	}
	if len(c.Zones) == 0 {
		t.Error("example has no zones")
	}
}

func TestNSIDBytes(t *testing.T) {
	tests := []struct {
		nsid    string
		want    []byte
		wantErr bool
	}{
		{"", nil, false},
		{"ns1.example", []byte("ns1.example"), false},
		{"0x6e7331", []byte("ns1"), false},
		{"0X00ff", []byte{0, 0xff}, false},
		{"0x", nil, true},
		{"0xq1", nil, true},
		{"0x123", nil, true},
	}
	for _, tt := range tests {
		got, err := Identity{NSID: tt.nsid}.NSIDBytes()
		if (err != nil) != tt.wantErr || !bytes.Equal(got, tt.want) {
			t.Errorf("NSIDBytes(%q) = %x, %v; want %x, err=%v", tt.nsid, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestChaosEnabled(t *testing.T) {
	f, tr := false, true
	for _, tt := range []struct {
		v    *bool
		want bool
	}{{nil, true}, {&tr, true}, {&f, false}} {
		c := &Config{Identity: Identity{Enabled: tt.v}}
		if got := c.ChaosEnabled(); got != tt.want {
			t.Errorf("ChaosEnabled(%v) = %v", tt.v, got)
		}
	}
}

func TestDurationText(t *testing.T) {
	var d Duration
	if err := d.UnmarshalText([]byte("2m")); err != nil || d.Duration != 2*time.Minute {
		t.Fatalf("UnmarshalText = %v, %v", d, err)
	}
	b, err := d.MarshalText()
	if err != nil || string(b) != "2m0s" {
		t.Errorf("MarshalText = %q, %v", b, err)
	}
	if err := d.UnmarshalText([]byte("soon")); err == nil {
		t.Error("UnmarshalText accepted garbage")
	}
}

func TestManyZonesLines(t *testing.T) {
	const n = 5000
	var b strings.Builder
	b.WriteString("[server]\nworkers = 1\n")
	for i := range n {
		// Each zone table is 4 lines, starting at line 3.
		b.WriteString("[[zone]]\norigin = \"z" + strconv.Itoa(i) + ".test\"\nfile = \"z.zone\"\n\n")
	}
	c, err := Parse("many.toml", []byte(b.String()))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(c.Zones) != n {
		t.Fatalf("got %d zones", len(c.Zones))
	}
	for i, z := range c.Zones {
		if want := 3 + 4*i; z.Line != want {
			t.Fatalf("zone %d line = %d, want %d", i, z.Line, want)
		}
	}
}

func TestLineOf(t *testing.T) {
	data := []byte("a\nbb\n\nc")
	nl := newlines(data)
	for off, want := range []int{1, 1, 2, 2, 2, 3, 4} {
		if got := lineOf(nl, off); got != want {
			t.Errorf("lineOf(%d) = %d, want %d", off, got, want)
		}
	}
}

func TestNilConfig(t *testing.T) {
	var c *Config
	if err := c.Validate(); err == nil {
		t.Error("nil Validate succeeded")
	}
	if !c.ChaosEnabled() {
		t.Error("nil ChaosEnabled = false, want default true")
	}
}

// TestDefaultDirectories: server.control and server.data-dir default to
// the directories systemd gives the service (RuntimeDirectory=,
// StateDirectory=; the first of several, colon-separated), else
// /run/tern/control.sock and /var/lib/tern; the defaults hold through
// Parse, a relative setting is resolved against the file's directory, and
// control = "" turns the socket off.
func TestDefaultDirectories(t *testing.T) {
	for _, tc := range []struct {
		name             string
		runtime, state   string // "" unsets the variable
		control, dataDir string
	}{
		{"unset", "", "", "/run/tern/control.sock", "/var/lib/tern"},
		{"systemd", "/run/tern-x", "/var/lib/tern-x", "/run/tern-x/control.sock", "/var/lib/tern-x"},
		{"several", "/run/a:/run/b", "/var/lib/a:/var/lib/b", "/run/a/control.sock", "/var/lib/a"},
		{"runtime only", "/run/r", "", "/run/r/control.sock", "/var/lib/tern"},
		{"state only", "", "/srv/s", "/run/tern/control.sock", "/srv/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, e := range []struct{ name, val string }{{"RUNTIME_DIRECTORY", tc.runtime}, {"STATE_DIRECTORY", tc.state}} {
				t.Setenv(e.name, e.val) // restored after the test
				if e.val == "" {
					os.Unsetenv(e.name)
				}
			}
			d := Default()
			if d.Server.Control != tc.control || d.Server.DataDir != tc.dataDir {
				t.Errorf("Default: control %q data-dir %q, want %q %q", d.Server.Control, d.Server.DataDir, tc.control, tc.dataDir)
			}
			// A file that sets neither: the defaults, and a secondary
			// zone's file under data-dir.
			dir := t.TempDir()
			path := filepath.Join(dir, "tern.toml")
			c, err := Parse(path, []byte("[[remote]]\nname = \"p\"\naddress = [\"192.0.2.1\"]\n[[zone]]\norigin = \"s.test\"\nprimary = [\"p\"]\n"))
			if err != nil {
				t.Fatal(err)
			}
			if c.Server.Control != tc.control || c.Server.DataDir != tc.dataDir {
				t.Errorf("Parse: control %q data-dir %q, want %q %q", c.Server.Control, c.Server.DataDir, tc.control, tc.dataDir)
			}
			if f := c.Zones[0].File; !strings.HasPrefix(f, tc.dataDir+string(filepath.Separator)) {
				t.Errorf("secondary zone file %q, want it under %s", f, tc.dataDir)
			}
			// Set in the file: the environment does not matter, a
			// relative path is the file's directory's.
			c, err = Parse(path, []byte("[server]\ncontrol = \"ctl/c.sock\"\ndata-dir = \"state\"\n"))
			if err != nil {
				t.Fatal(err)
			}
			if c.Server.Control != filepath.Join(dir, "ctl/c.sock") || c.Server.DataDir != filepath.Join(dir, "state") {
				t.Errorf("relative: control %q data-dir %q", c.Server.Control, c.Server.DataDir)
			}
			if c, err = Parse(path, []byte("[server]\ncontrol = \"\"\n")); err != nil || c.Server.Control != "" {
				t.Errorf("control = \"\": %v %q, want no socket", err, c.Server.Control)
			}
		})
	}
}
