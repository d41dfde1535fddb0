package zone

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestWarnings: what Knot, NSD and BIND load with a warning loads here
// too, with a warning naming file:line, through both readers.
func TestWarnings(t *testing.T) {
	const sigHead = "$ORIGIN example.test.\n$TTL 300\n@ SOA ns1 host 1 2 3 4 60\n@ NS ns1\nns1 A 192.0.2.1\n" +
		"@ DNSKEY 257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==\n"
	// An RRSIG of www's A with the given expiration and inception.
	sig := func(exp, inc string) string {
		return "www RRSIG A 13 3 300 " + exp + " " + inc + " 12345 example.test. bWVudGlvbmVkIGJ5IG5vIHZhbGlkYXRvciBhdCBhbGwsIGl0IGlzIGEgdGVzdCBvbmx5IGFuZCBzby4uLg==\n"
	}
	tests := []struct {
		name, text string
		want       []string // each must be one warning's text
		none       bool     // no warning at all
	}{
		{"outside the zone", head + "www.other.test. A 192.0.2.9\nwww A 192.0.2.8\n",
			[]string{"t.zone:6: www.other.test. is outside the zone example.test.: record ignored"}, false},
		{"TTLs differ", head + "x 120 A 192.0.2.10\nx 60 A 192.0.2.11\n",
			[]string{"t.zone:7: TTL 60 differs from the TTL 120 of the A RRset (first record at t.zone:6): the set is served with the lowest (RFC 2181 §5.2)"}, false},
		{"NS target without address", head + "@ NS ns2\n",
			[]string{"t.zone:4: NS target ns2.example.test. has no A or AAAA record in the zone"}, false},
		{"MX target without address", head + "@ MX 10 mail\nmail TXT x\n",
			[]string{"t.zone:6: MX target mail.example.test. has no A or AAAA record in the zone"}, false},
		{"NS without glue", head + "sub NS ns.sub\n",
			[]string{"t.zone:6: NS target ns.sub.example.test. is below a zone cut and has no glue (A or AAAA) record"}, false},
		{"expired signatures", sigHead + "www A 192.0.2.7\n" + sig("20000201000000", "20000101000000"),
			[]string{"t.zone:8: the RRSIGs of www.example.test. A have all expired: validators will find it bogus (RFC 4035 §5.3.1)"}, false},
		{"signatures not valid yet", sigHead + "www A 192.0.2.7\n" + sig("20500201000000", "20500101000000"),
			[]string{"t.zone:8: the RRSIGs of www.example.test. A are not valid yet (inception in the future): validators will find it bogus (RFC 4035 §5.3.1)"}, false},
		// What needs no warning gets none.
		{"MX target in a child zone", head + "@ MX 10 mail.sub\nsub NS ns1\n", nil, true},
		{"external targets", head + "@ MX 10 mail.other.test.\n@ NS ns.other.test.\n", nil, true},
		{"wildcard with an address", head + "@ MX 10 mail\n* A 192.0.2.4\n", nil, true},
		{"glue present", head + "sub NS ns.sub\nns.sub AAAA 2001:db8::1\n", nil, true},
		{"signatures valid", sigHead + "www A 192.0.2.7\n" + sig("20500201000000", "20200101000000") + sig("20000201000000", "20000101000000"), nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			full, err := compileText(t, "example.test", tc.text)
			if err != nil {
				t.Fatalf("the zone is refused: %v", err)
			}
			fast, err := Read(strings.NewReader(tc.text), "t.zone", "example.test")
			if err != nil {
				t.Fatalf("Read refuses the zone: %v", err)
			}
			for _, z := range []*Zone{full, fast} {
				got := warningList(z.Warnings)
				if tc.none && got != "" {
					t.Errorf("unexpected warnings:\n%s", got)
				}
				for _, w := range tc.want {
					if !strings.Contains(got, w+"\n") {
						t.Errorf("warnings\n%slack %q", got, w)
					}
				}
			}
		})
	}
}

// TestOutsideRecordIgnored: the zone is served without the record.
func TestOutsideRecordIgnored(t *testing.T) {
	z, err := compileText(t, "example.test", head+"www.other.test. A 192.0.2.9\n")
	if err != nil {
		t.Fatal(err)
	}
	if z.Records != 3 {
		t.Errorf("%d records, want 3 (the outside one left out)", z.Records)
	}
}

