package zone

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// brokenZones are zone files with several syntax errors each, the lines
// (per file) where Tern reports them, and the peers whose checkers report
// the same lines (each peer differs somewhere: NSD counts an unbalanced
// quote at the end of the file and a missing field on the next line;
// Knot does not open the relative $INCLUDE).
var brokenZones = []struct {
	file  string
	want  map[string][]int // file name -> lines with errors
	peers []string
}{
	{"types.zone", map[string][]int{"types.zone": {7, 8, 9, 10, 12}}, []string{"knot", "bind"}},
	{"state.zone", map[string][]int{"state.zone": {10, 13, 15}}, []string{"knot", "bind"}},
	{"multiline.zone", map[string][]int{"multiline.zone": {10}}, []string{"knot", "bind"}},
	{"include.zone", map[string][]int{"include.zone": {9}, "include.inc": {2, 4}}, []string{"nsd", "bind"}},
}

// errorLines collects "file:line" positions from checker output by a
// pattern whose groups are the file and the line.
func errorLines(out string, re *regexp.Regexp) map[string][]int {
	got := map[string][]int{}
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[2])
		f := filepath.Base(m[1])
		if !slices.Contains(got[f], n) {
			got[f] = append(got[f], n)
		}
	}
	for _, l := range got {
		sort.Ints(l)
	}
	return got
}

var terrLine = regexp.MustCompile(`(?m)^([^:\n]+):(\d+):`)

// TestEveryError: every syntax error of a file is reported, not the
// first only, at the lines Knot's, NSD's or BIND's checkers name, with a
// message that says what is wrong.
func TestEveryError(t *testing.T) {
	for _, c := range brokenZones {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", "broken", c.file)
			_, err := Load(path, "x.test")
			if err == nil {
				t.Fatal("loaded")
			}
			if got := errorLines(err.Error(), terrLine); !equalLines(got, c.want) {
				t.Errorf("error lines %v, want %v:\n%v", got, c.want, err)
			}
			for _, peer := range c.peers {
				out, ok := checkWith(t, peer, path)
				if !ok {
					continue
				}
				if got := errorLines(out, peerLine[peer]); !equalLines(got, c.want) {
					t.Errorf("%s reports lines %v, the test wants %v:\n%s", peer, got, c.want, out)
				}
			}
		})
	}
}

func equalLines(a, b map[string][]int) bool {
	if len(a) != len(b) {
		return false
	}
	for f, l := range a {
		if !slices.Equal(l, b[f]) {
			return false
		}
	}
	return true
}

// peerLine finds the file and line of each error in a peer's output.
var peerLine = map[string]*regexp.Regexp{
	"nsd":  regexp.MustCompile(`error: (\S+?):(\d+): `),
	"bind": regexp.MustCompile(`(\S+?\.(?:zone|inc)):(\d+): `),
	"knot": regexp.MustCompile(`file '(\S+?)', line (\d+) \(`),
}

// checkWith runs a peer's zone checker on path (origin x.test) and
// returns its output; false when the peer is not installed.
func checkWith(t *testing.T, peer, path string) (string, bool) {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	var cmd *exec.Cmd
	switch peer {
	case "nsd":
		cmd = exec.Command(lookPeer("nsd-checkzone"), "x.test", abs)
	case "bind":
		cmd = exec.Command(lookPeer("named-checkzone"), "x.test", abs)
	case "knot":
		// Knot 3.2 has no kzonecheck: knotc zone-check does its work.
		dir := t.TempDir()
		conf := filepath.Join(dir, "knot.conf")
		text := "server:\n  rundir: " + dir + "\ndatabase:\n  storage: " + dir + "\nzone:\n  - domain: x.test\n    file: " + abs + "\n"
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command(lookPeer("knotc"), "-c", conf, "zone-check", "x.test")
	}
	if cmd.Path == "" {
		t.Logf("%s: not installed", peer)
		return "", false
	}
	cmd.Dir = filepath.Dir(abs)
	out, _ := cmd.CombinedOutput() // they exit non-zero on a broken zone
	return string(out), true
}

// lookPeer finds a peer's program in PATH or /usr/sbin, "" if absent.
func lookPeer(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := filepath.Join("/usr/sbin", name); fileExists(p) {
		return p
	}
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestErrorMessages: messages say what is wrong, where miekg/dns's
// name what it tried last.
func TestErrorMessages(t *testing.T) {
	_, err := Load("testdata/broken/types.zone", "x.test")
	for _, want := range []string{
		`types.zone:7:6: unknown type "FOO"`,
		`types.zone:8:13: bad IPv4 address "999.1.1.1"`,
		`types.zone:9:12: bad MX preference "mail"`,
		`types.zone:10:20: bad IPv6 address "zz::1"`,
		`types.zone:12: unbalanced quotes: the string runs on to line 14`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nlacks %q", err, want)
		}
	}
	_, err = Load("testdata/broken/state.zone", "x.test")
	if want := "state.zone:13:11: bad MX exchange: missing at the end of the line"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v\nlacks %q", err, want)
	}
}

