package peer

import (
	"fmt"
	"path/filepath"
	"strings"
)

// NamedOptions returns the options and controls clauses of a test
// named.conf (BIND 9): dir as the working directory (journals, keys,
// pid file), listening on ip port port only, no recursion, no
// validation, no interface scan, no control channel; extra are further
// option lines ("notify explicit;"). The key, server and zone clauses
// follow in the caller's text. Run it with named -g -n 1 -c FILE.
func NamedOptions(dir, ip string, port int, extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "options {\n  directory %q;\n  pid-file %q;\n  session-keyfile %q;\n  managed-keys-directory %q;\n",
		dir, filepath.Join(dir, "named.pid"), filepath.Join(dir, "session.key"), dir)
	fmt.Fprintf(&b, "  listen-on port %d { %s; };\n  listen-on-v6 { none; };\n  recursion no;\n  dnssec-validation no;\n  automatic-interface-scan no;\n", port, ip)
	for _, line := range extra {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	b.WriteString("};\ncontrols { };\n")
	return b.String()
}
