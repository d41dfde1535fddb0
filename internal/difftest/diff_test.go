package difftest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/peer"
)

// outcome is one server's answer (or failure) for one query.
type outcome struct {
	res Result
	err error
	// dropped is set instead of err when a malformed (mutated) query got
	// no answer (Exchange's ErrDropped): silence is a legitimate reply to
	// a message a server cannot parse, and is compared like any other
	// answer.
	dropped bool
}

// runQueries sends every query to s with a few concurrent workers and
// returns the outcomes in query order. The worker count and the context's
// deadline bound the load on the shared machine.
func runQueries(ctx context.Context, s *server, qs []Query) []outcome {
	const workers = 4
	out := make([]outcome, len(qs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				// IDs vary per query so a stale answer cannot match.
				r, err := Exchange(ctx, s.addr, qs[i], uint16(i*7919+1))
				out[i] = outcome{res: r, err: err}
				if errors.Is(err, ErrDropped) {
					out[i] = outcome{dropped: true}
				}
			}
		}()
	}
	for i := range qs {
		if ctx.Err() != nil {
			out[i] = outcome{err: fmt.Errorf("not sent: %w", ctx.Err())}
			continue
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// mismatch is one query on which two servers differ.
type mismatch struct {
	q     Query
	diffs []Difference
	// want and got are the two normalized answers (zero if an error).
	want, got Response
	errText   string
}

// report collects the mismatches of one server pair.
type report struct {
	ref, test string
	items     []mismatch
	// allowed counts, by allow-list entry, the queries whose differences
	// the entries excused.
	allowed map[string]int
}

// compareOutcomes compares test against ref for every query. Differences
// an allow-list entry names are counted, not reported; allow may be nil.
func compareOutcomes(refName, testName string, qs []Query, ref, test []outcome, allow *Allowlist) *report {
	rep := &report{ref: refName, test: testName, allowed: map[string]int{}}
	for i, q := range qs {
		r, g := ref[i], test[i]
		if r.dropped || g.dropped {
			if r.dropped != g.dropped && r.err == nil && g.err == nil {
				d := Difference{Field: "dropped", Want: describeOutcome(r), Got: describeOutcome(g)}
				if allow != nil {
					if e := allow.Allowed(q, d, Response{}, Response{}); e != nil {
						rep.allowed[e.ID]++
						continue
					}
				}
				rep.items = append(rep.items, mismatch{q: q, diffs: []Difference{d}})
			}
			continue
		}
		if r.err != nil || g.err != nil {
			m := mismatch{q: q}
			switch {
			case r.err != nil && g.err != nil:
				continue // both failed: reported by checkReference
			case r.err != nil:
				m.diffs = []Difference{{Field: "error", Want: "error: " + r.err.Error(), Got: "an answer"}}
			default:
				m.diffs = []Difference{{Field: "error", Want: "an answer", Got: "error: " + g.err.Error()}}
			}
			rep.items = append(rep.items, m)
			continue
		}
		want, got := Normalize(r.res.Msg), Normalize(g.res.Msg)
		diffs := Compare(want, got)
		if err := CheckSize(q, g.res); err != nil {
			diffs = append(diffs, Difference{Field: "size", Want: "within limit", Got: err.Error()})
		}
		// A query passes only if an entry excuses every one of its
		// differences; otherwise all of them are shown, so an excused
		// section cannot hide context for the one that is not.
		used := map[string]bool{}
		excused := true
		for _, d := range diffs {
			e := (*AllowEntry)(nil)
			if allow != nil {
				e = allow.Allowed(q, d, want, got)
			}
			if e == nil {
				excused = false
				break
			}
			used[e.ID] = true
		}
		if excused {
			for id := range used {
				rep.allowed[id]++
			}
			continue
		}
		rep.items = append(rep.items, mismatch{q: q, diffs: diffs, want: want, got: got})
	}
	return rep
}

// describeOutcome renders an outcome in a few words for a diff.
func describeOutcome(o outcome) string {
	if o.dropped {
		return "no answer (dropped)"
	}
	if o.err != nil {
		return "error: " + o.err.Error()
	}
	m := o.res.Msg
	return fmt.Sprintf("an answer (%s, flags %q)", dns.RcodeToString[m.Rcode], flagString(m))
}

// summary counts mismatches by field and by category/field.
func (rep *report) summary() string {
	byField := map[string]int{}
	byCat := map[string]int{}
	for _, m := range rep.items {
		for _, d := range m.diffs {
			byField[d.Field]++
			byCat[m.q.Category+"/"+d.Field]++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s vs %s: %d queries differ\n", rep.test, rep.ref, len(rep.items))
	b.WriteString("  by field:")
	for _, k := range slices.Sorted(maps.Keys(byField)) {
		fmt.Fprintf(&b, " %s=%d", k, byField[k])
	}
	b.WriteString("\n  by category/field:")
	for _, k := range slices.Sorted(maps.Keys(byCat)) {
		fmt.Fprintf(&b, " %s=%d", k, byCat[k])
	}
	if len(rep.allowed) > 0 {
		b.WriteString("\n  allowed by allow-list:")
		for _, k := range slices.Sorted(maps.Keys(rep.allowed)) {
			fmt.Fprintf(&b, " %s=%d", k, rep.allowed[k])
		}
	}
	b.WriteByte('\n')
	return b.String()
}

// details renders up to max mismatches, picking them round-robin across
// categories and fields so one frequent problem does not hide the others.
func (rep *report) details(max int) string {
	groups := map[string][]mismatch{}
	for _, m := range rep.items {
		k := m.q.Category + "/" + m.diffs[0].Field
		groups[k] = append(groups[k], m)
	}
	keys := slices.Sorted(maps.Keys(groups))
	var b strings.Builder
	shown := 0
	for round := 0; shown < max; round++ {
		progressed := false
		for _, k := range keys {
			if round >= len(groups[k]) || shown >= max {
				continue
			}
			progressed = true
			shown++
			m := groups[k][round]
			fmt.Fprintf(&b, "\n#%d %s\n", shown, m.q)
			for _, d := range m.diffs {
				switch d.Field {
				case "answer", "authority", "additional":
					w, g := sectionOf(m.want, d.Field), sectionOf(m.got, d.Field)
					fmt.Fprintf(&b, "  %s (- %s only, + %s only):\n%s", d.Field, rep.ref, rep.test, firstLines(SectionDiff(w, g), sectionLines()))
				default:
					fmt.Fprintf(&b, "  %s: %s %s, %s %s\n", d.Field, rep.ref, d.Want, rep.test, d.Got)
				}
			}
		}
		if !progressed {
			break
		}
	}
	if len(rep.items) > shown {
		fmt.Fprintf(&b, "\n(%d more not shown)\n", len(rep.items)-shown)
	}
	return b.String()
}

// inform logs what helps dig into a run but does not judge it (timings,
// NSD's differences from Knot, unused allow-list entries): only with -v.
// t.Log would print it beside every failure, burying the failure's own
// lines under a thousand lines of information.
func inform(t testing.TB, format string, args ...any) {
	t.Helper()
	if testing.Verbose() {
		t.Logf(format, args...)
	}
}

// compareNSD reports whether to run NSD beside Knot. NSD is information
// only, so it runs with -v alone: computed without being shown, its
// comparisons took a fifth of the package's time under -race. A missing
// nsd only drops them (unless TERN_REQUIRE_PEERS=1, where needTool fails
// the test).
func compareNSD(t testing.TB) bool {
	t.Helper()
	if !testing.Verbose() {
		return false
	}
	if _, ok := peer.FindTool("nsd"); ok || os.Getenv(requirePeersEnv) == "1" {
		return true
	}
	inform(t, "nsd not found: comparing Tern with Knot only")
	return false
}

// queryBudget bounds one test's queries to all its servers. Unloaded, a
// server answers the ~4700 queries in a second or two; the budget is far
// above that so that a loaded machine slows the test instead of failing
// it, while a server that stops answering still ends it.
const queryBudget = 4 * time.Minute

// sectionLines bounds the lines of one section's diff in details: the
// 1000-record MX RRset differs in 2000 lines, which would bury the rest.
// -v shows them all.
func sectionLines() int {
	if testing.Verbose() {
		return 1 << 30
	}
	return 20
}

// firstLines returns the first n lines of text, and a count of the rest.
func firstLines(text string, n int) string {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) <= n {
		return text
	}
	return strings.Join(lines[:n], "") + fmt.Sprintf("\t\t(%d more lines)\n", len(lines)-n)
}

// maxShown is how many mismatches to print: def, or the value of
// TERN_DIFFTEST_SHOW when set, for digging into one run.
func maxShown(def int) int {
	if n, err := strconv.Atoi(os.Getenv("TERN_DIFFTEST_SHOW")); err == nil && n > 0 {
		return n
	}
	return def
}

// checkReference fails the test if the reference server could not answer
// queries, since every comparison then means nothing.
func checkReference(t *testing.T, name string, qs []Query, outs []outcome) {
	t.Helper()
	var errs []string
	for i, o := range outs {
		if o.err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", qs[i], o.err))
		}
	}
	if len(errs) > 0 {
		t.Errorf("%s failed %d of %d queries; first: %s", name, len(errs), len(qs), strings.Join(errs[:min(5, len(errs))], "\n"))
	}
}

// checkReproducible asks the reference every fifth query again and fails
// if any answer changed: a reference that answers at random (rotation,
// a random ANY RRset) would make every comparison with it meaningless.
func checkReproducible(ctx context.Context, t *testing.T, s *server, qs []Query, first []outcome) {
	t.Helper()
	var sub []Query
	var idx []int
	for i := 0; i < len(qs); i += 5 {
		if qs[i].Mutate == "" {
			sub, idx = append(sub, qs[i]), append(idx, i)
		}
	}
	again := runQueries(ctx, s, sub)
	prev := make([]outcome, len(sub))
	for j, i := range idx {
		prev[j] = first[i]
	}
	rep := compareOutcomes(s.name+" (first)", s.name+" (again)", sub, prev, again, nil)
	if len(rep.items) > 0 {
		t.Errorf("the reference is not reproducible:\n%s%s", rep.summary(), rep.details(10))
	}
}

// TestDifferential serves the test zones with Knot, NSD and Tern, sends
// each the generated queries, and requires Tern to answer as Knot does
// except where allowlist.txt says otherwise. NSD's differences from Knot
// and from Tern are logged for information.
func TestDifferential(t *testing.T) {
	zones, err := TestZones("testdata")
	if err != nil {
		t.Fatal(err)
	}
	allow, err := LoadAllowlist("allowlist.txt")
	if err != nil {
		t.Fatal(err)
	}
	qs := Generate(zones)
	ctx, cancel := context.WithTimeout(context.Background(), queryBudget)
	defer cancel()

	knot := startKnot(t, zones)
	start := time.Now()
	knotOut := runQueries(ctx, knot, qs)
	inform(t, "knot: %d queries in %v", len(qs), time.Since(start).Round(time.Millisecond))
	checkReference(t, "knot", qs, knotOut)
	checkReproducible(ctx, t, knot, qs, knotOut)

	var nsdOut []outcome
	if compareNSD(t) {
		nsd := startNSD(t, zones)
		start = time.Now()
		nsdOut = runQueries(ctx, nsd, qs)
		inform(t, "nsd: %d queries in %v", len(qs), time.Since(start).Round(time.Millisecond))
		nk := compareOutcomes("knot", "nsd", qs, knotOut, nsdOut, nil)
		inform(t, "information only (NSD is not the reference):\n%s%s", nk.summary(), nk.details(maxShown(15)))
	}

	t.Run("tern-vs-knot", func(t *testing.T) {
		tern := startTern(t, zones)
		start := time.Now()
		ternOut := runQueries(ctx, tern, qs)
		inform(t, "tern: %d queries in %v", len(qs), time.Since(start).Round(time.Millisecond))
		tk := compareOutcomes("knot", "tern", qs, knotOut, ternOut, allow)
		if nsdOut != nil {
			tn := compareOutcomes("nsd", "tern", qs, nsdOut, ternOut, nil)
			inform(t, "information only:\n%s", tn.summary())
		}
		for _, e := range allow.Entries {
			if tk.allowed[e.ID] == 0 {
				inform(t, "allow-list entry %q (line %d) matched nothing; remove it if it is obsolete", e.ID, e.Line)
			}
		}
		if len(tk.items) > 0 {
			t.Errorf("Tern differs from Knot:\n%s%s", tk.summary(), tk.details(maxShown(30)))
		} else {
			inform(t, "%s", tk.summary())
		}
	})
}
