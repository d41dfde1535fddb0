package difftest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/peer"
)

// policyCases are zones with one questionable construct each, after a
// common head (SOA, apex NS and its address). Whether a server loads such
// a zone is policy, so Knot's choice is the reference like everywhere in
// this package; the comment on each says what the RFCs say.
func policyCases() []struct{ name, body string } {
	return []struct{ name, body string }{
		// Control: a delegation with its glue (RFC 1034 section 4.2.1).
		{"glue-below-cut", "sub NS ns.sub\nns.sub A 192.0.2.2\n"},
		// Non-glue data below a cut is occluded: the names below a cut
		// belong to the child zone (RFC 1034 section 4.2.1), yet such
		// leftovers are common in real zone files.
		{"data-below-cut", "sub NS ns.sub\nns.sub A 192.0.2.2\nwww.sub TXT \"occluded\"\n"},
		// RFC 6672 section 2.4: "Resource records MUST NOT exist at any
		// subdomain of the owner of a DNAME RR."
		{"data-below-dname", "d DNAME target.example.\nx.d A 192.0.2.9\n"},
		// RFC 2181 section 10.1: a CNAME may not coexist with other data.
		{"cname-and-other", "x CNAME www\nx A 192.0.2.3\nwww A 192.0.2.4\n"},
		{"two-cnames", "x CNAME a\nx CNAME b\na A 192.0.2.5\nb A 192.0.2.6\n"},
		// RFC 6672 section 2.4: no CNAME and DNAME at one owner.
		{"cname-and-dname", "x CNAME www\nx DNAME target.example.\nwww A 192.0.2.4\n"},
		// A record outside the origin: Knot ignores it with a warning.
		{"out-of-zone", "foo.other.example. A 192.0.2.7\n"},
		// Identical records are one record (RFC 2181 section 5).
		{"duplicate-records", "x A 192.0.2.8\nx A 192.0.2.8\n"},
		// RFC 2181 section 5.2: differing TTLs in an RRset are deprecated
		// (a server treats them as the minimum) but not fatal.
		{"ttl-mismatch", "x 60 A 192.0.2.10\nx 120 A 192.0.2.11\n"},
		// A wildcard owning a DNAME (RFC 6672 section 2.4 does not forbid
		// it, RFC 4592 section 4.4 discusses it).
		{"wildcard-dname", "*.w DNAME target.example.\n"},
	}
}

// knotLoads reports whether knotd loads the zone file: it starts knotd and
// waits for either an authoritative SOA answer or a load error in its log.
func knotLoads(t *testing.T, knotd, origin, file string) (bool, string, *server) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "db"), 0o755); err != nil {
		t.Fatal(err)
	}
	var loaded bool
	var logText string
	s := launch(t, "knot", origin, nil, func(port int) (*exec.Cmd, error) {
		conf := peer.KnotServer(dir, []string{fmt.Sprintf("127.0.0.1@%d", port)}, "notice") + fmt.Sprintf(`zone:
  - domain: %s
    file: %q
    zonefile-sync: -1
    journal-content: none
`, origin, file)
		path := filepath.Join(dir, "knot.conf")
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			return nil, fmt.Errorf("write knot.conf: %w", err)
		}
		return exec.Command(knotd, "-c", path), nil
	}, launchNoWait)
	// The wait ends early on a load error or on knotd exiting; its bound
	// is readyTimeout, since a zone that loads slowly on a busy machine
	// must not count as refused.
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.p.Done():
			return false, s.p.Output(), s
		default:
		}
		logText = s.p.Output()
		if strings.Contains(logText, "failed to load zone") || strings.Contains(logText, "zone event 'load' failed") {
			return false, logText, s
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		r, err := Exchange(ctx, s.addr, Query{Name: origin, Type: dns.TypeSOA, Net: "udp", EDNS: 1232}, 99)
		cancel()
		if err == nil && r.Msg.Rcode == dns.RcodeSuccess && r.Msg.Authoritative {
			loaded = true
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return loaded, s.p.Output(), s
}

// ternRejects returns the zones Knot loads (with a warning, dropping or
// occluding the data) that Tern refuses to load, with the reason. Both
// checks are required of Tern's loader: a zone file whose data cannot be
// served as written is an error to fix, reported with its file:line, not
// a warning to miss.
func ternRejects() map[string]string {
	const parts = `RFC 1034 section 4.2.1: "The data that describes a zone has four major parts: ` +
		`Authoritative data for all nodes within the zone. Data that defines the top node of the zone ` +
		`(...). Data that describes delegated subzones, i.e., cuts around the bottom of the zone. ` +
		`Data that allows access to name servers for subzones (sometimes called "glue" data)."`
	return map[string]string{
		"data-below-cut": parts + " Other data below a cut is none of these.",
		"out-of-zone":    parts + " A name outside the origin is not within the zone.",
	}
}

// TestZoneLoadPolicy compares which questionable zones Tern and Knot
// agree to load. A zone one server serves and the other rejects is a
// difference operators meet on migration, so it fails the test.
func TestZoneLoadPolicy(t *testing.T) {
	knotd := needTool(t, "knotd")
	bin := os.Getenv(ternBinaryEnv)
	if bin == "" {
		t.Fatalf("no tern binary (set %s to use a prebuilt one): %s", ternBinaryEnv, os.Getenv(buildErrorEnv))
	}
	allow, err := LoadAllowlist("allowlist.txt")
	if err != nil {
		t.Fatal(err)
	}
	const origin = "policy.test."
	head := "$ORIGIN policy.test.\n$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 60\n@ NS ns\nns A 192.0.2.1\n"
	for _, c := range policyCases() {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "policy.test.zone")
			if err := os.WriteFile(file, []byte(head+c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			knotOK, knotLog, knot := knotLoads(t, knotd, origin, file)
			out, err := exec.Command(bin, "check", "zone", file, "--origin", origin).CombinedOutput()
			ternOK := err == nil
			t.Logf("knot loads: %v; tern loads: %v", knotOK, ternOK)
			if why, strict := ternRejects()[c.name]; strict && knotOK && !ternOK {
				// A reviewed, deliberate difference: Tern refuses what
				// Knot loads with a warning.
				inform(t, "Tern rejects on purpose: %s\n%s", why, out)
				return
			}
			if knotOK != ternOK {
				t.Errorf("zone %q: knot loads=%v, tern loads=%v\n--- zone ---\n%s--- tern check ---\n%s--- knot log ---\n%s",
					c.name, knotOK, ternOK, c.body, out, tail(knotLog, 800))
				return
			}
			if !knotOK {
				return
			}
			// Both serve it: their answers must agree too, e.g. on the
			// TTL of an RRset whose records disagree.
			z, err := LoadZone(file, origin)
			if err != nil {
				t.Fatal(err)
			}
			qs := Generate([]*Zone{z})
			ctx, cancel := context.WithTimeout(context.Background(), queryBudget)
			defer cancel()
			tern := startTern(t, []*Zone{z})
			rep := compareOutcomes("knot", "tern", qs, runQueries(ctx, knot, qs), runQueries(ctx, tern, qs), allow)
			if len(rep.items) > 0 {
				t.Errorf("zone %q: Tern answers differ from Knot's:\n%s%s", c.name, rep.summary(), rep.details(maxShown(10)))
			}
		})
	}
}
