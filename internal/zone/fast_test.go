package zone

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// dump prints everything a compiled zone serves from, so two zones can
// be compared: every node with its flags and links, every RRset's wire
// form, signatures and additional targets, and the negative-answer SOA.
func dump(z *Zone) string {
	var b strings.Builder
	fmt.Fprintf(&b, "records %d names %d serial %d negttl %d negsoa %x\n", z.Records, z.Names, z.Serial, z.NegTTL, z.NegSOA)
	name := func(n *Node) string {
		if n == nil {
			return "-"
		}
		return hex.EncodeToString(n.Name)
	}
	set := func(s *RRset) {
		fmt.Fprintf(&b, "  type %d ttl %d count %d wire %x\n", s.Type, s.TTL, s.Count, s.Wire)
		if sigs, ok := s.Sigs(); ok {
			fmt.Fprintf(&b, "   sigs ttl %d count %d wire %x\n", sigs.TTL, sigs.Count, sigs.Wire)
		}
		for _, t := range s.Additional() {
			fmt.Fprintf(&b, "   additional %s\n", name(t))
		}
	}
	var keys []string
	z.Nodes(func(n *Node) { keys = append(keys, string(n.Name)) })
	sort.Strings(keys)
	for _, k := range keys {
		n := z.Lookup([]byte(k))
		fmt.Fprintf(&b, "%s flags %d parent %s cut %s wild %s nsec3 %s\n", name(n), n.Flags, name(n.Parent), name(n.Cut), name(n.WildcardChild), name(n.NSEC3))
		if n.NSEC3 != nil {
			for i := range n.NSEC3.RRsets {
				set(&n.NSEC3.RRsets[i])
			}
		}
		for i := range n.RRsets {
			set(&n.RRsets[i])
		}
	}
	return b.String()
}

// compareReaders reads text with both readers. When the fast reader
// accepts it, miekg/dns must build the very same zone; it reports
// whether the fast reader accepted.
func compareReaders(t *testing.T, name, origin string, text []byte) bool {
	t.Helper()
	fast, ferr := readFast(bytes.NewReader(text), name, origin, 0)
	full, err := readFull(bytes.NewReader(text), name, origin, 0)
	if ferr != nil {
		if !errors.Is(ferr, errSlow) {
			t.Fatalf("%s: fast reader failed with %v instead of declining", name, ferr)
		}
		return false
	}
	if err != nil {
		t.Fatalf("%s: the fast reader accepted what miekg/dns refuses (%v)", name, err)
	}
	if a, b := dump(fast), dump(full); a != b {
		al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
		for i := 0; i < len(al) && i < len(bl); i++ {
			if al[i] != bl[i] {
				t.Fatalf("%s: readers differ at dump line %d:\nfast: %s\nfull: %s", name, i, al[i], bl[i])
			}
		}
		t.Fatalf("%s: readers differ in length: %d and %d lines", name, len(al), len(bl))
	}
	return true
}

