package dnssec

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
)

// testZone covers the cases signers get wrong: a signed delegation (DS),
// unsigned delegations with glue and names below the cut, a delegation
// whose glue is at the cut itself, empty non-terminals (ENT), a wildcard, a
// delegation below an ENT and mixed-case owners.
const testZone = `$ORIGIN example.com.
$TTL 3600
@ IN SOA ns1 hostmaster 2026010101 7200 3600 1209600 300
@ NS ns1
@ NS ns2
@ MX 10 mail
ns1 A 192.0.2.1
ns2 AAAA 2001:db8::2
mail A 192.0.2.3
www 600 A 192.0.2.4
www 600 A 192.0.2.5
*.wild TXT "wildcard"
a.b.c.ent A 192.0.2.9
secure NS ns.secure
secure DS 12345 13 2 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
ns.secure A 192.0.2.10
insecure NS ns.insecure
insecure NS ns1.example.net.
ns.insecure A 192.0.2.11
deep.insecure A 192.0.2.12
x.y.unsigned-ent NS ns.other.net.
cut NS cut
cut A 192.0.2.13
Upper TXT "case"
dn DNAME example.net.
`

var testNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func parseZone(t testing.TB, text, origin string) []dns.RR {
	t.Helper()
	zp := dns.NewZoneParser(strings.NewReader(text), origin, "test")
	var rrs []dns.RR
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		rrs = append(rrs, rr)
	}
	if err := zp.Err(); err != nil {
		t.Fatalf("parse zone: %v", err)
	}
	return rrs
}

func testKeys(t testing.TB, alg uint8) []*Key {
	t.Helper()
	keys, created, err := EnsureKeys(t.TempDir(), "example.com.", alg, 3600, testNow)
	if err != nil || !created || len(keys) != 2 {
		t.Fatalf("EnsureKeys: %v created=%v n=%d", err, created, len(keys))
	}
	return keys
}

type setKey struct {
	name string
	typ  uint16
}

// groupSigned splits a signed zone into RRsets and their RRSIGs.
func groupSigned(rrs []dns.RR) (map[setKey][]dns.RR, map[setKey][]*dns.RRSIG) {
	sets := map[setKey][]dns.RR{}
	sigs := map[setKey][]*dns.RRSIG{}
	for _, rr := range rrs {
		name := dns.CanonicalName(rr.Header().Name)
		if s, ok := rr.(*dns.RRSIG); ok {
			k := setKey{name, s.TypeCovered}
			sigs[k] = append(sigs[k], s)
			continue
		}
		k := setKey{name, rr.Header().Rrtype}
		sets[k] = append(sets[k], rr)
	}
	return sets, sigs
}

