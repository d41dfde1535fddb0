package hierarchy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest/hierarchy"
)

// generatedTypes are the types asked at every name of the generated
// comparison.
var generatedTypes = []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeNS, dns.TypeSOA, dns.TypeTXT, dns.TypeMX, dns.TypeCNAME, dns.TypeDS, dns.TypeDNAME}

// slowZones are left out of the generated questions: their servers drop
// or refuse queries, which the cases cover, and each question would cost
// seconds of timeouts.
var slowZones = []string{"dead.tld.", "partdead.tld.", "closed.tld."}

// generatedQuestions returns every owner name of the hierarchy's zone
// files (a wildcard's as a name it matches), a name below each that does
// not exist, each with every generatedTypes type: a few hundred
// questions, sorted.
func generatedQuestions(t *testing.T, h *hierarchy.Standard) []dns.Question {
	t.Helper()
	names := map[string]bool{}
	files, err := filepath.Glob(filepath.Join(h.Dir, "*.zone"))
	if err != nil || len(files) == 0 {
		t.Fatalf("zone files in %s: %v", h.Dir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		zp := dns.NewZoneParser(strings.NewReader(string(b)), "", f)
		for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
			name := strings.ToLower(rr.Header().Name)
			name = strings.Replace(name, "*.", "x.", 1)
			names[name] = true
			if name == "." {
				names["gen-nx."] = true
			} else {
				names["gen-nx."+name] = true
			}
		}
		if err := zp.Err(); err != nil {
			t.Fatal(err)
		}
	}
	var qs []dns.Question
	for name := range names {
		slow := false
		for _, z := range slowZones {
			slow = slow || dns.IsSubDomain(z, name)
		}
		if slow {
			continue
		}
		for _, qt := range generatedTypes {
			qs = append(qs, dns.Question{Name: name, Qtype: qt, Qclass: dns.ClassINET})
		}
	}
	sort.Slice(qs, func(i, j int) bool {
		if qs[i].Name != qs[j].Name {
			return qs[i].Name < qs[j].Name
		}
		return qs[i].Qtype < qs[j].Qtype
	})
	return qs
}

// testUnboundGenerated asks Unbound and Tern's served resolver every
// generated question (every name of the hierarchy, a name below each
// that does not exist, nine types each) and compares the responses as
// testUnbound does. A difference fails the test unless
// generatedDifferences explains it.
func testUnboundGenerated(t *testing.T, e *env) {
	unbound, served := e.needUnbound(t), e.served
	qs := generatedQuestions(t, e.h)
	type result struct {
		q    dns.Question
		diff string
		err  error
	}
	results := make([]result, len(qs))
	// Eight questions at a time: each resolver gets a steady load, none
	// a burst of hundreds at once.
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				q := qs[i]
				results[i].q = q

				u, err := askResolver(unbound, q.Name, q.Qtype)
				if err != nil {
					results[i].err = fmt.Errorf("unbound: %w", err)
					continue
				}
				m, err := askResolver(served, q.Name, q.Qtype)
				if err != nil {
					results[i].err = fmt.Errorf("tern: %w", err)
					continue
				}
				results[i].diff = compare(u, m)
			}
		}()
	}
	for i := range qs {
		work <- i
	}
	close(work)
	wg.Wait()
	differ := 0
	for _, r := range results {
		key := r.q.Name + " " + dns.Type(r.q.Qtype).String()
		switch {
		case r.err != nil:
			t.Errorf("%s: %v", key, r.err)
		case r.diff == "":
		case generatedDifferences[key] != "" || generatedDifferences[r.q.Name+" *"] != "":
			differ++
			if testing.Verbose() {
				t.Logf("%s: listed difference: %s", key, r.diff)
			}
		default:
			differ++
			t.Errorf("%s: Unbound and Tern differ: %s", key, r.diff)
		}
	}
	if testing.Verbose() {
		t.Logf("%d questions, %d differences", len(qs), differ)
	}
}

// generatedDifferences are the reviewed differences of the generated
// comparison, by "name TYPE" ("name *": any type), with why; each is
// also in docs/resolver-interop.md.
var generatedDifferences = map[string]string{
	"many.example.tld. A": unboundDifferences["many.example.tld. A"].why,
	"gen-nx.alias.example.tld. CNAME": "A CNAME question for a name below a DNAME: Tern answers the DNAME and the CNAME it " +
		"synthesizes, NOERROR, and stops there: the synthesized CNAME is the CNAME at the name, which a CNAME question " +
		"matches (RFC 1034 §4.3.2 step 3a: a CNAME is followed only when QTYPE does not match CNAME), as Knot's and " +
		"Tern's authoritative answers do (internal/difftest). Unbound follows it to the target and answers NXDOMAIN, " +
		"reading RFC 6672 §3.2 step 3C (substitute and go back to step 1) as applying whatever the QTYPE. Debatable.",
	"l0.chain12.example.tld. *": "A chain of 12 CNAME links: Tern answers SERVFAIL for every type (11 links at most, " +
		"Limits.CNAMEs; RFC 1034 §5.3.3: a resolver bounds the work of a request so that it cannot loop). Unbound " +
		"answers SERVFAIL for A too (max-query-restarts 11), but for some other types (DS, asked after A) it builds " +
		"the whole chain from its cache without counting restarts and answers it.",
}
