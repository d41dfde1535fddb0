package peer

import (
	"fmt"
	"path/filepath"
	"strings"
)

// KnotServer returns the server:, database: and log: clauses of a test
// knot.conf: one worker of each kind, dir as the run directory, the
// database (timers, journal) in dir/db, the log on stderr at logLevel
// (info, notice...) for the test's output. listen holds the addresses as
// Knot writes them (ip@port); extra are further server: lines ("name:
// value"). The key:, remote:, acl:, template: and zone: clauses follow in
// the caller's text.
func KnotServer(dir string, listen []string, logLevel string, extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server:\n    rundir: %q\n    listen: [%s]\n    udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n",
		dir, strings.Join(listen, ", "))
	for _, line := range extra {
		fmt.Fprintf(&b, "    %s\n", line)
	}
	fmt.Fprintf(&b, "database:\n    storage: %q\nlog:\n  - target: stderr\n    any: %s\n", filepath.Join(dir, "db"), logLevel)
	return b.String()
}
