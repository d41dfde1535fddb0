package dnstest

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// ZoneRecords reads a zone file with miekg/dns and returns its records in
// presentation form, lowercased, sorted: what a transfer of the zone must
// hold, to compare with Records of what came over the wire.
func ZoneRecords(file, origin string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rrs []dns.RR
	zp := dns.NewZoneParser(f, origin, file)
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		rrs = append(rrs, rr)
	}
	if err := zp.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return Records(rrs), nil
}

// Records renders rrs in presentation form, lowercased, sorted.
func Records(rrs []dns.RR) []string {
	out := make([]string, len(rrs))
	for i, rr := range rrs {
		out[i] = strings.ToLower(rr.String())
	}
	sort.Strings(out)
	return out
}

// RRs parses records in presentation form (one per string), failing the
// test at the first that does not parse.
func RRs(t testing.TB, ss ...string) []dns.RR {
	t.Helper()
	var out []dns.RR
	for _, s := range ss {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		out = append(out, rr)
	}
	return out
}

// CookieOf is m's COOKIE option (RFC 7873) in hex, as miekg/dns holds
// it; "": none.
func CookieOf(m *dns.Msg) string {
	if o := m.IsEdns0(); o != nil {
		for _, e := range o.Option {
			if c, ok := e.(*dns.EDNS0_COOKIE); ok {
				return c.Cookie
			}
		}
	}
	return ""
}

// Expect checks one answer a test's worker returned: with check nil none
// is wanted (out must be nil), else out must unpack and pass check. It
// returns a copy of out to keep (nil when none), for comparing with what
// a dnstap or query log recorded.
func Expect(t testing.TB, what string, out []byte, check func(*dns.Msg) bool) []byte {
	t.Helper()
	if check == nil {
		if out != nil {
			t.Fatalf("%s: an answer", what)
		}
		return nil
	}
	m := new(dns.Msg)
	if err := m.Unpack(out); err != nil || !check(m) {
		t.Fatalf("%s: answer %v (%v)", what, m, err)
	}
	return bytes.Clone(out)
}
