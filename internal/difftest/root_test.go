package difftest

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestDifferentialRoot serves a small root zone alone (referrals with
// in- and out-of-bailiwick glue, secure and insecure delegations, the root
// servers' glue below root-servers.net.) and compares Tern with Knot,
// first unsigned, then signed with DO on every EDNS query.
func TestDifferentialRoot(t *testing.T) {
	root, err := RootZone("testdata")
	if err != nil {
		t.Fatal(err)
	}
	signedPath, err := filepath.Abs(filepath.Join("testdata", "signed", "root.signed"))
	if err != nil {
		t.Fatal(err)
	}
	signed, err := LoadZone(signedPath, ".")
	if err != nil {
		t.Fatal(err)
	}
	allow, err := LoadAllowlist("allowlist.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		zone *Zone
		do   bool
	}{{"unsigned", root, false}, {"signed", signed, true}} {
		t.Run(c.name, func(t *testing.T) {
			qs := Generate([]*Zone{root})
			if c.do {
				for i := range qs {
					qs[i].DO = qs[i].EDNS != 0
				}
			}
			zones := []*Zone{c.zone}
			ctx, cancel := context.WithTimeout(context.Background(), queryBudget)
			defer cancel()
			knot := startKnot(t, zones)
			knotOut := runQueries(ctx, knot, qs)
			checkReference(t, "knot", qs, knotOut)
			if compareNSD(t) {
				nsd := startNSD(t, zones)
				nk := compareOutcomes("knot", "nsd", qs, knotOut, runQueries(ctx, nsd, qs), nil)
				inform(t, "information only (NSD is not the reference):\n%s", nk.summary())
			}
			tern := startTern(t, zones)
			start := time.Now()
			ternOut := runQueries(ctx, tern, qs)
			inform(t, "tern: %d queries in %v", len(qs), time.Since(start).Round(time.Millisecond))
			tk := compareOutcomes("knot", "tern", qs, knotOut, ternOut, allow)
			if len(tk.items) > 0 {
				t.Errorf("Tern differs from Knot on the root zone:\n%s%s", tk.summary(), tk.details(maxShown(30)))
			} else {
				inform(t, "%s", tk.summary())
			}
		})
	}
}
