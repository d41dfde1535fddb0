package resolve

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// TestRandomCase: only letters change, escapes stay, and over many draws
// each letter is seen in both cases.
func TestRandomCase(t *testing.T) {
	const name = `ab\065\.c-9.example.`
	upper, lower := map[int]bool{}, map[int]bool{}
	for range 64 {
		got := randomCase(name)
		if !strings.EqualFold(got, name) || !strings.Contains(got, `\065\.`) || len(got) != len(name) {
			t.Fatalf("randomCase(%q) = %q", name, got)
		}
		for i := range got {
			if got[i] >= 'A' && got[i] <= 'Z' {
				upper[i] = true
			} else if got[i] >= 'a' && got[i] <= 'z' {
				lower[i] = true
			}
		}
	}
	// a, b, c, and the seven of example, never the escapes' digits.
	if len(upper) != 10 || len(lower) != 10 {
		t.Errorf("letters seen upper %v, lower %v: want 10 each", upper, lower)
	}
}

// TestCaseRandom: with Options.CaseRandom every question goes in random
// case with an exact-case answer required, the answer's owners come back
// in the case asked, and a server that does not echo the case is asked
// again without it.
func TestCaseRandom(t *testing.T) {
	for _, caseless := range []bool{false, true} {
		f, r, steps := tracedWorld(t, nil, Options{CaseRandom: true, NoMinimise: true})
		if caseless {
			f.caseless = map[string]bool{exCom: true}
		}
		res, err := r.Resolve(context.Background(), "www.example.com.", dns.TypeA)
		checkResult(t, res, err, 0, []string{"www.example.com. 300 IN A 192.0.2.1"})
		want := []string{root, root, gtld, exCom}
		if caseless {
			want = append(want, exCom) // asked again, in the case asked
		}
		if !slices.Equal(f.askedOf(), want) {
			t.Fatalf("caseless %v: asked %q, want %q", caseless, f.askedOf(), want)
		}
		mixed := 0
		for i, name := range f.sent {
			retry := caseless && i == len(f.sent)-1
			if f.exact[i] == retry || (*steps)[i].CaseRandom == retry || (*steps)[i].Question.Name != name {
				t.Errorf("caseless %v: question %d %q: exact case %v, step %+v", caseless, i, name, f.exact[i], (*steps)[i])
			}
			if name != strings.ToLower(name) {
				mixed++
			}
		}
		// A name of n letters stays lowercase once in 2^n draws: of the
		// 13 letters of www.example.com. and the priming's none, at
		// least one of the three draws is mixed but once in 2^39.
		if mixed == 0 {
			t.Errorf("caseless %v: no name sent in mixed case: %q", caseless, f.sent)
		}
	}
}
