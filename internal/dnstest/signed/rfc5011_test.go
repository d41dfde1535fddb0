package signed_test

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/dnssec"
	"github.com/tern-dns/tern/internal/dnstest/hierarchy"
	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/trustanchor"
	"github.com/tern-dns/tern/internal/upstream"
	"github.com/tern-dns/tern/internal/validator"
	"github.com/tern-dns/tern/internal/zone"
)

// rolloverAddr serves the root of TestRootKSKRollover (the block's 226).
var rolloverAddr = netip.AddrFrom4([4]byte{127, 0, 0, 226})

// rootKey generates an Ed25519 key of the root with flags.
func rootKey(t *testing.T, flags uint16) *dnssec.Key {
	t.Helper()
	k, err := dnssec.GenerateKey(".", flags, dns.ED25519, 3600, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// testRoot is a root zone served at addr (a.root.) holding data. TXT,
// signed at now by keys.
func testRoot(t *testing.T, addr netip.Addr, now time.Time, keys ...*dnssec.Key) *zone.Zone {
	t.Helper()
	text := fmt.Sprintf(". 3600 SOA a.root. hostmaster.root. 1 1800 900 604800 300\n. 3600 NS a.root.\na.root. 3600 A %s\ndata. 300 TXT \"signed\"\n", addr)
	var rrs []dns.RR
	zp := dns.NewZoneParser(strings.NewReader(text), ".", "")
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		rrs = append(rrs, rr)
	}
	signed, err := dnssec.SignZone(context.Background(), rrs, ".", keys, dnssec.Options{}, now)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, rr := range signed {
		fmt.Fprintln(&b, rr)
	}
	z, err := zone.Read(strings.NewReader(b.String()), ".", ".")
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// TestRootKSKRollover rolls a test root's KSK as RFC 5011 §6 describes,
// in fake time, with the root served on loopback by Tern's authoritative
// engine and Tern's validating resolver anchored by a managed
// trust-anchor file (trustanchor.Store) that starts with the old KSK's
// DS: the new KSK is published (AddPend), trusted after the 30-day
// hold-down (Valid), the old one revoked (Revoked) and then withdrawn.
// The resolver answers secure data Secure throughout; a resolver with
// the old anchor fixed goes Bogus once the old key is revoked. The file
// says the states at each step.
func TestRootKSKRollover(t *testing.T) {
	day0 := time.Now().Truncate(time.Second)
	now := day0
	clock := func() time.Time { return now }
	k1, k2, zsk := rootKey(t, dnssec.FlagsKSK), rootKey(t, dnssec.FlagsKSK), rootKey(t, dnssec.FlagsZSK)
	// k2Published is published without signing; k1Revoked is K1 with
	// the REVOKE bit, signing as K1.
	k2Published := &dnssec.Key{DNSKEY: k2.DNSKEY}
	k1Revoked := *k1
	revokedKey := *k1.DNSKEY
	revokedKey.Flags |= dns.REVOKE
	k1Revoked.DNSKEY = &revokedKey

	port := hierarchy.ChoosePort(t, []netip.Addr{rolloverAddr})
	root := func(keys ...*dnssec.Key) *zone.Set { return zone.NewSet(testRoot(t, rolloverAddr, now, keys...)) }
	resp := auth.New(root(k1, zsk), auth.Options{})
	srv, err := hierarchy.ServeResponder([]string{netip.AddrPortFrom(rolloverAddr, port).String()}, resp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)

	path := filepath.Join(t.TempDir(), "root.key")
	if err := os.WriteFile(path, []byte(k1.DNSKEY.ToDS(dns.SHA256).String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !trustanchor.Writable(path) {
		t.Fatalf("%s not writable", path)
	}
	store, err := trustanchor.Load(path, trustanchor.Options{Now: clock, Managed: true})
	if err != nil {
		t.Fatal(err)
	}
	hints := []resolve.Server{{Name: "a.root.", Addrs: []netip.Addr{rolloverAddr}}}
	base := resolve.Options{Hints: hints, Port: port, Now: clock, Validator: validator.Options{Now: clock}}
	probe := trustanchor.ResolverFetch(resolve.New(&upstream.Client{}, base))
	managed, fixed := base, base
	managed.Validate, managed.AnchorSource = true, store
	fixed.Validate, fixed.Anchors = true, validator.Anchors{".": {k1.DNSKEY.ToDS(dns.SHA256)}}
	follows, stays := resolve.New(&upstream.Client{}, managed), resolve.New(&upstream.Client{}, fixed)

	step := func(day int, publish *zone.Set, wantFile []string, fixedSec cache.Security) {
		t.Helper()
		now = day0.Add(time.Duration(day) * 24 * time.Hour)
		if publish != nil {
			resp.Publish(publish)
		}
		if _, err := store.Probe(context.Background(), probe); err != nil {
			t.Errorf("day %d: probe: %v", day, err)
		}
		b, _ := os.ReadFile(path)
		for _, w := range wantFile {
			if !strings.Contains(string(b), w) {
				t.Errorf("day %d: the anchor file lacks %q:\n%s", day, w, b)
			}
		}
		for _, r := range []struct {
			name string
			r    *resolve.Resolver
			want cache.Security
		}{{"managed anchor", follows, cache.Secure}, {"fixed anchor", stays, fixedSec}} {
			res, err := r.r.Resolve(context.Background(), "data.", dns.TypeTXT)
			if res.Security != r.want {
				t.Errorf("day %d: %s: data. TXT %v (%v, %s), want %v", day, r.name, res.Security, err, res.Why, r.want)
			}
		}
	}
	state := func(k *dnssec.Key, st trustanchor.State) string {
		return fmt.Sprintf("{id = %d (ksk), size = 256b} ;;state=%d [ %s ]", k.DNSKEY.KeyTag(), st, st)
	}
	step(0, nil, []string{state(k1, trustanchor.Valid)}, cache.Secure)
	// The new KSK published beside the old, which alone signs.
	step(1, root(k1, k2Published, zsk), []string{state(k1, trustanchor.Valid), state(k2, trustanchor.AddPend)}, cache.Secure)
	step(20, root(k1, k2Published, zsk), []string{state(k2, trustanchor.AddPend)}, cache.Secure)
	step(32, root(k1, k2Published, zsk), []string{state(k1, trustanchor.Valid), state(k2, trustanchor.Valid)}, cache.Secure)
	// The new KSK signs; the old one, revoked, signs the DNSKEY RRset
	// that revokes it.
	step(33, root(&k1Revoked, k2, zsk), []string{state(k2, trustanchor.Valid),
		fmt.Sprintf("{id = %d (ksk), size = 256b} ;;state=4 [ REVOKED ]", revokedKey.KeyTag())}, cache.Bogus)
	step(40, root(k2, zsk), []string{state(k2, trustanchor.Valid), ";;state=4 [ REVOKED ]"}, cache.Bogus)
	step(70, root(k2, zsk), []string{state(k2, trustanchor.Valid)}, cache.Bogus)
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "REVOKED") || strings.Count(string(b), "DNSKEY") != 1 {
		t.Errorf("day 70: the revoked key is still in the file, or other keys are:\n%s", b)
	}
}

// anchorFileAddr serves the root of TestAnchorFileUnbound (the block's
// 225).
var anchorFileAddr = netip.AddrFrom4([4]byte{127, 0, 0, 225})

// TestAnchorFileUnbound: the managed anchor file is Unbound's
// auto-trust-anchor-file, both ways. Tern's Store probes a test root
// (KSK K1 signing, K2 published) and writes K1 Valid, K2 AddPend;
// Unbound 1.17 started with that file as its auto-trust-anchor-file
// validates the root's data from K1 (AD) and rewrites the file after its
// own probe; Tern reads Unbound's file back with the same states and
// K2's hold-down start.
func TestAnchorFileUnbound(t *testing.T) {
	k1, k2, zsk := rootKey(t, dnssec.FlagsKSK), rootKey(t, dnssec.FlagsKSK), rootKey(t, dnssec.FlagsZSK)
	port := hierarchy.ChoosePort(t, []netip.Addr{anchorFileAddr})
	z := testRoot(t, anchorFileAddr, time.Now(), k1, &dnssec.Key{DNSKEY: k2.DNSKEY}, zsk)
	srv, err := hierarchy.Serve([]string{netip.AddrPortFrom(anchorFileAddr, port).String()}, []*zone.Zone{z})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	path := filepath.Join(dir, "root.key")
	if err := os.WriteFile(path, []byte(k1.DNSKEY.ToDS(dns.SHA256).String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store, err := trustanchor.Load(path, trustanchor.Options{Managed: true})
	if err != nil {
		t.Fatal(err)
	}
	hints := []resolve.Server{{Name: "a.root.", Addrs: []netip.Addr{anchorFileAddr}}}
	if _, err := store.Probe(context.Background(), trustanchor.ResolverFetch(resolve.New(&upstream.Client{}, resolve.Options{Hints: hints, Port: port}))); err != nil {
		t.Fatal(err)
	}
	ours, _ := os.ReadFile(path)
	want := func(s *trustanchor.Store) string {
		var out []string
		for _, k := range s.Keys(".") {
			out = append(out, fmt.Sprintf("%d %s %d", k.DNSKEY.KeyTag(), k.State, k.Changed.Unix()))
		}
		slices.Sort(out)
		return strings.Join(out, ", ")
	}
	tern := want(store)
	if !strings.Contains(tern, fmt.Sprintf("%d ADDPEND", k2.DNSKEY.KeyTag())) {
		t.Fatalf("Tern's states %s, want K2 (%d) ADDPEND", tern, k2.DNSKEY.KeyTag())
	}

	hintsFile := filepath.Join(dir, "root.hints")
	if err := os.WriteFile(hintsFile, []byte(fmt.Sprintf(". 3600000 NS a.root.\na.root. 3600000 A %s\n", anchorFileAddr)), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, skip := hierarchy.StartUnbound(t, unboundAddr, port, hintsFile,
		`module-config: "validator iterator"`, fmt.Sprintf("auto-trust-anchor-file: %q", path))
	if skip != "" {
		t.Skip(skip)
	}
	// Not test.: Unbound answers that special-use name itself.
	m, err := ask(addr, validationCase{name: "data.", qtype: dns.TypeTXT})
	if err != nil || m.Rcode != dns.RcodeSuccess || !m.AuthenticatedData || answers(m) != 1 {
		t.Errorf("Unbound from Tern's file: data. TXT %v, want NOERROR with AD", m)
	}
	var theirs []byte
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		theirs, _ = os.ReadFile(path)
		if !bytes.Equal(theirs, ours) && bytes.Contains(theirs, []byte(";;state=")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Unbound did not rewrite the anchor file:\n%s", theirs)
		}
	}
	if testing.Verbose() {
		t.Logf("Tern's file:\n%s\nUnbound's:\n%s", ours, theirs)
	}
	again, err := trustanchor.Load(path, trustanchor.Options{})
	if err != nil {
		t.Fatalf("Unbound's file: %v\n%s", err, theirs)
	}
	if got := want(again); got != tern {
		t.Errorf("Unbound's file reads as %s, Tern's states were %s:\n%s", got, tern, theirs)
	}
}