// TestErrorCarriesWarnings: a refused zone's warnings reach 'tern check'.
func TestErrorCarriesWarnings(t *testing.T) {
	z, err := compileText(t, "example.test", head+"www.other.test. A 192.0.2.9\nw CNAME ns1\nw TXT x\n")
	var e *Error
	if z != nil || !errors.As(err, &e) {
		t.Fatalf("want a *zone.Error, got %v %T", z, err)
	}
	if !strings.Contains(err.Error(), "t.zone:8: TXT record beside a CNAME") {
		t.Errorf("error %q", err)
	}
	if ws := Warnings(z, err); len(ws) != 1 || ws[0].Line != 6 || ws[0].File != "t.zone" {
		t.Errorf("warnings %v", ws)
	}
}

// TestWarningsBounded: a zone with a warning per record keeps the first
// maxWarnings and counts the rest.
func TestWarningsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(head)
	for range maxWarnings + 5 {
		b.WriteString("x.other.test. A 192.0.2.9\n")
	}
	z, err := compileText(t, "example.test", b.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(z.Warnings) != maxWarnings+1 || !strings.HasSuffix(z.Warnings[maxWarnings].Msg, "5 more warnings") {
		t.Errorf("%d warnings, last %v", len(z.Warnings), z.Warnings[len(z.Warnings)-1])
	}
}

// warningList renders warnings one a line.
func warningList(ws []Warning) string {
	var b strings.Builder
	for _, w := range ws {
		b.WriteString(w.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// TestCompareVersions: a reload that lowers the serial, or changes the
// content under the same serial, is warned about at the new SOA's line.
func TestCompareVersions(t *testing.T) {
	const signed = "$ORIGIN example.test.\n$TTL 300\n@ SOA ns1 host %d 2 3 4 60\n@ NS ns1\nns1 A 192.0.2.1\n" +
		"@ DNSKEY 257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==\n" +
		"www A %s\n"
	load := func(serial uint32, addr string) *Zone {
		t.Helper()
		z, err := compileText(t, "example.test", fmt.Sprintf(signed, serial, addr))
		if err != nil {
			t.Fatal(err)
		}
		return z
	}
	tests := []struct {
		name     string
		old, new *Zone
		want     string // "" for none
	}{
		{"serial up", load(5, "192.0.2.7"), load(6, "192.0.2.8"), ""},
		{"same zone reloaded", load(5, "192.0.2.7"), load(5, "192.0.2.7"), ""},
		{"content changed, serial kept", load(5, "192.0.2.7"), load(5, "192.0.2.8"),
			"t.zone:3: the zone changed but its SOA serial 5 did not: secondaries keep the old version (RFC 1034 §4.3.5)"},
		{"serial down", load(6, "192.0.2.7"), load(5, "192.0.2.7"),
			"t.zone:3: the SOA serial went down from 6 to 5 (RFC 1982): secondaries and caches keep the old version"},
		{"serial wraps up", load(0xfffffff0, "192.0.2.7"), load(3, "192.0.2.8"), ""},
		{"first load", nil, load(5, "192.0.2.7"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.TrimSuffix(warningList(CompareVersions(tc.old, tc.new)), "\n")
			if got != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestWarningsCountedOnce: once the kept warnings are full, the count of
// the others counts only warnings. An MX target a wildcard with an
// address covers deserves none; it used to be counted as one.
func TestWarningsCountedOnce(t *testing.T) {
	var b strings.Builder
	b.WriteString(head)
	for range maxWarnings + 5 {
		b.WriteString("x.other.test. A 192.0.2.9\n")
	}
	b.WriteString("@ MX 10 mail.w\n@ MX 20 smtp.w\n*.w A 192.0.2.4\n")
	z, err := compileText(t, "example.test", b.String())
	if err != nil {
		t.Fatal(err)
	}
	if last := z.Warnings[len(z.Warnings)-1].Msg; !strings.HasSuffix(last, " 5 more warnings") {
		t.Errorf("last warning %q, want 5 more", last)
	}
}
