package main

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/validator"
)

// readDir returns every file under dir, by path relative to it.
func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestResGen generates a small hierarchy twice and checks that the two are
// byte for byte the same, that every question of the query files has an
// answer in the zones, that every server address is loopback within the
// block, and that the mix is skewed the way a Zipf draw is.
func TestResGen(t *testing.T) {
	args := []string{"-zones", "12", "-hosts", "20", "-hits", "50", "-mix", "3000", "-cold", "100"}
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if err := runResGen(append([]string{"-out", d}, args...)); err != nil {
			t.Fatal(err)
		}
	}
	fa, fb := readDir(t, a), readDir(t, b)
	if len(fa) != len(fb) {
		t.Fatalf("%d files, then %d", len(fa), len(fb))
	}
	for name, text := range fa {
		// paths in the argument files name the directory
		if strings.ReplaceAll(fb[name], b, a) != text {
			t.Errorf("%s differs between two generations", name)
		}
	}

	// Owners and types of every zone, and the address of every A record
	// that is a name server's (ns*, a.root).
	have := map[string]bool{}
	block := func(s string) bool {
		ad, err := netip.ParseAddr(s)
		lo, hi := netip.MustParseAddr("127.0.0.40"), netip.MustParseAddr("127.0.0.79")
		return err == nil && ad.Compare(lo) >= 0 && ad.Compare(hi) <= 0
	}
	zones := 0
	for name, text := range fa {
		if !strings.HasPrefix(name, "zones/") {
			continue
		}
		zones++
		origin := ""
		for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
			f := strings.Fields(l)
			if f[0] == "$ORIGIN" {
				origin = f[1]
				continue
			}
			if strings.HasPrefix(f[0], "$") {
				continue
			}
			owner := f[0]
			switch {
			case owner == "@":
				owner = origin
			case !strings.HasSuffix(owner, "."):
				owner += "." + origin
			}
			typ, data := f[2], f[len(f)-1]
			have[owner+" "+typ] = true
			if typ == "A" && (strings.HasPrefix(owner, "ns") || strings.HasPrefix(owner, "a.root")) && !block(data) {
				t.Errorf("%s: name server %s at %s, outside 127.0.0.40-79", name, owner, data)
			}
		}
	}
	// root, servers., four TLDs, eight providers, the wildcard zone, 12 SLDs
	if zones != 1+1+4+resProviders+1+12 {
		t.Errorf("%d zone files", zones)
	}
	answers := func(q string) bool {
		f := strings.Fields(q)
		return have[f[0]+" "+f[1]] || have[f[0]+" CNAME"]
	}
	for _, qf := range []string{"res-hits.txt", "res-mix.txt"} {
		lines := strings.Split(strings.TrimSpace(fa[qf]), "\n")
		for _, q := range lines {
			if !answers(q) {
				t.Errorf("%s: %q has no answer in the zones", qf, q)
				break
			}
		}
	}
	hits := strings.Split(strings.TrimSpace(fa["res-hits.txt"]), "\n")
	if len(hits) != 50 || len(distinct(hits)) != 50 {
		t.Errorf("res-hits: %d lines, %d distinct; want 50 distinct", len(hits), len(distinct(hits)))
	}
	// Zipf with s = 1 over 240 questions: the most popular takes about
	// 1/H(240) = 16% of the draws, and the draws cover far fewer than 240
	// distinct questions with their median count far below the top's.
	mix := strings.Split(strings.TrimSpace(fa["res-mix.txt"]), "\n")
	counts := map[string]int{}
	top := 0
	for _, q := range mix {
		counts[q]++
		top = max(top, counts[q])
	}
	if share := float64(top) / float64(len(mix)); share < 0.12 || share > 0.21 {
		t.Errorf("res-mix: the most asked question has %.1f%% of the draws, want about 16%%", 100*share)
	}
	cold := strings.Split(strings.TrimSpace(fa["res-cold.txt"]), "\n")
	if len(distinct(cold)) != 100 {
		t.Errorf("res-cold: %d distinct names of 100", len(distinct(cold)))
	}
	for _, q := range cold {
		if !strings.HasSuffix(strings.Fields(q)[0], "."+resWildZone) {
			t.Fatalf("res-cold: %q is not under %s", q, resWildZone)
		}
	}
	hints := fa["root.hints"]
	if !strings.Contains(hints, "127.0.0.40") || strings.Count(hints, "\n") != 2 {
		t.Errorf("root.hints:\n%s", hints)
	}
	for _, auth := range []string{"root", "tld", "sld"} {
		argv := strings.Split(strings.TrimSpace(fa["auth-"+auth+".args"]), "\n")
		for i := 0; i+1 < len(argv); i += 2 {
			switch argv[i] {
			case "--listen":
				if !block(strings.TrimSuffix(argv[i+1], ":53")) {
					t.Errorf("auth-%s listens on %s", auth, argv[i+1])
				}
			case "--zone":
				if _, err := os.Stat(argv[i+1][strings.IndexByte(argv[i+1], '=')+1:]); err != nil {
					t.Errorf("auth-%s: %v", auth, err)
				}
			default:
				t.Errorf("auth-%s: unexpected argument %q", auth, argv[i])
			}
		}
	}
}

