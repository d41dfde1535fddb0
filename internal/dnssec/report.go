package dnssec

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/miekg/dns"
)

// WriteKeyReport prints every key in dir (of zone origin, or of all zones
// when origin is empty) and, where a key manager state file exists, each
// key's rollover state and timings relative to now. A directory with no
// keys (for origin, when given) is an error.
func WriteKeyReport(w io.Writer, dir, origin string, now time.Time) error {
	zones, err := zonesInDir(dir)
	if err != nil {
		return err
	}
	if origin != "" {
		origin = dns.CanonicalName(dns.Fqdn(origin))
		if !slices.Contains(zones, origin) {
			return noKeysError(dir, origin)
		}
		zones = []string{origin}
	}
	if len(zones) == 0 {
		return noKeysError(dir, origin)
	}
	for _, z := range zones {
		if err := writeZoneReport(w, dir, z, now); err != nil {
			return err
		}
	}
	return nil
}

// zonesInDir lists the zones that have key files or state files in dir.
func zonesInDir(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read key dir: %w", err)
	}
	seen := map[string]bool{}
	for _, e := range ents {
		n := e.Name()
		var zone string
		switch {
		case strings.HasPrefix(n, "K") && strings.HasSuffix(n, ".key"):
			i := strings.Index(n, "+")
			if i < 0 {
				continue
			}
			zone = n[1:i]
		case strings.HasSuffix(n, stateSuffix):
			zone = strings.TrimSuffix(n, stateSuffix)
		default:
			continue
		}
		seen[dns.CanonicalName(dns.Fqdn(zone))] = true
	}
	var zones []string
	for z := range seen {
		zones = append(zones, z)
	}
	sort.Strings(zones)
	return zones, nil
}

func writeZoneReport(w io.Writer, dir, zone string, now time.Time) error {
	st, err := LoadState(dir, zone)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "zone %s\n", zone)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if st == nil {
		keys, err := LoadKeys(dir, zone)
		if err != nil {
			return err
		}
		fmt.Fprintln(tw, "  TAG\tROLE\tALGORITHM\tFILE\tSTATE")
		for _, k := range keys {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\tunmanaged (offline signing)\n", k.Tag(), role(k.IsKSK()),
				dns.AlgorithmToString[k.DNSKEY.Algorithm], filepath.Join(dir, k.Base))
		}
		return tw.Flush()
	}
	fmt.Fprintln(tw, "  TAG\tROLE\tALGORITHM\tSTATE\tPUBLISH\tACTIVE\tRETIRE\tREMOVE\tDS")
	for _, k := range st.Keys {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.Tag, role(k.KSK),
			dns.AlgorithmToString[k.Algorithm], k.Phase(now), fmtTime(k.Publish, now),
			fmtTime(k.Activate, now), fmtTime(k.Retire, now), fmtTime(k.Remove, now), dsState(k, now))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range st.Describe(now) {
		fmt.Fprintf(w, "  %s\n", line)
	}
	if st.Serial != nil {
		fmt.Fprintf(w, "  last served SOA serial %d\n", *st.Serial)
	}
	return nil
}

func role(ksk bool) string {
	if ksk {
		return "KSK"
	}
	return "ZSK"
}

func fmtTime(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(now).Round(time.Second)
	rel := "in " + fmtDur(d)
	if d < 0 {
		rel = fmtDur(-d) + " ago"
	}
	return t.UTC().Format("2006-01-02T15:04Z") + " (" + rel + ")"
}

// fmtDur prints long durations in days and hours, which reads better for
// key lifetimes than Go's hours-only form.
func fmtDur(d time.Duration) string {
	if d < 48*time.Hour {
		return d.String()
	}
	days := d / (24 * time.Hour)
	h := (d - days*24*time.Hour).Round(time.Hour) / time.Hour
	if h == 0 {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%dh", days, h)
}
