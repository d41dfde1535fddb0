package config

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tern-dns/tern/internal/dnssec"
)

// leafPaths lists the dotted path of every key that takes a value (tables
// left out), from the schema Parse checks against.
func leafPaths(t *key, path string) []string {
	var paths []string
	for _, k := range t.keys {
		p := join(path, k.name)
		if k.kind == kindTable || k.kind == kindTables {
			paths = append(paths, leafPaths(k, p)...)
		} else {
			paths = append(paths, p)
		}
	}
	return paths
}

var (
	// docSection matches a section heading of docs/config.md that names
	// a table: "## `[server]`", "## `[[zone]]` (repeatable)".
	docSection = regexp.MustCompile("^## `\\[+([a-z.-]+)\\]+`")
	// docRow matches a table row that documents a key: "| `listen` | ...".
	docRow = regexp.MustCompile("^\\| `([a-z0-9-]+)` \\|")
)

// TestDocsListEveryKey checks that docs/config.md has a row for every key
// Parse accepts, in the section of its table, and none for a key it does
// not accept.
func TestDocsListEveryKey(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	section := ""
	for _, line := range strings.Split(string(data), "\n") {
		if m := docSection.FindStringSubmatch(line); m != nil {
			section = m[1]
		} else if strings.HasPrefix(line, "#") {
			section = ""
		} else if m := docRow.FindStringSubmatch(line); m != nil && section != "" {
			documented = append(documented, section+"."+m[1])
		}
	}
	checkRows(t, "docs/config.md", documented)
}

// arrayIndex matches the index indexLines gives array elements: "[1]".
var arrayIndex = regexp.MustCompile(`\[\d+\]`)

// checkRows wants documented, the keys the key tables of file have rows
// for, to be the keys Parse accepts.
func checkRows(t *testing.T, file string, documented []string) {
	t.Helper()
	keys := leafPaths(schema(), "")
	for _, k := range keys {
		if !slices.Contains(documented, k) {
			t.Errorf("%s: no row for %s", file, k)
		}
	}
	for _, k := range documented {
		if !slices.Contains(keys, k) {
			t.Errorf("%s: a row for %s, which is not a key", file, k)
		}
	}
}

// readmeCell matches the backquoted names of a README key row's first
// cell: "| `server.listen` |", "| `[zone.signing] algorithm`, `nsec3` |".
var readmeCell = regexp.MustCompile("`(\\[+([a-z.-]+)\\]+ )?([a-z0-9.-]+)`")

// TestReadmeListsEveryKey checks that the key table of README.md's
// Configuration section has every key Parse accepts, and no other.
func TestReadmeListsEveryKey(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	inSection := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "#") {
			inSection = line == "### Configuration"
			continue
		}
		first, _, ok := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		if !inSection || !strings.HasPrefix(line, "| `") || !ok {
			continue
		}
		table := ""
		for _, m := range readmeCell.FindAllStringSubmatch(first, -1) {
			if m[2] != "" {
				table = m[2] + "."
			}
			documented = append(documented, table+m[3])
		}
	}
	checkRows(t, "README.md", documented)
}

// commentedKey matches a commented-out key or table header of the example,
// "# id = ...", "# [zone.signing]", and captures it without the "# ".
var commentedKey = regexp.MustCompile(`^# ?((\[+[a-z.-]+\]+)|([a-z0-9-]+ *=.*))$`)

// TestExampleListsEveryKey checks that examples/tern.toml shows every key
// Parse accepts, set or commented out, and that with its commented keys
// put back it still parses, with the documented defaults for signing.
func TestExampleListsEveryKey(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "tern.toml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	// A key shown as the alternative of another ("# instead of file")
	// is shown but left out of what is parsed.
	parsed := make([]string, len(lines))
	for i, line := range lines {
		if m := commentedKey.FindStringSubmatch(line); m != nil {
			lines[i] = m[1]
		}
		if !strings.Contains(line, "# instead of ") {
			parsed[i] = lines[i]
		}
	}
	all := []byte(strings.Join(lines, "\n"))
	c, err := Parse(path, []byte(strings.Join(parsed, "\n")))
	if err != nil {
		t.Fatalf("examples/tern.toml with its commented keys put back: %v", err)
	}
	found := make(map[string]int)
	indexLines(all, found)
	shown := make(map[string]bool)
	for k := range found {
		// "zone[1].signing.key-dir" -> "zone.signing.key-dir"
		shown[arrayIndex.ReplaceAllString(k, "")] = true
	}
	for _, k := range leafPaths(schema(), "") {
		if !shown[k] {
			t.Errorf("examples/tern.toml does not show %s", k)
		}
	}
	// The signing durations shown are the defaults the server applies.
	p := dnssec.DefaultPolicy()
	var sg *Signing
	for _, z := range c.Zones {
		if z.Signing != nil {
			sg = z.Signing
		}
	}
	if sg == nil {
		t.Fatal("examples/tern.toml: no [zone.signing] table")
	}
	if want, err := dnssec.ParseAlgorithm(sg.Algorithm); err != nil || want != p.Algorithm {
		t.Errorf("algorithm %q, default %d", sg.Algorithm, p.Algorithm)
	}
	for _, d := range []struct {
		name      string
		got, want Duration
	}{
		{"zsk-lifetime", sg.ZSKLifetime, Duration{p.ZSKLifetime}},
		{"ksk-lifetime", sg.KSKLifetime, Duration{p.KSKLifetime}},
		{"signature-validity", sg.SignatureValidity, Duration{p.SignatureValidity}},
		{"signature-refresh", sg.SignatureRefresh, Duration{p.SignatureRefresh}},
		{"propagation-delay", sg.PropagationDelay, Duration{p.PropagationDelay}},
		{"parent-delay", sg.ParentDelay, Duration{p.ParentDelay}},
	} {
		if d.got != d.want {
			t.Errorf("examples/tern.toml: %s = %s, default %s", d.name, d.got.Duration, d.want.Duration)
		}
	}
}
