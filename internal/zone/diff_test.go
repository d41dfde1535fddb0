package zone

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// rrText is a record in presentation format, tabs as single spaces.
func rrText(t testing.TB, r RR) string {
	t.Helper()
	rr, err := r.Unpack()
	if err != nil {
		t.Fatalf("unpacking %x %x: %v", r.Owner, r.Tail, err)
	}
	return strings.Join(strings.Fields(rr.String()), " ")
}

func rrTexts(t testing.TB, rs []RR) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = rrText(t, r)
	}
	return out
}

// diffZone compiles head with serial and body, failing the test on error.
func diffZone(t testing.TB, serial int, body string) *Zone {
	t.Helper()
	text := fmt.Sprintf("$ORIGIN example.test.\n$TTL 300\n@ SOA ns1 host %d 2 3 4 60\n@ NS ns1\nns1 A 192.0.2.1\n", serial) + body
	recs, err := Parse(strings.NewReader(text), "t.zone", "example.test.")
	if err != nil {
		t.Fatal(err)
	}
	z, err := Compile("example.test.", recs)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// TestCompare: the records each change deletes and adds, in canonical
// order, with the two SOAs apart.
func TestCompare(t *testing.T) {
	const sig = " 13 3 300 20360101000000 20260101000000 4209 example.test. SZKwtjjNi2CWDwYjWtIkOL0l/MamtnsG9I2MNyPJoFctVX42Z6brJUl6t1umEvBm\n"
	tests := []struct {
		name       string
		old, new   string
		del, added []string
	}{
		{"nothing but the serial", "www A 192.0.2.7\n", "www A 192.0.2.7\n", nil, nil},
		{"address changed", "www A 192.0.2.7\n", "www A 192.0.2.8\n",
			[]string{"www.example.test. 300 IN A 192.0.2.7"}, []string{"www.example.test. 300 IN A 192.0.2.8"}},
		{"TTL changed", "www A 192.0.2.7\n", "www 60 A 192.0.2.7\n",
			[]string{"www.example.test. 300 IN A 192.0.2.7"}, []string{"www.example.test. 60 IN A 192.0.2.7"}},
		{"one record of a set", "www A 192.0.2.7\nwww A 192.0.2.8\nwww AAAA 2001:db8::1\n", "www A 192.0.2.8\nwww AAAA 2001:db8::1\nwww A 192.0.2.9\n",
			[]string{"www.example.test. 300 IN A 192.0.2.7"}, []string{"www.example.test. 300 IN A 192.0.2.9"}},
		{"names added and gone, canonical order", "b A 192.0.2.2\nz.a A 192.0.2.3\n", "a A 192.0.2.1\nc.b TXT hi\nB TXT x\n",
			[]string{"z.a.example.test. 300 IN A 192.0.2.3", "b.example.test. 300 IN A 192.0.2.2"},
			[]string{"a.example.test. 300 IN A 192.0.2.1", "b.example.test. 300 IN TXT \"x\"", "c.b.example.test. 300 IN TXT \"hi\""}},
		{"large set, one record changed", largeSet(40, -1), largeSet(40, 17),
			[]string{"big.example.test. 300 IN A 10.0.0.17"}, nil},
		{"apex data beside the SOA", "@ MX 10 ns1\n", "@ MX 20 ns1\n",
			[]string{"example.test. 300 IN MX 10 ns1.example.test."}, []string{"example.test. 300 IN MX 20 ns1.example.test."}},
		{"signature of the SOA and of a set", "@ RRSIG SOA" + sig + "www A 192.0.2.7\nwww RRSIG A" + sig,
			"@ RRSIG SOA" + strings.Replace(sig, "2026", "2027", 1) + "www A 192.0.2.7\n",
			[]string{"example.test. 300 IN RRSIG SOA 13 3 300 20360101000000 20260101000000 4209 example.test. SZKwtjjNi2CWDwYjWtIkOL0l/MamtnsG9I2MNyPJoFctVX42Z6brJUl6t1umEvBm",
				"www.example.test. 300 IN RRSIG A 13 3 300 20360101000000 20260101000000 4209 example.test. SZKwtjjNi2CWDwYjWtIkOL0l/MamtnsG9I2MNyPJoFctVX42Z6brJUl6t1umEvBm"},
			[]string{"example.test. 300 IN RRSIG SOA 13 3 300 20360101000000 20270101000000 4209 example.test. SZKwtjjNi2CWDwYjWtIkOL0l/MamtnsG9I2MNyPJoFctVX42Z6brJUl6t1umEvBm"}},
		{"NSEC3 owners", "@ NSEC3PARAM 1 0 0 -\n0madr2c2o78cqsoquiejtbeh6gfgb0ff NSEC3 1 1 0 - 2EJ4QFTQOAU0QH4P6SIV4D0OFA1M5GQM NS SOA\n2ej4qftqoau0qh4p6siv4d0ofa1m5gqm NSEC3 1 1 0 - 0MADR2C2O78CQSOQUIEJTBEH6GFGB0FF A\n",
			"@ NSEC3PARAM 1 0 0 -\n0madr2c2o78cqsoquiejtbeh6gfgb0ff NSEC3 1 1 0 - 2EJ4QFTQOAU0QH4P6SIV4D0OFA1M5GQM NS SOA\n2ej4qftqoau0qh4p6siv4d0ofa1m5gqm NSEC3 1 1 0 - 0MADR2C2O78CQSOQUIEJTBEH6GFGB0FF A AAAA\n",
			[]string{"2ej4qftqoau0qh4p6siv4d0ofa1m5gqm.example.test. 300 IN NSEC3 1 1 0 - 0MADR2C2O78CQSOQUIEJTBEH6GFGB0FF A"},
			[]string{"2ej4qftqoau0qh4p6siv4d0ofa1m5gqm.example.test. 300 IN NSEC3 1 1 0 - 0MADR2C2O78CQSOQUIEJTBEH6GFGB0FF A AAAA"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old, new := diffZone(t, 1, tc.old), diffZone(t, 2, tc.new)
			d, err := Compare(old, new)
			if err != nil {
				t.Fatal(err)
			}
			if d.From != 1 || d.To != 2 {
				t.Errorf("serials %d→%d, want 1→2", d.From, d.To)
			}
			if got := rrText(t, d.OldSOA); got != "example.test. 300 IN SOA ns1.example.test. host.example.test. 1 2 3 4 60" {
				t.Errorf("old SOA %s", got)
			}
			if got := rrText(t, d.NewSOA); !strings.Contains(got, " 2 2 3 4 60") {
				t.Errorf("new SOA %s", got)
			}
			if got := rrTexts(t, d.Deleted); !slices.Equal(got, tc.del) {
				t.Errorf("deleted\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.del, "\n"))
			}
			if got := rrTexts(t, d.Added); !slices.Equal(got, tc.added) {
				t.Errorf("added\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.added, "\n"))
			}
			checkApply(t, old, new, d)
		})
	}
}

// largeSet is an A RRset of n records at big, without record skip (-1: none).
func largeSet(n, skip int) string {
	var b strings.Builder
	for i := range n {
		if i != skip {
			fmt.Fprintf(&b, "big A 10.0.0.%d\n", i)
		}
	}
	return b.String()
}

// checkApply asserts that d turns old's records into new's.
func checkApply(t testing.TB, old, new *Zone, d *Diff) {
	t.Helper()
	got, err := d.Apply(old.SortedRecords())
	if err != nil {
		t.Fatal(err)
	}
	if want := new.SortedRecords(); !slices.Equal(rrTexts(t, got), rrTexts(t, want)) {
		t.Fatalf("applied:\n%s\nwant:\n%s", strings.Join(rrTexts(t, got), "\n"), strings.Join(rrTexts(t, want), "\n"))
	}
	// ApplyZone gives the same records, in another order.
	unsorted, err := d.ApplyZone(old)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := rrTexts(t, unsorted), rrTexts(t, got); !slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))) {
		t.Fatalf("ApplyZone:\n%s\nwant:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}

// TestCompareZoneFiles: the difference between the signed test zones and
// the same zones with records changed, applied, gives the changed zone.
func TestCompareZoneFiles(t *testing.T) {
	for _, f := range []string{"nsec3.test", "signed.test"} {
		t.Run(f, func(t *testing.T) {
			text, err := os.ReadFile("../auth/testdata/" + f + ".zone")
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(text)), "\n")
			old := compileLines(t, f, lines)
			// Every third line gone, and its SOA serial bumped.
			var changed []string
			for i, l := range lines {
				if strings.Contains(l, "\tSOA\t") || strings.Contains(l, " SOA ") {
					changed = append(changed, strings.Replace(l, " 1 7200", " 2 7200", 1))
				} else if i%3 != 1 {
					changed = append(changed, l)
				}
			}
			new := compileLines(t, f, changed)
			d, err := Compare(old, new)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Deleted) == 0 {
				t.Fatal("nothing deleted")
			}
			checkApply(t, old, new, d)
			// The other way round adds what was deleted.
			back, err := Compare(new, old)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rrTexts(t, back.Added), rrTexts(t, d.Deleted)) {
				t.Error("the reverse difference does not add what the difference deletes")
			}
		})
	}
}

