package journal

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tern-dns/tern/internal/zone"
)

// version compiles example.test at serial with body after its head.
func version(t testing.TB, serial uint32, body string) *zone.Zone {
	t.Helper()
	text := fmt.Sprintf("$ORIGIN example.test.\n$TTL 300\n@ SOA ns1 host %d 2 3 4 60\n@ NS ns1\nns1 A 192.0.2.1\n", serial) + body
	z, err := zone.Read(strings.NewReader(text), "t.zone", "example.test.")
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// address is version serial with www at 10.0.x.y for n.
func address(t testing.TB, serial uint32, n int) *zone.Zone {
	return version(t, serial, fmt.Sprintf("www A 10.0.%d.%d\n", n>>8&255, n&255))
}

// appendTo appends the difference from a to b, and b's digest, to j.
func appendTo(t testing.TB, j *Journal, a, b *zone.Zone) error {
	t.Helper()
	return j.Append(diff(t, a, b), b.Digest())
}

func diff(t testing.TB, a, b *zone.Zone) *zone.Diff {
	t.Helper()
	d, err := zone.Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func open(t testing.TB, path string, max int64) *Journal {
	t.Helper()
	j, dropped, err := Open(path, max)
	if err != nil {
		t.Fatal(err)
	}
	if dropped != 0 {
		t.Fatalf("dropped %d octets of a journal closed cleanly", dropped)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// sameDiff compares two differences record by record.
func sameDiff(t testing.TB, got, want *zone.Diff) {
	t.Helper()
	if got.From != want.From || got.To != want.To {
		t.Fatalf("difference %d→%d, want %d→%d", got.From, got.To, want.From, want.To)
	}
	eq := func(a, b []zone.RR) bool {
		return slices.EqualFunc(a, b, func(x, y zone.RR) bool {
			return string(x.Owner) == string(y.Owner) && string(x.Tail) == string(y.Tail)
		})
	}
	if !eq(got.Deleted, want.Deleted) || !eq(got.Added, want.Added) ||
		!eq([]zone.RR{got.OldSOA, got.NewSOA}, []zone.RR{want.OldSOA, want.NewSOA}) {
		t.Fatalf("difference %d→%d: %d deleted, %d added; want %d, %d", got.From, got.To,
			len(got.Deleted), len(got.Added), len(want.Deleted), len(want.Added))
	}
}

// TestSince: differences appended come back condensed from any serial
// the journal holds, also after reopening; other serials are not found.
func TestSince(t *testing.T) {
	path := Path(t.TempDir(), "Example.TEST.")
	if filepath.Base(path) != "example.test.jnl" {
		t.Errorf("journal file %s", path)
	}
	a := version(t, 1, "x A 192.0.2.1\ny A 192.0.2.2\n")
	b := version(t, 2, "y A 192.0.2.2\nz A 192.0.2.3\n")
	c := version(t, 3, "x A 192.0.2.1\nw A 192.0.2.4\n")
	j := open(t, path, 1<<20)
	if _, _, ok := j.Serials(); ok {
		t.Error("a new journal has serials")
	}
	for _, v := range [][2]*zone.Zone{{a, b}, {b, c}} {
		if err := appendTo(t, j, v[0], v[1]); err != nil {
			t.Fatal(err)
		}
	}
	if serial, digest, ok := j.Last(); !ok || serial != 3 || digest != c.Digest() {
		t.Errorf("last: %d %x %v, want 3 %x", serial, digest, ok, c.Digest())
	}
	j.Close()
	j = open(t, path, 1<<20)
	if first, last, ok := j.Serials(); !ok || first != 1 || last != 3 {
		t.Errorf("serials %d, %d, %v", first, last, ok)
	}
	for _, tc := range []struct {
		serial uint32
		want   *zone.Diff
	}{{1, diff(t, a, c)}, {2, diff(t, b, c)}} {
		got, err := j.Since(tc.serial)
		if err != nil {
			t.Fatal(err)
		}
		sameDiff(t, got, tc.want)
	}
	for _, s := range []uint32{3, 0, 7} {
		if _, err := j.Since(s); !errors.Is(err, ErrNotFound) {
			t.Errorf("Since(%d): %v, want ErrNotFound", s, err)
		}
	}
	// A difference that does not continue the last starts anew.
	if err := appendTo(t, j, version(t, 7, ""), version(t, 8, "q A 192.0.2.9\n")); err != nil {
		t.Fatal(err)
	}
	if first, last, _ := j.Serials(); first != 7 || last != 8 {
		t.Errorf("after a jump: serials %d, %d, want 7, 8", first, last)
	}
	if _, err := j.Since(1); !errors.Is(err, ErrNotFound) {
		t.Errorf("the old differences are still there: %v", err)
	}
}

// TestTornTail: a journal cut anywhere inside its last entry (a crash in
// the middle of an append), or with a byte of it changed, opens with the
// entries before it, and takes the next append.
func TestTornTail(t *testing.T) {
	dir := t.TempDir()
	path := Path(dir, "example.test")
	v1, v2, v3 := address(t, 1, 1), address(t, 2, 2), address(t, 3, 3)
	j := open(t, path, 1<<20)
	appendTo(t, j, v1, v2)
	good := j.Size()
	appendTo(t, j, v2, v3)
	full := j.Size()
	j.Close()
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, content []byte, wantDropped int64) {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		j, dropped, err := Open(path, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		if dropped != wantDropped {
			t.Errorf("dropped %d octets, want %d", dropped, wantDropped)
		}
		if first, last, ok := j.Serials(); !ok || first != 1 || last != 2 {
			t.Fatalf("serials %d, %d, %v; want 1, 2", first, last, ok)
		}
		if fi, _ := os.Stat(path); fi.Size() != good {
			t.Errorf("file of %d octets, want %d", fi.Size(), good)
		}
		if err := appendTo(t, j, v2, v3); err != nil {
			t.Fatal(err)
		}
		d, err := j.Since(1)
		if err != nil {
			t.Fatal(err)
		}
		sameDiff(t, d, diff(t, v1, v3))
	}
	for cut := good + 1; cut < full; cut++ {
		t.Run(fmt.Sprintf("cut at %d", cut), func(t *testing.T) { check(t, whole[:cut], cut-good) })
	}
	for at := good; at < full; at++ {
		t.Run(fmt.Sprintf("octet %d changed", at), func(t *testing.T) {
			bad := slices.Clone(whole)
			bad[at] ^= 0x40
			check(t, bad, full-good)
		})
	}
}

// TestNotAJournal: a file that is not a journal is refused, named.
func TestNotAJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jnl")
	os.WriteFile(path, []byte("$ORIGIN example.test.\n"), 0o600)
	if _, _, err := Open(path, 1<<20); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("opened: %v", err)
	}
}

// TestBound: the journal never exceeds its bound; unrelated changes are
// dropped oldest first, changes that cancel out are condensed, so that a
// client at the oldest serial still gets one difference; a difference
// larger than the bound empties it.
func TestBound(t *testing.T) {
	const max = 4096
	t.Run("oldest dropped", func(t *testing.T) {
		j := open(t, Path(t.TempDir(), "example.test"), max)
		prev := version(t, 1, "")
		for s := uint32(2); s < 200; s++ {
			// Each version adds a name: nothing cancels out.
			next := version(t, s, fmt.Sprintf("$GENERATE 2-%d n$ A 192.0.2.1\n", s))
			if err := appendTo(t, j, prev, next); err != nil {
				t.Fatal(err)
			}
			if j.Size() > max {
				t.Fatalf("serial %d: %d octets, bound %d", s, j.Size(), max)
			}
			prev = next
		}
		first, last, _ := j.Serials()
		if last != 199 || first < 150 {
			t.Errorf("serials %d to %d", first, last)
		}
		if _, err := j.Since(1); !errors.Is(err, ErrNotFound) {
			t.Errorf("Since(1): %v", err)
		}
		d, err := j.Since(first)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Added) != int(last-first) || len(d.Deleted) != 0 {
			t.Errorf("Since(%d): %d added, %d deleted", first, len(d.Added), len(d.Deleted))
		}
	})
	t.Run("condensed", func(t *testing.T) {
		j := open(t, Path(t.TempDir(), "example.test"), max)
		prev := address(t, 1, 0)
		for s := uint32(2); s < 200; s++ {
			// www flips between two addresses: merged pairs cancel.
			next := address(t, s, int(s%2))
			if err := appendTo(t, j, prev, next); err != nil {
				t.Fatal(err)
			}
			if j.Size() > max {
				t.Fatalf("serial %d: %d octets, bound %d", s, j.Size(), max)
			}
			prev = next
		}
		if first, last, _ := j.Serials(); first != 1 || last != 199 {
			t.Errorf("serials %d to %d, want 1 to 199", first, last)
		}
		d, err := j.Since(1)
		if err != nil {
			t.Fatal(err)
		}
		sameDiff(t, d, diff(t, address(t, 1, 0), prev))
	})
	t.Run("too large", func(t *testing.T) {
		j := open(t, Path(t.TempDir(), "example.test"), 200)
		if err := appendTo(t, j, version(t, 1, ""), version(t, 2, "$GENERATE 1-20 n$ A 192.0.2.1\n")); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := j.Serials(); ok || j.Size() > 200 {
			t.Errorf("kept a difference over the bound (%d octets)", j.Size())
		}
	})
}

// TestKilled: a process appending to a journal, killed with SIGKILL at an
// arbitrary moment, leaves a journal that opens with every difference
// whose Append had returned.
func TestKilled(t *testing.T) {
	if os.Getenv("TERN_JOURNAL_APPENDER") != "" {
		appender(t, os.Getenv("TERN_JOURNAL_APPENDER"))
		return
	}
	for round := range 3 {
		path := Path(t.TempDir(), "example.test")
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilled$")
		cmd.Env = append(os.Environ(), "TERN_JOURNAL_APPENDER="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill it after a number of appends that differs by round.
		r := bufio.NewScanner(out)
		done := uint32(0)
		for r.Scan() && done < uint32(5+20*round) {
			if n, err := strconv.ParseUint(r.Text(), 10, 32); err == nil {
				done = uint32(n)
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if done == 0 {
			t.Fatal("the appender reported no append")
		}
		j, dropped, err := Open(path, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		first, last, ok := j.Serials()
		if !ok || first != 1 || last < done {
			t.Errorf("round %d: serials %d to %d (dropped %d octets), but %d were appended", round, first, last, dropped, done)
		}
		if _, err := j.Since(1); err != nil {
			t.Error(err)
		}
		j.Close()
	}
}

// appender appends differences to the journal at path until killed,
// printing each new serial once its Append has returned.
func appender(t *testing.T, path string) {
	j, _, err := Open(path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	prev := address(t, 1, 1)
	deadline := time.Now().Add(time.Minute)
	for s := uint32(2); time.Now().Before(deadline); s++ {
		next := address(t, s, int(s))
		if err := appendTo(t, j, prev, next); err != nil {
			t.Fatal(err)
		}
		fmt.Println(s)
		prev = next
	}
}

// FuzzOpen: whatever follows the magic, Open neither fails nor panics,
// and what it keeps reads back.
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	seed := filepath.Join(dir, "seed.jnl")
	j, _, err := Open(seed, 1<<20)
	if err != nil {
		f.Fatal(err)
	}
	appendTo(f, j, address(f, 1, 1), address(f, 2, 2))
	appendTo(f, j, address(f, 2, 2), address(f, 3, 3))
	j.Close()
	whole, _ := os.ReadFile(seed)
	f.Add(whole[len(magic):])
	f.Add(whole[len(magic) : len(whole)-3])
	f.Add([]byte{0, 0, 0, 16, 1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, body []byte) {
		path := filepath.Join(t.TempDir(), "f.jnl")
		os.WriteFile(path, append([]byte(magic), body...), 0o600)
		j, _, err := Open(path, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		if first, _, ok := j.Serials(); ok {
			if _, err := j.Since(first); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// BenchmarkAppend: appending the difference between two versions of the
// bench generator's big zone at 100,000 records (every hundredth address
// changed, every hundredth name replaced: 4,000 records), and reading it
// back with Since; reports the journal's octets per difference.
func BenchmarkAppend(b *testing.B) {
	gen := func(serial uint32, change bool) *zone.Zone {
		var s strings.Builder
		fmt.Fprintf(&s, "$ORIGIN big.test.\n$TTL 3600\n@ SOA ns1 hostmaster %d 7200 3600 1209600 3600\n@ NS ns1\nns1 A 192.0.2.1\n", serial)
		for i := range 100000 {
			name, last := "n", i&255
			if change && i%100 == 1 {
				last = (i + 1) & 255
			} else if change && i%100 == 2 {
				name = "new"
			}
			fmt.Fprintf(&s, "%s%d A 10.%d.%d.%d\n", name, i, i>>16&255, i>>8&255, last)
		}
		z, err := zone.Read(strings.NewReader(s.String()), "big.zone", "big.test.")
		if err != nil {
			b.Fatal(err)
		}
		return z
	}
	d := diff(b, gen(1, false), gen(2, true))
	j := open(b, Path(b.TempDir(), "big.test"), 64<<20)
	b.ResetTimer()
	for range b.N {
		before := j.Size()
		if err := j.Append(d, 0); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(j.Size()-before), "octets/diff")
		if _, err := j.Since(1); err != nil {
			b.Fatal(err)
		}
		// Start again: the same difference appended twice would not
		// continue itself.
		b.StopTimer()
		j.rewrite(nil)
		b.StartTimer()
	}
}

// TestSetMax: a lower bound takes effect at the next append.
func TestSetMax(t *testing.T) {
	j := open(t, Path(t.TempDir(), "example.test"), 1<<20)
	prev := address(t, 1, 1)
	for s := uint32(2); s < 40; s++ {
		next := version(t, s, fmt.Sprintf("$GENERATE 2-%d n$ A 192.0.2.1\n", s))
		if err := appendTo(t, j, prev, next); err != nil {
			t.Fatal(err)
		}
		prev = next
	}
	big := j.Size()
	j.SetMax(big / 4)
	next := version(t, 40, "$GENERATE 2-40 n$ A 192.0.2.1\n")
	if err := appendTo(t, j, prev, next); err != nil {
		t.Fatal(err)
	}
	if j.Size() > big/4 {
		t.Errorf("%d octets after lowering the bound to %d", j.Size(), big/4)
	}
}