// TestColdFresh: cold query files of different seeds share no name.
func TestColdFresh(t *testing.T) {
	d := t.TempDir()
	var files [2][]string
	for i := range files {
		p := filepath.Join(d, "cold.txt")
		if err := runColdQ([]string{"-out", p, "-n", "500", "-seed", string(rune('1' + i))}); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		files[i] = strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	seen := distinct(files[0])
	for _, q := range files[1] {
		if seen[q] {
			t.Fatalf("%q in the files of both seeds", q)
		}
	}
}

// TestResGenRefuses: the hierarchy stays on loopback.
func TestResGenRefuses(t *testing.T) {
	for _, base := range []string{"10.0.0.40", "127.255.255.250", "::1"} {
		if err := runResGen([]string{"-out", t.TempDir(), "-base", base}); err == nil {
			t.Errorf("-base %s accepted", base)
		}
	}
}

func distinct(lines []string) map[string]bool {
	m := map[string]bool{}
	for _, l := range lines {
		m[l] = true
	}
	return m
}

// TestResGenSign: with -sign every zone of the hierarchy is signed and its
// keys validate against the DS its parent publishes (signed too), the
// root's against root.key, the resolvers' trust anchor.
func TestResGenSign(t *testing.T) {
	d := t.TempDir()
	if err := runResGen([]string{"-out", d, "-zones", "6", "-hosts", "4", "-hits", "5", "-mix", "5", "-cold", "5", "-sign"}); err != nil {
		t.Fatal(err)
	}
	zones := map[string][]dns.RR{}
	for name, text := range readDir(t, filepath.Join(d, "zones")) {
		zp := dns.NewZoneParser(strings.NewReader(text), "", name)
		for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
			zones["file:"+name] = append(zones["file:"+name], rr)
		}
		if err := zp.Err(); err != nil {
			t.Fatal(err)
		}
	}
	for k, rrs := range zones {
		if strings.HasPrefix(k, "file:") {
			for _, rr := range rrs {
				if soa, ok := rr.(*dns.SOA); ok {
					zones[soa.Hdr.Name] = rrs
				}
			}
			delete(zones, k)
		}
	}
	if len(zones) != 1+4+1+8+1+6 {
		t.Fatalf("%d zones", len(zones))
	}
	anchor, err := os.ReadFile(filepath.Join(d, "root.key"))
	if err != nil {
		t.Fatal(err)
	}
	v := validator.New(validator.Options{})
	for origin, rrs := range zones {
		var keys []*dns.DNSKEY
		var sigs []*dns.RRSIG
		for _, rr := range rrs {
			switch rr := rr.(type) {
			case *dns.DNSKEY:
				keys = append(keys, rr)
			case *dns.RRSIG:
				if rr.TypeCovered == dns.TypeDNSKEY {
					sigs = append(sigs, rr)
				}
			}
		}
		parentText := string(anchor)
		if origin != "." {
			parent := "."
			if off, end := dns.NextLabel(origin, 0); !end {
				parent = origin[off:]
			}
			var b strings.Builder
			for _, rr := range zones[parent] {
				fmt.Fprintln(&b, rr.String())
			}
			parentText = b.String()
		}
		var ds []*dns.DS
		zp := dns.NewZoneParser(strings.NewReader(parentText), "", "")
		for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
			if d, ok := rr.(*dns.DS); ok && strings.EqualFold(d.Hdr.Name, origin) {
				ds = append(ds, d)
			}
		}
		var work validator.Work
		if r, _ := v.VerifyKeys(origin, keys, sigs, ds, &work); !r.Secure() || len(ds) != 1 {
			t.Errorf("%s: %d DS, keys %v (%s)", origin, len(ds), r.Security, r.Text)
		}
	}
}

// TestResolverTable: resolver.tsv rows, with and without the caches'
// columns (an older file), give the table's hit rate, bytes per RRset and
// the caches' own bytes per RRset; "-" stays "–".
func TestResolverTable(t *testing.T) {
	dir := t.TempDir()
	tsv := filepath.Join(dir, "resolver.tsv")
	text := resHeader + "\n" +
		"res-mix\tdnsperf\ttern\t1\t1000\t1000\t10000\t12000\t1000\t700\t2048\t10\t600\t1024000\n" +
		"res-mix\tdnsperf\tunbound\t1\t1000\t1000\t10000\t11000\t1000\t750\t1024\n" +
		"res-mix\tdnsperf\tpdnsrec\t1\t1000\t1000\t10000\t11000\t-\t-\t-\t-\t-\t-\n"
	if err := os.WriteFile(tsv, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := readResRows(tsv)
	if err != nil || len(rows) != 3 {
		t.Fatalf("readResRows: %d rows, %v", len(rows), err)
	}
	var b strings.Builder
	if err := resolverTable(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, rows, ""); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		// 2000 kB of growth over 2048 RRsets: 1000 bytes each; 1024000 own bytes: 500.
		"| res-mix | dnsperf | tern | 1 | 1,000 | – | 70.0% | – | 2.0 | – | 2048 | 1000 | 10 | 600 | 500 |",
		"| res-mix | dnsperf | unbound | 1 | 1,000 | – | 75.0% | – | 1.0 | – | 1024 | 1000 | – | – | – |",
		"| res-mix | dnsperf | pdnsrec | 1 | 1,000 | – | – | – | 1.0 | – | – | – | – | – | – |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks\n%s\n in\n%s", want, out)
		}
	}
}
