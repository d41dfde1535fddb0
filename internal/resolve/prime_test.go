package resolve

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// hint is the address of the root hint in the priming tests: a root
// server that answers as the world's root does, but not the one the
// priming answers name.
const hint = "10.0.0.9"

// TestPriming: the first resolution asks a hint for the root's NS records
// (RFC 8109) and starts from the servers of the answer until its smallest
// TTL ends; a failed priming lets the hints stand in for a while.
func TestPriming(t *testing.T) {
	type resolution struct {
		after time.Duration // since the first resolution
		asked []string
		why   string // why the root was asked for www.example.com.
	}
	noAA := priming(t, ". 86400 IN NS a.root-servers.test.", "a.root-servers.test. 86400 IN A "+root)
	noAA.Authoritative = false
	for _, tc := range []struct {
		name     string
		priming  *dns.Msg // the hint's answer to ". NS"; nil: none
		resolved []resolution
	}{{
		name: "the primed servers used instead of the hint, until the smallest TTL",
		priming: priming(t, ". 86400 IN NS a.root-servers.test.\n. 86400 IN NS b.root-servers.test.",
			"a.root-servers.test. 3600 IN A "+root, "b.root-servers.test. 86400 IN AAAA 2001:db8::53"),
		resolved: []resolution{
			{0, []string{hint, root, gtld, exCom}, "root server, primed"},
			{3599 * time.Second, []string{root, gtld, exCom}, "root server, primed"},
			{3600 * time.Second, []string{hint, root, gtld, exCom}, "root server, primed"},
		},
	}, {
		name: "a root server without an address in the answer left out",
		priming: priming(t, ". 86400 IN NS a.root-servers.test.\n. 86400 IN NS b.root-servers.test.",
			"b.root-servers.test. 86400 IN A "+root),
		resolved: []resolution{{0, []string{hint, root, gtld, exCom}, "root server, primed"}},
	}, {
		name:    "an answer without AA: the hints stand in, priming tried again later",
		priming: noAA,
		resolved: []resolution{
			{0, []string{hint, hint, gtld, exCom}, "root hint"},
			{primeRetry - time.Second, []string{hint, gtld, exCom}, "root hint"},
			{primeRetry, []string{hint, hint, gtld, exCom}, "root hint"},
		},
	}, {
		name:     "an answer without addresses: the hints stand in",
		priming:  priming(t, ". 86400 IN NS a.root-servers.test."),
		resolved: []resolution{{0, []string{hint, hint, gtld, exCom}, "root hint"}},
	}, {
		name:     "no answer: the hints stand in (tried again after one that failed)",
		resolved: []resolution{{0, []string{hint, hint, hint, gtld, exCom}, "root hint"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := primingWorld(t, tc.priming)
			start := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
			now := start
			var steps []Step
			r := New(f, Options{
				Hints: []Server{{Name: "hint.root.", Addrs: []netip.Addr{netip.MustParseAddr(hint)}, Why: "root hint"}},
				Trace: func(s Step) { steps = append(steps, s) },
				Now:   func() time.Time { return now },
				// The world's servers answer the full questions only.
				NoMinimise: true,
			})
			for _, rs := range tc.resolved {
				now = start.Add(rs.after)
				f.asked, steps = nil, nil
				res, err := r.Resolve(context.Background(), "www.example.com.", dns.TypeA)
				if err != nil {
					t.Fatal(err)
				}
				if got := records(res.Answer); !slices.Equal(got, []string{"www.example.com. 300 IN A 192.0.2.1"}) {
					t.Errorf("after %v: answer %q", rs.after, got)
				}
				if !slices.Equal(f.askedOf(), rs.asked) {
					t.Errorf("after %v: asked %q, want %q", rs.after, f.askedOf(), rs.asked)
				}
				if res.Queries != len(f.asked) {
					t.Errorf("after %v: %d queries counted, %d sent", rs.after, res.Queries, len(f.asked))
				}
				i := slices.IndexFunc(steps, func(s Step) bool { return s.Question.Name == "www.example.com." })
				if i < 0 || steps[i].Why != rs.why {
					t.Errorf("after %v: steps %+v, want the root asked as %q", rs.after, steps, rs.why)
				}
				for _, s := range steps {
					if s.Question.Name == "." && (s.Question.Qtype != dns.TypeNS || !strings.HasPrefix(s.Why, "root hint, priming query (RFC 8109)")) {
						t.Errorf("priming step %+v", s)
					}
				}
			}
		})
	}
}

// primingWorld is the world with one more root server, the hint, whose
// answer to a priming query is priming (none when nil).
func primingWorld(t testing.TB, priming *dns.Msg) *fake {
	f := world(t)
	for k, m := range f.answers {
		if k.server == root && k.name != "." {
			f.answers[key{hint, k.name, k.qtype}] = m
		}
	}
	if priming != nil {
		f.answers[key{hint, ".", dns.TypeNS}] = priming
	}
	return f
}

// TestPrimingOnce: resolutions that start together wait for one priming
// query.
func TestPrimingOnce(t *testing.T) {
	f := primingWorld(t, priming(t, ". 86400 IN NS a.root-servers.test.", "a.root-servers.test. 3600 IN A "+root))
	f.mu = new(sync.Mutex)
	r := New(f, Options{Hints: []Server{{Name: "hint.root.", Addrs: []netip.Addr{netip.MustParseAddr(hint)}}}, NoMinimise: true})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.Resolve(context.Background(), "www.example.com.", dns.TypeA); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if asked := f.askedOf(); len(asked) != 1+8*3 || asked[0] != hint || slices.Contains(asked[1:], hint) {
		t.Errorf("asked %q: want one priming query, to %s, and the rest from %s", f.askedOf(), hint, root)
	}
}