// verifyInGo checks every RRSIG cryptographically against the zone's
// DNSKEYs and its validity at now.
func verifyInGo(t *testing.T, rrs []dns.RR, now time.Time) {
	t.Helper()
	sets, sigs := groupSigned(rrs)
	keys := map[uint16]*dns.DNSKEY{}
	for _, rr := range sets[setKey{"example.com.", dns.TypeDNSKEY}] {
		k := rr.(*dns.DNSKEY)
		keys[k.KeyTag()] = k
	}
	if len(keys) == 0 {
		t.Fatal("no DNSKEY at apex")
	}
	n := 0
	for k, ss := range sigs {
		set := sets[k]
		if len(set) == 0 {
			t.Errorf("RRSIG for missing RRset %s/%s", k.name, dns.TypeToString[k.typ])
			continue
		}
		for _, s := range ss {
			key := keys[s.KeyTag]
			if key == nil {
				t.Errorf("%s/%s: RRSIG by unknown key %d", k.name, dns.TypeToString[k.typ], s.KeyTag)
				continue
			}
			if err := s.Verify(key, set); err != nil {
				t.Errorf("%s/%s: RRSIG does not verify: %v", k.name, dns.TypeToString[k.typ], err)
			}
			if !s.ValidityPeriod(now) {
				t.Errorf("%s/%s: RRSIG not valid at %s", k.name, dns.TypeToString[k.typ], now)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no signatures verified")
	}
}

// runPeer runs an external verifier, skipping when it is not installed
// unless TERN_REQUIRE_PEERS=1.
func runPeer(t *testing.T, name string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("TERN_REQUIRE_PEERS") == "1" {
			t.Fatalf("%s not installed and TERN_REQUIRE_PEERS=1", name)
		}
		t.Skipf("%s not installed", name)
	}
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func writeZone(t *testing.T, rrs []dns.RR) string {
	t.Helper()
	var b strings.Builder
	for _, rr := range rrs {
		b.WriteString(rr.String())
		b.WriteByte('\n')
	}
	p := filepath.Join(t.TempDir(), "signed.zone")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSignZoneModes(t *testing.T) {
	for _, alg := range []uint8{dns.ECDSAP256SHA256, dns.ED25519} {
		keys := testKeys(t, alg)
		for _, mode := range []struct {
			name          string
			nsec3, optOut bool
		}{{"nsec", false, false}, {"nsec3", true, false}, {"nsec3-optout", true, true}} {
			t.Run(dns.AlgorithmToString[alg]+"/"+mode.name, func(t *testing.T) {
				rrs := parseZone(t, testZone, "example.com.")
				opts := Options{NSEC3: mode.nsec3, OptOut: mode.optOut, Workers: 2}
				// Sign at the real time so the external verifiers, which
				// use the wall clock, accept the validity window.
				now := time.Now()
				signed, st, err := SignZoneStats(context.Background(), rrs, "example.com.", keys, opts, now)
				if err != nil {
					t.Fatal(err)
				}
				if st.Signed == 0 || st.Reused != 0 {
					t.Errorf("stats %+v", st)
				}
				verifyInGo(t, signed, now)
				checkStructure(t, signed, mode.nsec3, mode.optOut)
				checkCanonicalOrder(t, signed)
				p := writeZone(t, signed)
				t.Run("ldns-verify-zone", func(t *testing.T) { runPeer(t, "ldns-verify-zone", p) })
				t.Run("dnssec-verify", func(t *testing.T) { runPeer(t, "dnssec-verify", "-o", "example.com", p) })
			})
		}
	}
}

// checkStructure checks what is and is not signed and which names the
// chain covers.
func checkStructure(t *testing.T, signed []dns.RR, nsec3, optOut bool) {
	t.Helper()
	sets, sigs := groupSigned(signed)
	signedSet := func(name string, typ uint16) bool { return len(sigs[setKey{name, typ}]) > 0 }
	// Authoritative data is signed; DNSKEY by the KSK only.
	for _, k := range []setKey{
		{"example.com.", dns.TypeSOA}, {"example.com.", dns.TypeNS}, {"example.com.", dns.TypeMX},
		{"www.example.com.", dns.TypeA}, {"*.wild.example.com.", dns.TypeTXT},
		{"secure.example.com.", dns.TypeDS}, {"upper.example.com.", dns.TypeTXT},
	} {
		if !signedSet(k.name, k.typ) {
			t.Errorf("%s/%s not signed", k.name, dns.TypeToString[k.typ])
		}
	}
	for _, s := range sigs[setKey{"example.com.", dns.TypeDNSKEY}] {
		if s.KeyTag != kskTag(sets) {
			t.Errorf("DNSKEY signed by non-KSK %d", s.KeyTag)
		}
	}
	for _, s := range sigs[setKey{"example.com.", dns.TypeSOA}] {
		if s.KeyTag == kskTag(sets) {
			t.Errorf("SOA signed by the KSK")
		}
	}
	// RFC 4035 §2.2: NS at a cut and glue are not signed.
	for _, k := range []setKey{
		{"secure.example.com.", dns.TypeNS}, {"insecure.example.com.", dns.TypeNS},
		{"ns.secure.example.com.", dns.TypeA}, {"ns.insecure.example.com.", dns.TypeA},
		{"deep.insecure.example.com.", dns.TypeA}, {"cut.example.com.", dns.TypeA},
		{"cut.example.com.", dns.TypeNS},
	} {
		if signedSet(k.name, k.typ) {
			t.Errorf("%s/%s signed but not authoritative", k.name, dns.TypeToString[k.typ])
		}
		if len(sets[k]) == 0 {
			t.Errorf("%s/%s missing from output", k.name, dns.TypeToString[k.typ])
		}
	}
	if !nsec3 {
		// NSEC: one per authoritative name, none for ENTs or glue.
		for _, name := range []string{"example.com.", "secure.example.com.", "insecure.example.com.",
			"a.b.c.ent.example.com.", "*.wild.example.com.", "cut.example.com."} {
			if len(sets[setKey{name, dns.TypeNSEC}]) != 1 {
				t.Errorf("no NSEC at %s", name)
			}
		}
		for _, name := range []string{"c.ent.example.com.", "ent.example.com.", "ns.insecure.example.com.", "wild.example.com."} {
			if len(sets[setKey{name, dns.TypeNSEC}]) != 0 {
				t.Errorf("unexpected NSEC at %s", name)
			}
		}
		n := sets[setKey{"cut.example.com.", dns.TypeNSEC}][0].(*dns.NSEC)
		if fmt.Sprint(n.TypeBitMap) != fmt.Sprint([]uint16{dns.TypeNS, dns.TypeRRSIG, dns.TypeNSEC}) {
			t.Errorf("NSEC bitmap at delegation with glue: %v (glue A must be cleared, RFC 4034 §4.1.2)", n.TypeBitMap)
		}
		return
	}
	hashed := func(name string) *dns.NSEC3 {
		h := strings.ToLower(dns.HashName(name, dns.SHA1, 0, "")) + ".example.com."
		if s := sets[setKey{h, dns.TypeNSEC3}]; len(s) == 1 {
			return s[0].(*dns.NSEC3)
		}
		return nil
	}
	for _, name := range []string{"example.com.", "secure.example.com.", "a.b.c.ent.example.com.",
		"b.c.ent.example.com.", "c.ent.example.com.", "ent.example.com.", "wild.example.com.", "*.wild.example.com."} {
		n := hashed(name)
		if n == nil {
			t.Errorf("no NSEC3 for %s", name)
			continue
		}
		if n.Iterations != 0 || n.Salt != "" || (n.Flags == 1) != optOut {
			t.Errorf("NSEC3 for %s: iterations %d salt %q flags %d", name, n.Iterations, n.Salt, n.Flags)
		}
	}
	for _, name := range []string{"ns.secure.example.com.", "deep.insecure.example.com."} {
		if hashed(name) != nil {
			t.Errorf("NSEC3 for occluded name %s", name)
		}
	}
	for _, name := range []string{"insecure.example.com.", "cut.example.com.", "x.y.unsigned-ent.example.com.",
		"y.unsigned-ent.example.com.", "unsigned-ent.example.com."} {
		if got := hashed(name) != nil; got == optOut {
			t.Errorf("NSEC3 for unsigned delegation (or its ENT) %s: present=%v with opt-out=%v", name, got, optOut)
		}
	}
	if len(sets[setKey{"example.com.", dns.TypeNSEC3PARAM}]) != 1 {
		t.Error("no NSEC3PARAM at the apex")
	}
	if ent := hashed("ent.example.com."); ent != nil && len(ent.TypeBitMap) != 0 {
		t.Errorf("ENT NSEC3 bitmap %v, want empty", ent.TypeBitMap)
	}
}

func kskTag(sets map[setKey][]dns.RR) uint16 {
	for _, rr := range sets[setKey{"example.com.", dns.TypeDNSKEY}] {
		if k := rr.(*dns.DNSKEY); k.Flags == FlagsKSK {
			return k.KeyTag()
		}
	}
	return 0
}

// checkCanonicalOrder checks owner names never go backwards.
func checkCanonicalOrder(t *testing.T, rrs []dns.RR) {
	t.Helper()
	for i := 1; i < len(rrs); i++ {
		a, b := rrs[i-1].Header().Name, rrs[i].Header().Name
		if wire.CanonicalLess(b, a) {
			t.Fatalf("output not in canonical order: %s before %s", a, b)
		}
	}
}

// TestCanonicalOrder uses the example of RFC 4034 §6.1, in presentation
// form (the key itself is tested in internal/wire).
func TestCanonicalOrder(t *testing.T) {
	want := []string{"example.", "a.example.", "yljkjljk.a.example.", "Z.a.example.",
		"zABC.a.EXAMPLE.", "z.example.", "\\001.z.example.", "*.z.example.", "\\200.z.example."}
	got := append([]string(nil), want...)
	sort.Slice(got, func(i, j int) bool { return wire.CanonicalLess(got[i], got[j]) })
	// Reverse input too, so a no-op sort cannot pass.
	rev := make([]string, len(want))
	for i := range want {
		rev[i] = want[len(want)-1-i]
	}
	sort.Slice(rev, func(i, j int) bool { return wire.CanonicalLess(rev[i], rev[j]) })
	for i := range want {
		if got[i] != want[i] || rev[i] != want[i] {
			t.Fatalf("canonical order:\n got %v\n rev %v\nwant %v", got, rev, want)
		}
	}
	if k1, _ := wire.CanonicalNameKey("a\\000.example."); k1 >= mustKey(t, "a\\000b.example.") {
		t.Error("escaped zero label ordering")
	}
}

func mustKey(t *testing.T, s string) string {
	k, err := wire.CanonicalNameKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSignZoneErrors(t *testing.T) {
	keys := testKeys(t, dns.ED25519)
	ctx := context.Background()
	noSOA := parseZone(t, "$ORIGIN example.com.\n@ 3600 NS ns1\n", "example.com.")
	if _, err := SignZone(ctx, noSOA, "example.com.", keys, Options{}, testNow); err == nil {
		t.Error("zone without SOA signed")
	}
	out := parseZone(t, testZone+"foo.example.net. 60 A 192.0.2.1\n", "example.com.")
	if _, err := SignZone(ctx, out, "example.com.", keys, Options{}, testNow); err == nil {
		t.Error("out-of-zone record accepted")
	}
	rrs := parseZone(t, testZone, "example.com.")
	if _, err := SignZone(ctx, rrs, "example.com.", keys[:1], Options{}, testNow); err == nil {
		t.Error("signed without a ZSK")
	}
	bad := Options{Inception: testNow, Expiration: testNow.Add(-time.Hour)}
	if _, err := SignZone(ctx, rrs, "example.com.", keys, bad, testNow); err == nil {
		t.Error("expiration before inception accepted")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := SignZone(cctx, rrs, "example.com.", keys, Options{}, testNow); err == nil {
		t.Error("cancelled context ignored")
	}
}

func TestSignZoneWindowAndResignedInput(t *testing.T) {
	keys := testKeys(t, dns.ECDSAP256SHA256)
	rrs := parseZone(t, testZone, "example.com.")
	inc, exp := testNow.Add(-2*time.Hour), testNow.Add(48*time.Hour)
	signed, err := SignZone(context.Background(), rrs, "example.com.", keys, Options{Inception: inc, Expiration: exp}, testNow)
	if err != nil {
		t.Fatal(err)
	}
	for _, rr := range signed {
		if s, ok := rr.(*dns.RRSIG); ok && (s.Inception != uint32(inc.Unix()) || s.Expiration != uint32(exp.Unix())) {
			t.Fatalf("RRSIG window %d-%d, want %d-%d", s.Inception, s.Expiration, inc.Unix(), exp.Unix())
		}
	}
	// Signing an already signed zone replaces the DNSSEC records rather
	// than duplicating them.
	again, err := SignZone(context.Background(), signed, "example.com.", keys, Options{}, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(signed) {
		t.Errorf("re-signing signed input: %d records, want %d", len(again), len(signed))
	}
	verifyInGo(t, again, testNow)
}

func TestKeyFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	keys, created, err := EnsureKeys(dir, "Example.COM", dns.ED25519, 7200, testNow)
	if err != nil || !created {
		t.Fatal(err, created)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("key dir mode %v, %v", fi.Mode(), err)
	}
	for _, k := range keys {
		fi, err := os.Stat(filepath.Join(dir, k.Base+".private"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("private key mode %v, %v", fi.Mode(), err)
		}
		if !strings.HasPrefix(k.Base, fmt.Sprintf("Kexample.com+015+%05d", k.Tag())) {
			t.Errorf("key file name %s", k.Base)
		}
	}
	again, created, err := EnsureKeys(dir, "example.com.", dns.ED25519, 7200, testNow)
	if err != nil || created || len(again) != 2 {
		t.Fatalf("second EnsureKeys: %v created=%v n=%d", err, created, len(again))
	}
	for i := range keys {
		if again[i].Tag() != keys[i].Tag() || again[i].IsKSK() != keys[i].IsKSK() {
			t.Errorf("reloaded key %d: %d ksk=%v", i, again[i].Tag(), again[i].IsKSK())
		}
	}
	// A key written by us is readable by BIND's tools: dnssec-signzone
	// must be able to use it (checked in the benchmark script); here check
	// the DNSKEY text parses back identically.
	if again[0].DNSKEY.PublicKey != keys[0].DNSKEY.PublicKey {
		t.Error("public key changed on reload")
	}
}
