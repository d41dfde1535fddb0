package difftest

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/miekg/dns"
)

// AllowEntry is one reviewed difference between Tern and Knot where Tern
// is right (or both are): which queries it covers, which fields may
// differ, and the RFC text that justifies it.
type AllowEntry struct {
	ID string
	// Match holds conditions all of which a query must meet: name (a
	// path.Match glob on the lowercased QNAME), type, net, edns ("none" or
	// a payload size), category, mutate (the malformation's name) and
	// opcode (QUERY, NOTIFY, UPDATE ...).
	Match map[string]string
	// Fields are the Difference fields the entry tolerates.
	Fields  []string
	Differs string
	RFC     string
	// Superset, set by "require: superset", tolerates a section
	// difference only if the tested server's section holds every RRset
	// of the reference's: it may add, never drop or change.
	Superset bool
	// SameOwner, set by "require: same-owner", tolerates an answer
	// section difference only if every RRset the tested server put there
	// is owned by the QNAME, so that records reached by following a
	// CNAME or DNAME are never excused.
	SameOwner bool
	// BothTC, set by "require: both-tc", tolerates a difference only if
	// both responses have TC set: a truncated answer is a request to
	// retry over TCP, and its content is not used (RFC 2181 section 9).
	BothTC bool
	// Line is where the entry starts in the file, for messages.
	Line int
}

// Allowlist is the parsed allowlist.txt.
type Allowlist struct {
	Entries []*AllowEntry
}

// isMatchKey reports whether k is a condition key an entry's match line
// may use.
func isMatchKey(k string) bool {
	switch k {
	case "name", "type", "net", "edns", "category", "mutate", "opcode":
		return true
	}
	return false
}

// LoadAllowlist parses the allow-list file at p. The format is blocks of
// "key: value" lines separated by blank lines; '#' starts a comment line.
// Every entry must have id, match, fields, differs and rfc, so that no
// difference is tolerated without a stated reason.
func LoadAllowlist(p string) (*Allowlist, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("open allow-list: %w", err)
	}
	defer f.Close()
	a := &Allowlist{}
	var cur *AllowEntry
	finish := func() error {
		if cur == nil {
			return nil
		}
		e := cur
		cur = nil
		if e.ID == "" || len(e.Match) == 0 || len(e.Fields) == 0 || e.Differs == "" || e.RFC == "" {
			return fmt.Errorf("%s:%d: entry %q needs id, match, fields, differs and rfc", p, e.Line, e.ID)
		}
		for _, x := range a.Entries {
			if x.ID == e.ID {
				return fmt.Errorf("%s:%d: duplicate entry id %q", p, e.Line, e.ID)
			}
		}
		a.Entries = append(a.Entries, e)
		return nil
	}
	sc := bufio.NewScanner(f)
	n := 0
	last := ""
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			continue
		}
		if line == "" {
			if err := finish(); err != nil {
				return nil, err
			}
			continue
		}
		if cur == nil {
			cur = &AllowEntry{Match: map[string]string{}, Line: n}
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok || strings.ContainsAny(key, " \t") {
			// A continuation of the previous value (long RFC quotes).
			switch last {
			case "differs":
				cur.Differs += " " + line
			case "rfc":
				cur.RFC += " " + line
			default:
				return nil, fmt.Errorf("%s:%d: want \"key: value\", got %q", p, n, line)
			}
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		last = key
		switch key {
		case "id":
			cur.ID = val
		case "match":
			for _, cond := range strings.Fields(val) {
				k, v, ok := strings.Cut(cond, "=")
				if !ok || !isMatchKey(k) {
					return nil, fmt.Errorf("%s:%d: bad match condition %q", p, n, cond)
				}
				if k == "type" {
					if _, ok := dns.StringToType[strings.ToUpper(v)]; !ok {
						return nil, fmt.Errorf("%s:%d: unknown type %q", p, n, v)
					}
				}
				if k == "name" {
					if _, err := path.Match(v, ""); err != nil {
						return nil, fmt.Errorf("%s:%d: bad name glob %q: %w", p, n, v, err)
					}
				}
				cur.Match[k] = strings.ToLower(v)
			}
		case "fields":
			cur.Fields = strings.Fields(val)
		case "differs":
			cur.Differs = val
		case "rfc":
			cur.RFC = val
		case "require":
			for _, r := range strings.Fields(val) {
				switch r {
				case "superset":
					cur.Superset = true
				case "same-owner":
					cur.SameOwner = true
				case "both-tc":
					cur.BothTC = true
				default:
					return nil, fmt.Errorf("%s:%d: unknown requirement %q (want superset, same-owner or both-tc)", p, n, r)
				}
			}
		default:
			return nil, fmt.Errorf("%s:%d: unknown key %q", p, n, key)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read allow-list %s: %w", p, err)
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return a, nil
}

// Allowed returns the entry that tolerates difference d for query q, if
// any. want and got are the two normalized responses, for the entries'
// requirements.
func (a *Allowlist) Allowed(q Query, d Difference, wantR, gotR Response) *AllowEntry {
	want, got := sectionOf(wantR, d.Field), sectionOf(gotR, d.Field)
	for _, e := range a.Entries {
		if !e.matches(q) || !contains(e.Fields, d.Field) {
			continue
		}
		if e.BothTC && !(hasFlag(wantR, "tc") && hasFlag(gotR, "tc")) {
			continue
		}
		if e.Superset && !isSuperset(got, want) {
			continue
		}
		if e.SameOwner && d.Field == "answer" && !allOwnedBy(got, q.Name) {
			continue
		}
		return e
	}
	return nil
}

// hasFlag reports whether header flag f is set in r.
func hasFlag(r Response, f string) bool { return contains(strings.Fields(r.Flags), f) }

// sectionOf returns the named section of r, or nil for a field that is
// not a section.
func sectionOf(r Response, name string) []string {
	switch name {
	case "answer":
		return r.Answer
	case "authority":
		return r.Authority
	case "additional":
		return r.Additional
	}
	return nil
}

// allOwnedBy reports whether every rendered RRset is owned by name.
func allOwnedBy(rrsets []string, name string) bool {
	prefix := strings.ToLower(presentation(name)) + " "
	for _, s := range rrsets {
		if !strings.HasPrefix(s, prefix) {
			return false
		}
	}
	return true
}

// presentation returns name as miekg/dns renders names it unpacked, so
// that equal names compare equal whatever escapes they were written with
// (sp\032ace and sp\ ace are one label).
func presentation(name string) string {
	buf := make([]byte, 256)
	n, err := dns.PackDomainName(dns.Fqdn(name), buf, 0, nil, false)
	if err != nil {
		return name
	}
	out, _, err := dns.UnpackDomainName(buf[:n], 0)
	if err != nil {
		return name
	}
	return out
}

// isSuperset reports whether every element of sub is in super.
func isSuperset(super, sub []string) bool {
	for _, s := range sub {
		if !contains(super, s) {
			return false
		}
	}
	return true
}

func (e *AllowEntry) matches(q Query) bool {
	for k, v := range e.Match {
		var got string
		switch k {
		case "name":
			ok, _ := path.Match(v, strings.ToLower(q.Name))
			if !ok {
				return false
			}
			continue
		case "type":
			got = strings.ToLower(typeString(q.Type))
		case "net":
			got = q.Net
		case "edns":
			got = "none"
			if q.EDNS != 0 {
				got = strconv.Itoa(int(q.EDNS))
			}
		case "category":
			got = q.Category
		case "mutate":
			got = q.Mutate
		case "opcode":
			got = strings.ToLower(dns.OpcodeToString[q.Opcode])
		}
		if got != v {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
