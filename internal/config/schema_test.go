package config

import (
	"reflect"
	"strings"
	"testing"
)

// TestParseMessages checks whole error messages: a type error names the
// key, its line and what the key takes; every unknown key and every type
// error of a file is reported in one run; a near-miss key gets the known
// key it most likely meant.
func TestParseMessages(t *testing.T) {
	// No key is removed today: one stands in for the message's test.
	removedKeys["server.old-key"] = "it bounded nothing"
	t.Cleanup(func() { delete(removedKeys, "server.old-key") })
	tests := []struct {
		name  string
		input string
		want  string // the whole error, one line per problem
	}{
		{
			name:  "list given a string",
			input: "[server]\n\nlisten = \"127.0.0.1:53\"\n",
			want:  `t.toml:3: server.listen: want a list of "host:port" strings, got a string`,
		},
		{
			name:  "list holding a number",
			input: "[server]\nlisten = [\n  \"127.0.0.1:53\",\n  53,\n]\n",
			want:  `t.toml:4: server.listen: want a list of "host:port" strings, got a list holding an integer (item 2)`,
		},
		{
			name:  "integer given a string",
			input: "[server]\nworkers = \"4\"\n",
			want:  `t.toml:2: server.workers: want an integer, got a string`,
		},
		{
			name:  "boolean given a string",
			input: "[identity]\nchaos = \"no\"\n",
			want:  `t.toml:2: identity.chaos: want true or false, got a string`,
		},
		{
			name:  "string given a float",
			input: "[server]\nlog-level = 1.5\n",
			want:  `t.toml:2: server.log-level: want a string, got a float`,
		},
		{
			name:  "bad duration",
			input: "[server]\ntcp-idle-timeout = \"ten\"\n",
			want:  `t.toml:2: server.tcp-idle-timeout: invalid duration "ten" (want a string such as "10s"): time: invalid duration "ten"`,
		},
		{
			name:  "type errors do not hide unknown keys",
			input: "[server]\nworkers = \"4\"\nudp-payload = true\n[identity]\nnsdi = \"ns1\"\n",
			want: `t.toml:2: server.workers: want an integer, got a string
t.toml:3: server.udp-payload: want an integer, got a boolean
t.toml:5: unknown key identity.nsdi (did you mean identity.nsid?)`,
		},
		{
			name:  "near misses in the same table",
			input: "[server]\nlisten_addr = []\nworkres = 2\ntcp_idle_timeout = \"5s\"\nloglevel = \"info\"\n",
			want: `t.toml:2: unknown key server.listen_addr
t.toml:3: unknown key server.workres (did you mean server.workers?)
t.toml:4: unknown key server.tcp_idle_timeout (did you mean server.tcp-idle-timeout?)
t.toml:5: unknown key server.loglevel (did you mean server.log-level?)`,
		},
		{
			name:  "key in the wrong table",
			input: "nsid = \"x\"\n[server]\nversion = \"1\"\n",
			want: `t.toml:1: unknown key nsid (did you mean identity.nsid?)
t.toml:3: unknown key server.version (did you mean identity.version?)`,
		},
		{
			name:  "unknown table reported once",
			input: "[identiy]\nnsid = \"x\"\nid = \"y\"\n[server]\nworkers = 1\n",
			want:  `t.toml:1: unknown key identiy (did you mean identity?)`,
		},
		{
			name:  "short keys are not near misses of everything",
			input: "[identity]\nx = 1\n",
			want:  `t.toml:2: unknown key identity.x`,
		},
		{
			name:  "zone and signing keys",
			input: "[[zone]]\norigin = 1\nfile = \"a\"\n[zone.signing]\nkeydir = \"k\"\nnsec3 = \"yes\"\nzsk-lifetime = 90\n",
			want: `t.toml:2: zone.origin: want a string, got an integer
t.toml:5: unknown key zone.signing.keydir (did you mean zone.signing.key-dir?)
t.toml:6: zone.signing.nsec3: want true or false, got a string
t.toml:7: zone.signing.zsk-lifetime: want a duration string such as "10s", got an integer`,
		},
		{
			name:  "signing before any zone",
			input: "[zone.signing]\nkey-dir = \"k\"\n",
			want:  `t.toml:1: [zone.signing] comes before any [[zone]] it could belong to`,
		},
		{
			name:  "table header for a list",
			input: "[server.listen]\nx = 1\n",
			want:  `t.toml:1: server.listen: want a list of "host:port" strings, got a table`,
		},
		{
			name:  "zone as a single table",
			input: "[zone]\norigin = \"a\"\n",
			want:  `t.toml:1: zone: want [[zone]] tables, got a table`,
		},
		{
			name:  "array of tables for a table",
			input: "[[server]]\nworkers = 1\n",
			want:  `t.toml:1: server: want a table, got [[server]] tables`,
		},
		{
			name:  "inline tables and dotted keys",
			input: "server = { workers = \"2\", listn = [] }\nidentity.chaos = 1\nzone = [{ origin = \"a\", file = 2 }, 3]\n",
			want: `t.toml:1: server.workers: want an integer, got a string
t.toml:1: unknown key server.listn (did you mean server.listen?)
t.toml:2: identity.chaos: want true or false, got an integer
t.toml:3: zone.file: want a string, got an integer
t.toml:3: zone: want [[zone]] tables, got a list holding an integer`,
		},
		{
			name:  "dotted key through a scalar",
			input: "[server]\nworkers.count = 1\n",
			want:  `t.toml:2: server.workers: want an integer, got a table`,
		},
		{
			name:  "removed key beside a type error",
			input: "[server]\nold-key = 100\nworkers = \"2\"\n",
			want: `t.toml:2: server.old-key was removed: it bounded nothing; delete the line
t.toml:3: server.workers: want an integer, got a string`,
		},
		{
			name:  "integer given a list",
			input: "[server]\nworkers = []\n",
			want:  `t.toml:2: server.workers: want an integer, got a list`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("t.toml", []byte(tt.input))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", c)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestDistance checks the edit distance used for suggestions.
func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"nsid", "nsid", 0}, {"nsdi", "nsid", 1}, {"NSID", "nsid", 0},
		{"workres", "workers", 1}, {"listn", "listen", 1}, {"", "abc", 3},
		{"tcp_idle_timeout", "tcp-idle-timeout", 2}, {"id", "nsid", 2}, {"abc", "ca", 3},
	} {
		if got := distance(tt.a, tt.b); got != tt.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestSchemaCoversConfig checks that every toml-tagged field of Config and
// its tables is in the schema the checks use, so that a field of a new Go
// type is not accepted unchecked.
func TestSchemaCoversConfig(t *testing.T) {
	paths := schemaPaths(schema(), "")
	for _, want := range []string{"server.listen", "server.response-cache", "identity.nsid", "zone.origin", "zone.signing.key-dir", "zone.signing.parent-delay"} {
		if !strings.Contains(strings.Join(paths, " ")+" ", want+" ") {
			t.Errorf("schema lacks %s: %v", want, paths)
		}
	}
	if n, want := len(paths), countTagged(t); n != want {
		t.Errorf("schema has %d keys, the structs %d toml-tagged fields", n, want)
	}
}

// schemaPaths lists the dotted path of every key under t, tables included,
// in the structs' field order.
func schemaPaths(t *key, path string) []string {
	var paths []string
	for _, k := range t.keys {
		p := join(path, k.name)
		paths = append(paths, p)
		paths = append(paths, schemaPaths(k, p)...)
	}
	return paths
}

// countTagged counts the toml-tagged fields of Config and of the structs
// in it, by reflection independent of tableKeys.
func countTagged(t *testing.T) int {
	t.Helper()
	var count func(reflect.Type) int
	count = func(st reflect.Type) int {
		n := 0
		for i := range st.NumField() {
			f := st.Field(i)
			if tag := f.Tag.Get("toml"); tag == "" || tag == "-" {
				continue
			}
			n++
			ft := f.Type
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && ft != durationType {
				n += count(ft)
			}
		}
		return n
	}
	return count(reflect.TypeFor[Config]())
}