// TestFastReaderMatchesFull: on every zone file of the repository the
// fast reader either declines or builds exactly miekg/dns's zone, and
// on the ordinary ones (the demo, the test zones, signed NSEC and NSEC3
// zones, the root zone) it must not decline, or it would be dead code.
func TestFastReaderMatchesFull(t *testing.T) {
	cases := []struct {
		path, origin string
		mustAccept   bool
	}{
		{"../../cmd/tern/demo.zone", "example.test.", true},
		{"../../examples/example.com.zone", "example.com.", true},
		{"../auth/testdata/example.test.zone", "example.test.", false},
		{"../auth/testdata/child.example.test.zone", "child.example.test.", true},
		{"../auth/testdata/signed.test.zone", "signed.test.", true},
		{"../auth/testdata/nsec3.test.zone", "nsec3.test.", true},
		{"../difftest/testdata/gen.test.zone", "gen.test.", false},
		{"../difftest/testdata/big.test.zone", "big.test.", false},
		{"../difftest/testdata/root.zone", ".", true},
		{"../zonedb/testdata/auto.test.zone", "auto.test.", false},
		{"../../../shared/data/root.zone", ".", true},
	}
	for _, c := range cases {
		text, err := os.ReadFile(c.path)
		if errors.Is(err, os.ErrNotExist) && strings.Contains(c.path, "shared") {
			t.Logf("%s: not on this machine", c.path)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		accepted := compareReaders(t, filepath.Base(c.path), c.origin, text)
		t.Logf("%s: fast reader accepted: %v", c.path, accepted)
		if c.mustAccept && !accepted {
			t.Errorf("%s: the fast reader declined an ordinary zone", c.path)
		}
	}
}

// TestFastReaderCases: syntax the fast reader handles itself, hands one
// record of to miekg/dns, or declines, each compared with miekg/dns.
func TestFastReaderCases(t *testing.T) {
	const soa = "@ 3600 IN SOA ns1 host 1 2 3 4 5\n@ NS ns1\nns1 A 192.0.2.1\n"
	cases := []struct {
		name, text string
		accept     bool
	}{
		{"plain", "$TTL 300\n" + soa + "a A 192.0.2.2\n", true},
		{"no $TTL: last TTL", soa + "a 60 A 192.0.2.2\nb A 192.0.2.3\n", true},
		{"$TTL wins over later TTLs", "$TTL 300\n" + soa + "a 60 A 192.0.2.2\nb A 192.0.2.3\n", true},
		{"class before TTL", "$TTL 300\n" + soa + "a IN 60 A 192.0.2.2\n", true},
		{"inherited owner", "$TTL 300\n" + soa + "a A 192.0.2.2\n\tAAAA 2001:db8::1\n  MX 10 a\n", true},
		{"parentheses and comments", "$TTL 300\n@ IN SOA ns1 host ( 1 ; serial\n 2 3 4\n 5 ) ; end\n@ NS ns1\nns1 A 192.0.2.1\n", true},
		{"$ORIGIN relative and absolute", "$TTL 300\n" + soa + "$ORIGIN sub\nx A 192.0.2.9\n$ORIGIN example.test.\ny A 192.0.2.8\n", true},
		{"upper-case names", "$TTL 300\n" + soa + "WWW.Example.TEST. CNAME Target.example.test.\n", true},
		{"TXT", "$TTL 300\n" + soa + "t TXT \"v=spf1 -all\" \"second; (part)\"\n", true},
		{"TXT unquoted goes to miekg", "$TTL 300\n" + soa + "t TXT word other\n", true},
		{"TXT empty goes to miekg", "$TTL 300\n" + soa + "t TXT \"\"\n", true},
		{"SRV and unknown types go to miekg", "$TTL 300\n" + soa + "_s._tcp SRV 1 2 3 ns1\nc CAA 0 issue \"ca.test\"\nu TYPE65280 \\# 2 0102\n", true},
		{"SSHFP and HINFO go to miekg", "$TTL 300\n" + soa + "h SSHFP 1 1 0123456789abcdef\nh HINFO \"cpu\" \"os\"\nr TYPE99 \\# 0\n", true},
		{"TYPE mnemonic", "$TTL 300\n" + soa + "g TYPE1 192.0.2.7\n", true},
		{"IPv4 oddities go to miekg", "$TTL 300\n" + soa + "a A 192.0.2.010\n", false},
		{"mapped AAAA", "$TTL 300\n" + soa + "a AAAA ::ffff:192.0.2.1\n", true},
		{"SOA timers with units", "$TTL 1h\n@ IN SOA ns1 host 1 1h 30m 1w 1d\n@ NS ns1\nns1 A 192.0.2.1\n", true},
		{"DS DNSKEY RRSIG NSEC", "$TTL 300\n" + soa +
			"sub NS ns1\nsub DS 12345 13 2 ( 0123456789ABCDEF0123456789ABCDEF\n 0123456789abcdef0123456789abcdef )\n" +
			"@ DNSKEY 257 3 13 ( mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpV\n XckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ== )\n" +
			"@ RRSIG SOA 13 2 3600 20360101000000 20260101000000 12345 example.test. ( AQID\n BAU= )\n" +
			"@ NSEC a.example.test. NS SOA RRSIG NSEC DNSKEY TYPE65534\n" +
			"a NSEC @ A RRSIG NSEC\n", true},
		{"RRSIG epoch times", "$TTL 300\n" + soa + "@ RRSIG SOA 13 2 3600 2082758400 1767225600 1 example.test. AQID\n", true},
		{"NSEC types out of order go to miekg", "$TTL 300\n" + soa + "@ NSEC @ SOA NS\n", true},
		{"NSEC3", "$TTL 300\n" + soa +
			"0p9mhaveqvm6t7vbl5lop2u3t2rp3tom NSEC3 1 1 0 - ( 0P9MHAVEQVM6T7VBL5LOP2U3T2RP3TON A RRSIG )\n" +
			"0p9mhaveqvm6t7vbl5lop2u3t2rp3ton NSEC3 1 0 0 AABB 0P9MHAVEQVM6T7VBL5LOP2U3T2RP3TOM\n" +
			"@ NSEC3PARAM 1 0 0 -\n", true},
		{"duplicates are one record", "$TTL 300\n" + soa + "a A 192.0.2.2\na A 192.0.2.2\n", true},
		{"mixed TTLs", "$TTL 300\n" + soa + "a 60 A 192.0.2.2\na 30 A 192.0.2.3\n", true},
		{"escapes in RDATA go to miekg", "$TTL 300\n" + soa + "t TXT \"a\\\"b\" \"c\\059\"\nn CNAME a\\.b\n", true},
		{"escape declines", "$TTL 300\n" + soa + "a\\.b A 192.0.2.2\n", false},
		{"$INCLUDE declines", "$TTL 300\n" + soa + "$INCLUDE other.zone\n", false},
		{"$GENERATE declines", "$TTL 300\n" + soa + "$GENERATE 1-3 h$ A 192.0.2.$\n", false},
		{"missing TTL declines", "@ SOA ns1 host 1 2 3 4 5\n", false},
		{"error declines", "$TTL 300\n" + soa + "a A 300.1.1.1\n", false},
		{"non-IN class declines", "$TTL 300\n" + soa + "a CH A 192.0.2.2\n", false},
		{"outside the zone declines", "$TTL 300\n" + soa + "a.other. A 192.0.2.2\n", false},
		{"CNAME and other data declines", "$TTL 300\n" + soa + "a CNAME b\na A 192.0.2.2\n", false},
		{"open parenthesis declines", "$TTL 300\n" + soa + "a A ( 192.0.2.2\n", false},
		// The read buffer of a small zone is 4 KiB: longer lines are
		// gathered, up to fastMaxLine.
		{"line longer than the read buffer", "$TTL 300\n" + soa + "t TXT" + strings.Repeat(" \""+strings.Repeat("x", 200)+"\"", 40) + "\n", true},
		{"long line in parentheses", "$TTL 300\n" + soa + "t TXT ( \"a\"\n" + strings.Repeat(" \""+strings.Repeat("y", 250)+"\"", 30) + "\n \"z\" )\n", true},
		{"line over fastMaxLine declines", "$TTL 300\n" + soa + ";" + strings.Repeat("c", fastMaxLine+10) + "\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := compareReaders(t, c.name, "example.test.", []byte(c.text))
			if got != c.accept {
				t.Errorf("fast reader accepted = %v, want %v", got, c.accept)
			}
		})
	}
}