func compileLines(t testing.TB, origin string, lines []string) *Zone {
	t.Helper()
	recs, err := Parse(strings.NewReader(strings.Join(lines, "\n")+"\n"), "t.zone", origin)
	if err != nil {
		t.Fatal(err)
	}
	z, err := Compile(origin, recs)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// TestMerge: merged consecutive differences equal the difference of the
// first and last version, records added then deleted (or deleted then
// added back) appearing in neither list.
func TestMerge(t *testing.T) {
	a := diffZone(t, 1, "x A 192.0.2.1\ny A 192.0.2.2\n")
	b := diffZone(t, 2, "y A 192.0.2.2\nz A 192.0.2.3\n")
	c := diffZone(t, 3, "x A 192.0.2.1\nw A 192.0.2.4\n")
	ab, _ := Compare(a, b)
	bc, _ := Compare(b, c)
	m, err := Merge(ab, bc)
	if err != nil {
		t.Fatal(err)
	}
	if m.From != 1 || m.To != 3 {
		t.Errorf("merged %d→%d", m.From, m.To)
	}
	want, _ := Compare(a, c)
	sameDiff(t, m, want)
	checkApply(t, a, c, m)
	if _, err := Merge(bc, ab); err == nil {
		t.Error("merged differences that do not follow each other")
	}
}

func sameDiff(t testing.TB, got, want *Diff) {
	t.Helper()
	if g, w := rrTexts(t, got.Deleted), rrTexts(t, want.Deleted); !slices.Equal(g, w) {
		t.Errorf("deleted\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	if g, w := rrTexts(t, got.Added), rrTexts(t, want.Added); !slices.Equal(g, w) {
		t.Errorf("added\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	if string(got.OldSOA.Tail) != string(want.OldSOA.Tail) || string(got.NewSOA.Tail) != string(want.NewSOA.Tail) {
		t.Error("SOAs differ")
	}
}

// TestApplyRejects: a difference applied to a version it does not start
// from is refused, naming the record.
func TestApplyRejects(t *testing.T) {
	a := diffZone(t, 1, "x A 192.0.2.1\n")
	b := diffZone(t, 2, "y A 192.0.2.2\n")
	c := diffZone(t, 1, "y A 192.0.2.2\n")
	d, _ := Compare(a, b)
	_, err := d.Apply(c.SortedRecords())
	if err == nil || !strings.Contains(err.Error(), "deleted record x.example.test.") {
		t.Errorf("applied to the wrong version: %v", err)
	}
	_, err = d.Apply(b.SortedRecords())
	if err == nil || !strings.Contains(err.Error(), "old SOA") {
		t.Errorf("applied to a version with another SOA: %v", err)
	}
	if _, err = d.ApplyZone(c); err == nil || !strings.Contains(err.Error(), "deleted record x.example.test.") {
		t.Errorf("ApplyZone to the wrong version: %v", err)
	}
	if _, err = d.ApplyZone(b); err == nil || !strings.Contains(err.Error(), "old SOA") {
		t.Errorf("ApplyZone to a version with another SOA: %v", err)
	}
	e := diffZone(t, 1, "x A 192.0.2.1\ny A 192.0.2.2\n")
	if _, err = d.ApplyZone(e); err == nil || !strings.Contains(err.Error(), "added record y.example.test.") {
		t.Errorf("ApplyZone adding a record present: %v", err)
	}
}

// FuzzCompare: for three versions a, b, c of a zone (extra lines after a
// common head), Compare(a, b) applied to a gives b, and Merge of a→b and
// b→c equals Compare(a, c).
func FuzzCompare(f *testing.F) {
	f.Add("x A 192.0.2.1\n", "x A 192.0.2.2\n", "x A 192.0.2.1\n")
	f.Add("a TXT one\nb.a MX 1 ns1\n", "*.w A 10.0.0.1\nb.a MX 1 ns1\n", "sub NS ns.sub\nns.sub A 192.0.2.3\n")
	f.Add(largeSet(30, -1), largeSet(30, 3), largeSet(30, 9))
	f.Add("x 10 A 192.0.2.1\n", "x 20 A 192.0.2.1\n", "x 10 A 192.0.2.1\n")
	f.Add("@ NSEC3PARAM 1 0 0 -\n0madr2c2o78cqsoquiejtbeh6gfgb0ff NSEC3 1 1 0 - 2EJ4QFTQOAU0QH4P6SIV4D0OFA1M5GQM NS SOA\n", "", "@ NSEC3PARAM 1 0 0 -\n0madr2c2o78cqsoquiejtbeh6gfgb0ff NSEC3 1 1 0 - 2EJ4QFTQOAU0QH4P6SIV4D0OFA1M5GQM A\n")
	f.Fuzz(func(t *testing.T, x, y, z string) {
		var zs [3]*Zone
		for i, body := range []string{x, y, z} {
			if strings.Contains(body, "$INCLUDE") || strings.Contains(body, "$ORIGIN") {
				return
			}
			text := fmt.Sprintf("$ORIGIN example.test.\n$TTL 300\n@ SOA ns1 host %d 2 3 4 60\n@ NS ns1\nns1 A 192.0.2.1\n", i+1) + body + "\n"
			recs, err := Parse(strings.NewReader(text), "t.zone", "example.test.")
			if err != nil {
				return
			}
			if zs[i], err = Compile("example.test.", recs); err != nil {
				return
			}
		}
		ab, err := Compare(zs[0], zs[1])
		if err != nil {
			t.Fatal(err)
		}
		checkApply(t, zs[0], zs[1], ab)
		bc, err := Compare(zs[1], zs[2])
		if err != nil {
			t.Fatal(err)
		}
		m, err := Merge(ab, bc)
		if err != nil {
			t.Fatal(err)
		}
		ac, err := Compare(zs[0], zs[2])
		if err != nil {
			t.Fatal(err)
		}
		sameDiff(t, m, ac)
		checkApply(t, zs[0], zs[2], m)
	})
}

// bigZone is the shape of the bench generator's big zone (bench/cmd/
// benchtool gen -big n): n A records at n0..n(n-1). With change set, every
// hundredth address differs, every hundredth name is gone and as many new
// ones appear: 3% of the records in the difference.
func bigZone(tb testing.TB, n int, serial int, change bool) *Zone {
	tb.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "$ORIGIN big.test.\n$TTL 3600\n@ IN SOA ns1 hostmaster %d 7200 3600 1209600 3600\n@ IN NS ns1\nns1 IN A 192.0.2.1\n", serial)
	for i := range n {
		switch {
		case change && i%100 == 1:
			fmt.Fprintf(&b, "n%d IN A 10.%d.%d.%d\n", i, (i>>16)&255, (i>>8)&255, (i+1)&255)
		case change && i%100 == 2:
			fmt.Fprintf(&b, "new%d IN A 10.%d.%d.%d\n", i, (i>>16)&255, (i>>8)&255, i&255)
		default:
			fmt.Fprintf(&b, "n%d IN A 10.%d.%d.%d\n", i, (i>>16)&255, (i>>8)&255, i&255)
		}
	}
	z, err := Read(strings.NewReader(b.String()), "big.zone", "big.test.")
	if err != nil {
		tb.Fatal(err)
	}
	return z
}

// BenchmarkCompare: the difference between two versions of a
// 100,000-record zone, 3% of it changed.
func BenchmarkCompare(b *testing.B) {
	old, new := bigZone(b, 100000, 1, false), bigZone(b, 100000, 2, true)
	b.ResetTimer()
	for range b.N {
		d, err := Compare(old, new)
		if err != nil || len(d.Deleted) != 2000 || len(d.Added) != 2000 {
			b.Fatalf("%v: %d deleted, %d added", err, len(d.Deleted), len(d.Added))
		}
	}
}

// TestDigest: the digest is the records', whatever their order in the
// file; a changed record (or TTL) changes it.
func TestDigest(t *testing.T) {
	a := diffZone(t, 1, "x A 192.0.2.1\ny A 192.0.2.2\n")
	b := diffZone(t, 1, "y A 192.0.2.2\nx A 192.0.2.1\n")
	if a.Digest() != b.Digest() {
		t.Error("the same records in another order have another digest")
	}
	for _, body := range []string{"x A 192.0.2.1\ny A 192.0.2.3\n", "x A 192.0.2.1\ny 60 A 192.0.2.2\n", "x A 192.0.2.1\n"} {
		if diffZone(t, 1, body).Digest() == a.Digest() {
			t.Errorf("%q has the digest of another content", body)
		}
	}
}
