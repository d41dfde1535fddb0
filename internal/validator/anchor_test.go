package validator

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/zone"
)

// TestReadAnchors: DS and DNSKEY anchors (Debian's root.key holds the
// latter), by owner; the closest one above a name; errors with
// file:line.
func TestReadAnchors(t *testing.T) {
	root := RootAnchors()
	if ds := root["."]; len(ds) != 2 || ds[0].KeyTag != 20326 || ds[1].KeyTag != 38696 {
		t.Fatalf("root anchors %v", ds)
	}
	// The DNSKEY form of KSK-2017 (Debian's root.key) gives the same
	// DS as the embedded one.
	const ksk2017 = ". IN DNSKEY 257 3 8 AwEAAaz/tAm8yTn4Mfeh5eyI96WSVexTBAvkMgJzkKTOiW1vkIbzxeF3+/4RgWOq7HrxRixHlFlExOLAJr5emLvN7SWXgnLh4+B5xQlNVz8Og8kvArMtNROxVQuCaSnIDdD5LKyWbRd2n9WGe2R8PzgCmr3EgVLrjyBxWezF0jLHwVN8efS3rCj/EWgvIWgb9tarpVUDK/b58Da+sqqls3eNbuv7pr+eoZG+SrDK6nWeL3c6H5Apxz7LjVc1uTIdsIXxuOLYA4/ilBmSVIzuDWfdRUfhHdY6+cn8HFRm+2hM8AnXGXws9555KrUB5qihylGa8subX2Nn6UwNR1AkUTV74bU=\n"
	a, err := ReadAnchors(strings.NewReader(ksk2017+"example. IN DS 1 13 2 "+strings.Repeat("AB", 32)+"\n"), "anchors")
	if err != nil {
		t.Fatal(err)
	}
	if ds := a["."]; len(ds) != 1 || !strings.EqualFold(ds[0].Digest, root["."][0].Digest) {
		t.Errorf("DNSKEY anchor as DS: %v, want %v", ds, root["."][0])
	}
	for name, want := range map[string]string{"www.example.": "example.", "EXAMPLE.": "example.", "org.": "."} {
		if got, _ := a.Closest(name); got != want {
			t.Errorf("Closest(%s) = %q, want %q", name, got, want)
		}
	}
	if got, ds := (Anchors{"example.": nil}).Closest("org."); got != "" || ds != nil {
		t.Errorf("no anchor above org.: %q", got)
	}
	for _, tc := range []struct{ text, err string }{
		{". IN DS 1 8 2 AB\n. IN A 192.0.2.1\n", "anchors: . A: a trust anchor is a DS or DNSKEY record"},
		{". IN DNSKEY 1 3 8 AwEAAQ==\n", "anchors: DNSKEY"},
		{"", "anchors: no trust anchor in it"},
		{". IN DS 1 8 2 AB\n. IN DS bad\n", "anchors: dns: bad DS KeyTag: \"bad\" at line: 2:"},
	} {
		if _, err := ReadAnchors(strings.NewReader(tc.text), "anchors"); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: %v, want %q", tc.text, err, tc.err)
		}
	}
}

// TestRealRootZone replays the real root zone of 2023-05-11
// (../shared/data/root.zone), served by Tern's authoritative engine, at
// a clock inside its signatures' window: its keys validate from the
// embedded anchors (KSK-2017), and every TLD's delegation is proved:
// its DS RRset validates, or its absence does (an unsigned TLD).
func TestRealRootZone(t *testing.T) {
	const path = "../../../shared/data/root.zone"
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("the real root zone: %v", err)
	}
	defer f.Close()
	zn, err := zone.Load(path, ".")
	if err != nil {
		t.Fatal(err)
	}
	z := &signedZone{worker: auth.New(zone.NewSet(zn), auth.Options{}).NewWorker(true, 0)}
	v := New(Options{Now: func() time.Time { return time.Date(2023, 5, 15, 0, 0, 0, 0, time.UTC) }})
	m := z.ask(t, ".", dns.TypeDNSKEY)
	keys, sigs := rrsetOf[*dns.DNSKEY](m.Answer, ".", dns.TypeDNSKEY)
	r, zoneKeys := v.VerifyKeys(".", keys, sigs, RootAnchors()["."], &Work{})
	if !r.Secure() {
		t.Fatalf("root keys: %v", r)
	}
	// The TLDs: the owners of the root's NS RRsets below the apex.
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	tlds := map[string]bool{}
	zp := dns.NewZoneParser(f, ".", path)
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		if h := rr.Header(); h.Rrtype == dns.TypeNS && h.Name != "." {
			tlds[h.Name] = true
		}
	}
	signed, unsigned := 0, 0
	for tld := range tlds {
		m := z.ask(t, tld, dns.TypeDS)
		w := &Work{}
		if ds, sigs := rrsetOf[dns.RR](m.Answer, tld, dns.TypeDS); len(ds) > 0 {
			if r, _ := v.VerifyRRset(ds, sigs, zoneKeys, ".", w); !r.Secure() {
				t.Errorf("%s DS: %v", tld, r)
			}
			signed++
			continue
		}
		for _, rr := range denials(m.Ns) {
			nrrs, nsigs := rrsetOf[dns.RR](m.Ns, rr.Header().Name, dns.TypeNSEC)
			if r, _ := v.VerifyRRset(nrrs, nsigs, zoneKeys, ".", w); !r.Secure() {
				t.Errorf("%s: NSEC %s: %v", tld, rr.Header().Name, r)
			}
		}
		if r := v.ProveDenial(NoData, tld, dns.TypeDS, ".", denials(m.Ns), w); !r.Secure() {
			t.Errorf("%s: no DS: %v", tld, r)
		}
		unsigned++
	}
	t.Logf("%d TLDs: %d with a DS that validates, %d proved unsigned", len(tlds), signed, unsigned)
	if signed < 1000 || unsigned < 50 {
		t.Errorf("%d signed and %d unsigned TLDs: the root zone of 2023 has about 1350 and 100", signed, unsigned)
	}
}

// TestParent: a name's parent, the root's being the root (parent of a
// TLD once came out empty, and Closest looped on it).
func TestParent(t *testing.T) {
	for _, c := range [][2]string{{"org.", "."}, {".", "."}, {"a.b.", "b."}, {`a\.b.c.`, "c."}} {
		if got := parent(c[0]); got != c[1] {
			t.Errorf("parent(%q) = %q, want %q", c[0], got, c[1])
		}
	}
}
