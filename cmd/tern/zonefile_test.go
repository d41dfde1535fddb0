package main

import (
	"path/filepath"
	"testing"
)

// TestSecondaryFile: a secondary added at run time (tern ctl zone-add,
// a catalog's member) keeps its copy in the data directory whatever its
// name: a catalog producer names the members, and a name holding '/'
// ("/etc/cron.d/x.", a label may hold any octet) once made the copy's
// path absolute, so that the transfer wrote, and the member's removal
// deleted, a file anywhere.
func TestSecondaryFile(t *testing.T) {
	dir := "/var/lib/tern"
	for _, c := range []struct{ origin, file, want string }{
		{"example.com.", "", "/var/lib/tern/example.com.zone"},
		{".", "", "/var/lib/tern/.zone"},
		{"/etc/cron.d/x.", "", "/var/lib/tern/%2fetc%2fcron.d%2fx.zone"},
		{"a/../../b.", "", "/var/lib/tern/a%2f..%2f..%2fb.zone"},
		{"a\\032b.", "", "/var/lib/tern/a%5c032b.zone"},
		{"example.com.", "copy.db", "/var/lib/tern/copy.db"},
		{"example.com.", "/srv/copy.db", "/srv/copy.db"},
	} {
		got := secondaryFile(dir, c.origin, c.file)
		if got != c.want {
			t.Errorf("secondaryFile(%q, %q) = %q, want %q", c.origin, c.file, got, c.want)
		}
		if c.file == "" && filepath.Dir(got) != dir {
			t.Errorf("secondaryFile(%q) = %q: outside %s", c.origin, got, dir)
		}
	}
}
