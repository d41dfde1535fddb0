package dnssec

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var errCrash = errors.New("simulated crash")

// TestCrashWhileStoringKeys stops Step at each step of storing new keys,
// as a SIGKILL there would, adds the temporary files a kill inside an
// atomic write leaves, and restarts the manager on the directory: after
// the restart's first Step the directory holds the state file and the
// files of the keys it lists, nothing else, and every key in use is
// listed. It covers the first signing (no state yet) and a ZSK rollover.
func TestCrashWhileStoringKeys(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name    string
		crashAt time.Time // the Step that is interrupted
	}{
		{"first signing", t0},
		{"ZSK rollover", t0.Add(40 * day)},
	} {
		for _, point := range []string{"before saving state", "after saving state"} {
			t.Run(tt.name+"/"+point, func(t *testing.T) {
				dir := t.TempDir()
				m, err := NewManager(dir, "example.com.", testPolicy())
				if err != nil {
					t.Fatal(err)
				}
				if tt.crashAt.After(t0) {
					if _, err := m.Step(t0); err != nil {
						t.Fatal(err)
					}
				}
				reached := false
				m.interrupt = func(step string) error {
					if step == point {
						reached = true
						return errCrash
					}
					return nil
				}
				if _, err := m.Step(tt.crashAt); !errors.Is(err, errCrash) {
					t.Fatalf("Step: %v, want the simulated crash", err)
				}
				if !reached {
					t.Fatalf("Step never reached %q", point)
				}
				// What a kill inside durable.WriteFile leaves: its temporary
				// files, for a key and for the state.
				for _, name := range []string{".Kexample.com+015+00001.private.tmp4242", ".example.com.dnssec-state.json.tmp77"} {
					if err := os.WriteFile(filepath.Join(dir, name), []byte("partial"), 0o600); err != nil {
						t.Fatal(err)
					}
				}

				// A tool reading the directory (tern zone sign, tern zone
				// ds) while a server may be writing it changes nothing.
				before, _ := os.ReadDir(dir)
				if _, err := PublishedKeys(dir, "example.com.", tt.crashAt); err != nil && point == "before saving state" {
					t.Errorf("PublishedKeys: %v", err)
				}
				if after, _ := os.ReadDir(dir); len(after) != len(before) {
					t.Errorf("PublishedKeys changed the key directory: %d entries, then %d", len(before), len(after))
				}

				m, err = NewManager(dir, "example.com.", testPolicy())
				if err != nil {
					t.Fatalf("restart: %v", err)
				}
				plan, err := m.Step(tt.crashAt.Add(time.Minute))
				if err != nil {
					t.Fatalf("Step after restart: %v", err)
				}
				st := m.State()
				checkKeyDir(t, dir, &st)
				for _, k := range plan.Keys {
					if keyOf(st, k.Tag()) == nil {
						t.Errorf("key %d in use but not in the state", k.Tag())
					}
				}
				want := 2 // a KSK and a ZSK
				if tt.crashAt.After(t0) {
					want = 3 // and the ZSK's successor
				}
				if len(st.Keys) != want {
					t.Errorf("state lists %d keys, want %d", len(st.Keys), want)
				}
			})
		}
	}
}

// checkKeyDir fails t unless dir holds exactly the state file of st and
// the .key and .private files of each key st lists.
func checkKeyDir(t *testing.T, dir string, st *State) {
	t.Helper()
	want := []string{filepath.Base(StatePath(dir, st.Zone))}
	for _, k := range st.Keys {
		want = append(want, k.File+".key", k.File+".private")
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("key directory holds\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