// TestParseGoesOn: after a bad line the records that follow are read
// with the $ORIGIN, $TTL and owner in force there.
func TestParseGoesOn(t *testing.T) {
	recs, err := ParseFile("testdata/broken/state.zone", "x.test")
	if err == nil {
		t.Fatal("no error")
	}
	var got []string
	for _, r := range recs {
		got = append(got, strconv.Itoa(r.Line)+" "+strings.Join(strings.Fields(r.RR.String()), " "))
	}
	for _, want := range []string{
		`11 www.sub.x.test. 60 IN TXT "same owner"`,    // the owner of line 9, after line 10's error
		"14 mail2.sub.x.test. 120 IN A 192.0.2.3",      // $TTL 120 and $ORIGIN sub.x.test.
		"16 mail2.sub.x.test. 120 IN AAAA 2001:db8::1", // owner and TTL after line 15's error
		"18 last.x.test. 120 IN A 192.0.2.4",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("records\n%s\nlack %q", strings.Join(got, "\n"), want)
		}
	}
	// $ORIGIN @ keeps the origin; the restart after line 4 must too.
	recs, _ = Parse(strings.NewReader("$ORIGIN sub.x.test.\n$TTL 5\n$ORIGIN @\nbad A 1\nok A 192.0.2.1\n"), "o.zone", "x.test")
	if len(recs) != 1 || recs[0].RR.Header().Name != "ok.sub.x.test." {
		t.Errorf("records after $ORIGIN @ and an error: %v", recs)
	}
	recs, err = ParseFile("testdata/broken/include.zone", "x.test")
	var owners []string
	for _, r := range recs {
		owners = append(owners, r.RR.Header().Name)
	}
	for _, want := range []string{"i1.x.test.", "i3.x.test.", "after.x.test."} {
		if !slices.Contains(owners, want) {
			t.Errorf("records %v lack %s (%v)", owners, want, err)
		}
	}
}

// TestErrorsBounded: a file of garbage gives maxErrors errors and stops.
func TestErrorsBounded(t *testing.T) {
	text := strings.Repeat("x BOGUS 1\n", 10*maxErrors)
	_, err := Read(strings.NewReader(text), "g.zone", "x.test")
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%T %v", err, err)
	}
	if len(e.Errs) != maxErrors+1 || !strings.Contains(err.Error(), "too many errors") {
		t.Fatalf("%d errors: %v", len(e.Errs), err)
	}
}

// TestIncludedFilesClosed: a parse that stops inside an $INCLUDEd file
// (more than maxErrors errors there) closes it all the same. It used to
// stay open until the collector ran the file's finalizer: a server
// reloading such a zone held one more descriptor each time.
func TestIncludedFilesClosed(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	dir := t.TempDir()
	top := filepath.Join(dir, "top.zone")
	inc := filepath.Join(dir, "inc.zone")
	var b strings.Builder
	for i := 0; i < maxErrors+10; i++ {
		b.WriteString("bad A 1.2.3\n")
	}
	if err := os.WriteFile(inc, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(top, []byte(head+"$INCLUDE inc.zone\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// No collection may close what the parse left open.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	if _, err := ParseFile(top, "example.test."); err == nil || !strings.Contains(err.Error(), "too many errors") {
		t.Fatalf("error %v, want too many errors", err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if target, _ := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); target == inc {
			t.Errorf("descriptor %s still open on the included %s", fd.Name(), inc)
		}
	}
}

// TestDollarInData: a '$' that does not start a line is data, not a
// directive, as miekg/dns reads it. A TXT string holding "$TTL 60" gave
// the $GENERATE records after it TTL 60, and one holding "$ORIGIN
// evil.test." gave the records read after a later syntax error that
// origin, both before the line reader looked only at a line's first byte.
func TestDollarInData(t *testing.T) {
	text := head + "note TXT \"$TTL 60 is what we use\"\n$GENERATE 1-2 host$ A 192.0.2.$\n"
	recs, err := Parse(strings.NewReader(text), "t.zone", "example.test.")
	if err != nil {
		t.Fatal(err)
	}
	generated := 0
	for _, r := range recs {
		if h := r.RR.Header(); strings.HasPrefix(h.Name, "host") {
			generated++
			if h.Ttl != 300 {
				t.Errorf("%s: TTL %d, want the $TTL in force, 300", h.Name, h.Ttl)
			}
		}
	}
	if generated != 2 {
		t.Errorf("%d generated records, want 2", generated)
	}
	text = head + "note TXT \"x\" \"$ORIGIN evil.test.\"\nbad A 1.2.3\nok A 192.0.2.1\n"
	recs, _ = Parse(strings.NewReader(text), "t.zone", "example.test.")
	if last := recs[len(recs)-1].RR.Header().Name; last != "ok.example.test." {
		t.Errorf("the record after the error is %s, want ok.example.test.", last)
	}
}