// TestFastReaderRootOrigin: names made absolute against ".".
func TestFastReaderRootOrigin(t *testing.T) {
	text := "$TTL 300\n. SOA a.root. b.root. 1 2 3 4 5\n. NS a.root.\n$ORIGIN root.\na A 192.0.2.1\n$ORIGIN .\ntld NS a.root.\n"
	if !compareReaders(t, "root", ".", []byte(text)) {
		t.Error("the fast reader declined a zone at the root")
	}
}

// FuzzFastReader: whatever the input, the fast reader declines it or
// builds the zone miekg/dns builds.
func FuzzFastReader(f *testing.F) {
	f.Add("$TTL 300\n@ SOA ns1 host 1 2 3 4 5\n@ NS ns1\nns1 A 192.0.2.1\n")
	f.Add("@ 60 IN SOA ns1 host ( 1 2 3 4 5 )\n@ NS ns1\n\tMX 10 ns1\nns1 A 192.0.2.1\nt TXT \"a b\" \"c\"\n")
	f.Add("$TTL 300\n@ SOA ns1 host 1 2 3 4 5\n@ NS ns1\nns1 A 192.0.2.1\n@ NSEC ns1 A NS SOA RRSIG\n@ RRSIG SOA 13 2 300 20360101000000 20260101000000 1 example.test. AQID\n")
	f.Add("$TTL 300\n@ SOA ns1 host 1 2 3 4 5\n@ NS ns1\nns1 A 192.0.2.1\nsub NS ns1\nsub DS 1 13 2 0123ABCD\nh NSEC3 1 1 0 - 0P9MHAVEQVM6T7VBL5LOP2U3T2RP3TOM A\n")
	f.Add("$ORIGIN example.test.\n$TTL 1h\n@ SOA ns1 host 1 1h 1h 1w 1d\n@ NS ns1.\nns1. A 1.2.3.4\nx AAAA ::1\n")
	f.Fuzz(func(t *testing.T, text string) {
		if strings.Contains(text, "$INCLUDE") || strings.Contains(text, "$GENERATE") {
			return // no file system access; $GENERATE ranges can be huge
		}
		compareReaders(t, "fuzz.zone", "example.test.", []byte(text))
	})
}

// TestSigTime: the fast RRSIG time conversion agrees with
// dns.StringToTime wherever it answers, across eras of serial arithmetic.
func TestSigTime(t *testing.T) {
	seen := 0
	for _, y := range []int{1970, 1999, 2000, 2024, 2026, 2036, 2037, 2038, 2100, 2106, 2107, 2200, 9999} {
		for m := 1; m <= 12; m++ {
			for _, d := range []int{1, 15, 28, 29, 31} {
				s := fmt.Sprintf("%04d%02d%02d%02d%02d%02d", y, m, d, (y+d)%24, (m*7)%60, (d*13)%60)
				want, werr := dns.StringToTime(s)
				got, ok := sigTime([]byte(s))
				if !ok {
					continue
				}
				seen++
				if werr != nil || got != want {
					t.Fatalf("%s: sigTime %d, StringToTime %d (%v)", s, got, want, werr)
				}
			}
		}
	}
	if seen < 400 {
		t.Fatalf("sigTime answered only %d times", seen)
	}
	for _, s := range []string{"2026133101000000", "20261301000000", "20260230000000", "2026010100000", "20260101240000", "2026010100006x"} {
		if _, ok := sigTime([]byte(s)); ok {
			t.Errorf("%s: sigTime accepted it", s)
		}
	}
}
