package validator

import (
	"os"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/zone"
)

// TestAnchors: the embedded root anchors (KSK-2017, KSK-2024); the
// closest anchor above a name.
func TestAnchors(t *testing.T) {
	root := RootAnchors()
	if ds := root["."]; len(ds) != 2 || ds[0].KeyTag != 20326 || ds[1].KeyTag != 38696 {
		t.Fatalf("root anchors %v", ds)
	}
	a := Anchors{".": root["."], "example.": {{KeyTag: 1}}}
	for name, want := range map[string]string{"www.example.": "example.", "EXAMPLE.": "example.", "org.": "."} {
		if got, _ := a.Closest(name); got != want {
			t.Errorf("Closest(%s) = %q, want %q", name, got, want)
		}
	}
	if got, ds := (Anchors{"example.": nil}).Closest("org."); got != "" || ds != nil {
		t.Errorf("no anchor above org.: %q", got)
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
