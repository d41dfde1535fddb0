package peer

import (
	"fmt"
	"path/filepath"
	"strings"
)

// NSDServer returns the server: and remote-control: clauses of an
// nsd.conf that runs NSD in the foreground as the test's own user: one
// server process, no chroot, no database, its state files (pid, xfrd
// state, zone list, transfers) in dir, relative zone file names under
// zonesdir, remote control off. listen holds the addresses as NSD writes
// them (ip@port); extra are further server: lines ("name: value"), such
// as the verbosity or rate limits a test wants. The zone: and key:
// clauses follow in the caller's text.
func NSDServer(dir, zonesdir string, listen []string, extra ...string) string {
	var b strings.Builder
	b.WriteString("server:\n")
	for _, a := range listen {
		fmt.Fprintf(&b, "    ip-address: %s\n", a)
	}
	fmt.Fprintf(&b, `    server-count: 1
    username: ""
    chroot: ""
    zonesdir: %q
    pidfile: %q
    database: ""
    xfrdfile: %q
    xfrdir: %q
    zonelistfile: %q
`, zonesdir, filepath.Join(dir, "nsd.pid"), filepath.Join(dir, "xfrd.state"), dir, filepath.Join(dir, "zone.list"))
	for _, line := range extra {
		fmt.Fprintf(&b, "    %s\n", line)
	}
	b.WriteString("remote-control:\n    control-enable: no\n")
	return b.String()
}
