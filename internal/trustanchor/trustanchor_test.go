package trustanchor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnssec"
	"github.com/tern-dns/tern/internal/validator"
)

// clock is a fake clock a test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// keyring makes DNSKEY RRsets of a test zone signed by chosen keys at
// the clock's time.
type keyring struct {
	t     *testing.T
	clock *clock
	zone  string
}

func (kr keyring) key(flags uint16) *dnssec.Key {
	k, err := dnssec.GenerateKey(kr.zone, flags, dns.ED25519, 3600, nil)
	if err != nil {
		kr.t.Fatal(err)
	}
	return k
}

// revoked returns k with the REVOKE bit set (a new tag, the same key).
func revoked(k *dnssec.Key) *dnssec.Key {
	r := *k
	dk := *k.DNSKEY
	dk.Flags |= dns.REVOKE
	r.DNSKEY = &dk
	return &r
}

// signedKeys is a DNSKEY RRset and its RRSIGs.
type signedKeys struct {
	keys []*dns.DNSKEY
	sigs []*dns.RRSIG
}

// rrset returns the DNSKEY records of keys, signed by signers.
func (kr keyring) rrset(keys []*dnssec.Key, signers ...*dnssec.Key) signedKeys {
	var dks []*dns.DNSKEY
	var rrs []dns.RR
	for _, k := range keys {
		dks = append(dks, k.DNSKEY)
		rrs = append(rrs, k.DNSKEY)
	}
	var sigs []*dns.RRSIG
	for _, s := range signers {
		sig := &dns.RRSIG{Hdr: dns.RR_Header{Name: kr.zone, Rrtype: dns.TypeRRSIG, Class: dns.ClassINET, Ttl: 3600},
			Algorithm: s.DNSKEY.Algorithm, KeyTag: s.DNSKEY.KeyTag(), SignerName: kr.zone,
			Inception: uint32(kr.clock.t.Add(-time.Hour).Unix()), Expiration: uint32(kr.clock.t.Add(14 * 24 * time.Hour).Unix())}
		if err := sig.Sign(s.Signer, rrs); err != nil {
			kr.t.Fatal(err)
		}
		sigs = append(sigs, sig)
	}
	return signedKeys{dks, sigs}
}

// storeOf writes text to path and loads a Store of it with opt.
func storeOf(t *testing.T, path, text string, opt Options) *Store {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// states returns the keys' states by tag, as "tag:STATE" sorted by the
// order of keys.
func states(s *Store, zone string, keys ...*dnssec.Key) string {
	var out []string
	for _, want := range keys {
		st := "-"
		for _, k := range s.Keys(zone) {
			if sameKey(k.DNSKEY, want.DNSKEY) {
				st = k.State.String()
			}
		}
		out = append(out, st)
	}
	return strings.Join(out, " ")
}

// anchored reports which of keys the store's anchors hold a DS of.
func anchored(s *Store, zone string, keys ...*dnssec.Key) string {
	var out []string
	for _, k := range keys {
		in := false
		for _, d := range s.Anchors()[zone] {
			if kd := k.DNSKEY.ToDS(dns.SHA256); d.KeyTag == kd.KeyTag && strings.EqualFold(d.Digest, kd.Digest) {
				in = true
			}
		}
		out = append(out, fmt.Sprint(in))
	}
	return strings.Join(out, " ")
}

// TestRollover walks a KSK rollover of RFC 5011 §6 in fake time: the
// store starts from K1's DS, sees K2 published (AddPend), trusts it only
// after the 30-day hold-down (Valid), sees K1 revoked (Revoked: no
// longer an anchor at once) and, gone, forgets it 30 days after its
// revocation.
// Every step reloads the file written, which must give the same states;
// RRsets that do not validate from the anchors in force change nothing;
// a key that leaves during its hold-down is forgotten, and a Valid key
// that leaves is Missing, still trusted, until it is back.
func TestRollover(t *testing.T) {
	c := &clock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	kr := keyring{t, c, "example."}
	k1, k2, k3, zsk := kr.key(dnssec.FlagsKSK), kr.key(dnssec.FlagsKSK), kr.key(dnssec.FlagsKSK), kr.key(dnssec.FlagsZSK)
	path := filepath.Join(t.TempDir(), "example.key")
	ds := k1.DNSKEY.ToDS(dns.SHA256)
	if err := os.WriteFile(path, []byte(ds.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	load := func() *Store {
		t.Helper()
		s, err := Load(path, Options{Now: c.now, Managed: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := load()
	ks := func(keys ...*dnssec.Key) []*dnssec.Key { return keys }
	for _, st := range []struct {
		day           int
		keys, signers []*dnssec.Key
		ok            bool
		states        string // of K1 K2 K3 after it
		anchored      string
		why           string
	}{
		{0, ks(k1, zsk), ks(k1), true, "VALID - -", "true false false", "the DS gives way to K1, Valid"},
		{1, ks(k1, k2, zsk), ks(k2), false, "VALID - -", "true false false", "signed by K2 alone, not trusted yet: nothing changes"},
		{1, ks(k1, k2, zsk), ks(k1), true, "VALID ADDPEND -", "true false false", "K2 published, signed by K1: AddPend"},
		{5, ks(k1, k2, k3, zsk), ks(k1), true, "VALID ADDPEND ADDPEND", "true false false", "K3 published too"},
		{6, ks(k1, k2, zsk), ks(k1), true, "VALID ADDPEND -", "true false false", "K3 gone before its hold-down ends: forgotten"},
		{30, ks(k1, k2, zsk), ks(k1), true, "VALID ADDPEND -", "true false false", "not 30 days yet"},
		{31, ks(k1, k2, zsk), ks(k1), true, "VALID VALID -", "true true false", "30 days after K2 was first seen: Valid, an anchor"},
		{32, ks(revoked(k1), k2, zsk), ks(revoked(k1), k2), true, "REVOKED VALID -", "false true false", "K1 revoked, signing the RRset itself: no longer an anchor"},
		{33, ks(k2, zsk), ks(k2), true, "REVOKED VALID -", "false true false", "K1 gone, remembered"},
		{61, ks(k2, zsk), ks(k2), true, "REVOKED VALID -", "false true false", "not 30 days since its revocation"},
		{62, ks(k2, zsk), ks(k2), true, "- VALID -", "false true false", "30 days: forgotten (Removed)"},
		{62, ks(k1, zsk), ks(k1), false, "- VALID -", "false true false", "K1 back, signing alone: not trusted"},
		{64, ks(k2, k3, zsk), ks(k2), true, "- VALID ADDPEND", "false true false", "K3 published again"},
		{94, ks(k2, k3, zsk), ks(k2), true, "- VALID VALID", "false true true", "K3 Valid after its own hold-down"},
		{95, ks(k3, zsk), ks(k3), true, "- MISSING VALID", "false true true", "K2 missing from an RRset K3 signs: Missing, still an anchor"},
		{96, ks(k2, k3, zsk), ks(k3), true, "- VALID VALID", "false true true", "K2 back: Valid"},
	} {
		c.t = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(st.day) * 24 * time.Hour)
		set := kr.rrset(st.keys, st.signers...)
		if err := s.Observe("example.", set.keys, set.sigs); (err == nil) != st.ok {
			t.Fatalf("day %d (%s): Observe: %v, want ok %v", st.day, st.why, err, st.ok)
		}
		if got := states(s, "example.", k1, k2, k3); got != st.states {
			t.Errorf("day %d (%s): states of K1 K2 K3 %s, want %s", st.day, st.why, got, st.states)
		}
		if got := anchored(s, "example.", k1, k2, k3); got != st.anchored {
			t.Errorf("day %d (%s): anchors K1 K2 K3 %s, want %s", st.day, st.why, got, st.anchored)
		}
		// What was written reads back the same.
		if again := load(); states(again, "example.", k1, k2, k3) != st.states {
			t.Errorf("day %d (%s): reloaded %s", st.day, st.why, states(again, "example.", k1, k2, k3))
		}
	}
}

// TestRevokedNotSelfSigned: a key shown with the REVOKE bit but not
// signing the RRset is not revoked (RFC 5011 §2.1: anyone could
// otherwise revoke a key by publishing its revoked form).
func TestRevokedNotSelfSigned(t *testing.T) {
	c := &clock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	kr := keyring{t, c, "example."}
	k1, k2 := kr.key(dnssec.FlagsKSK), kr.key(dnssec.FlagsKSK)
	path := filepath.Join(t.TempDir(), "example.key")
	text := k1.DNSKEY.String() + "\n" + k2.DNSKEY.String() + "\n"
	s := storeOf(t, path, text, Options{Now: c.now, Managed: true})
	if err := observeSet(s, "example.", kr.rrset([]*dnssec.Key{revoked(k1), k2}, k2)); err != nil {
		t.Fatal(err)
	}
	if got := states(s, "example.", k1, k2); got != "VALID VALID" {
		t.Errorf("states %s, want VALID VALID", got)
	}
	if err := observeSet(s, "example.", kr.rrset([]*dnssec.Key{revoked(k1), k2}, k2, revoked(k1))); err != nil {
		t.Fatal(err)
	}
	if got := states(s, "example.", k1, k2); got != "REVOKED VALID" {
		t.Errorf("states %s, want REVOKED VALID", got)
	}
}

// TestFile: the file written is Unbound's auto-trust-anchor-file form
// (headers, a DNSKEY line per key with ;;state=N [ NAME ] ;;count
// ;;lastchange), an unmanaged store leaves it alone, and malformed
// files are errors naming the file.
func TestFile(t *testing.T) {
	c := &clock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	kr := keyring{t, c, "."}
	k1 := kr.key(dnssec.FlagsKSK)
	dir := t.TempDir()
	path := filepath.Join(dir, "root.key")
	plain := k1.DNSKEY.String() + "\n"
	os.WriteFile(path, []byte(plain), 0o644)
	s, err := Load(path, Options{Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	k2 := kr.key(dnssec.FlagsKSK)
	if err := observeSet(s, ".", kr.rrset([]*dnssec.Key{k1, k2}, k1)); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != plain {
		t.Errorf("unmanaged store rewrote its file:\n%s", b)
	}
	s, err = Load(path, Options{Now: c.now, Managed: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := observeSet(s, ".", kr.rrset([]*dnssec.Key{k1, k2}, k1)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	for _, want := range []string{
		";;id: . 1\n", ";;last_success: 1767225600 ;;Thu Jan  1 00:00:00 2026\n",
		fmt.Sprintf(";{id = %d (ksk), size = 256b} ;;state=2 [ VALID ] ;;count=0 ;;lastchange=0 ;;Thu Jan  1 00:00:00 1970\n", k1.Tag()),
		fmt.Sprintf(";{id = %d (ksk), size = 256b} ;;state=1 [ ADDPEND ] ;;count=0 ;;lastchange=1767225600 ;;Thu Jan  1 00:00:00 2026\n", k2.Tag()),
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("file lacks %q:\n%s", want, b)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".root.key.tmp")); err == nil {
		t.Error("temporary file left")
	}
	for _, c := range []struct{ text, want string }{
		{"", "no trust anchor"},
		{". 3600 IN A 192.0.2.1\n", "a trust anchor is a DS or DNSKEY"},
		{strings.Replace(k1.DNSKEY.String(), "257 3", "1 3", 1) + "\n", "not a zone key"},
		{k1.DNSKEY.String() + " ;;state=9 [ X ]\n", "unknown state 9"},
	} {
		os.WriteFile(path, []byte(c.text), 0o644)
		if _, err := Load(path, Options{}); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: %v, want an error naming %s and saying %q", c.text, err, path, c.want)
		}
	}
}

// TestProbeIntervals: RFC 5011 §2.3's query and retry intervals.
func TestProbeIntervals(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		ttl, sigLeft, query, retry time.Duration
	}{
		{48 * time.Hour, 14 * 24 * time.Hour, 24 * time.Hour, 4*time.Hour + 48*time.Minute},
		{time.Hour, 14 * 24 * time.Hour, time.Hour, time.Hour},
		{60 * 24 * time.Hour, 40 * 24 * time.Hour, 15 * 24 * time.Hour, 24 * time.Hour},
		{48 * time.Hour, 10 * time.Hour, 5 * time.Hour, time.Hour},
	} {
		p := &point{ttl: c.ttl, sigEnd: now.Add(c.sigLeft)}
		if q, r := p.queryInterval(now), p.retryInterval(now); q != c.query || r != c.retry {
			t.Errorf("TTL %v, signatures for %v: query %v retry %v, want %v %v", c.ttl, c.sigLeft, q, r, c.query, c.retry)
		}
	}
	// Probe: a failed fetch retries at the retry interval.
	c := &clock{now}
	kr := keyring{t, c, "."}
	k1 := kr.key(dnssec.FlagsKSK)
	path := filepath.Join(t.TempDir(), "root.key")
	s := storeOf(t, path, k1.DNSKEY.String()+"\n", Options{Now: c.now, Managed: true})
	next, err := s.Probe(context.Background(), func(context.Context, string) ([]*dns.DNSKEY, []*dns.RRSIG, error) {
		return nil, nil, fmt.Errorf("timeout")
	})
	if err == nil || !next.Equal(now.Add(time.Hour)) {
		t.Errorf("failed probe with nothing known: next %v, %v; want an hour later and the error", next, err)
	}
	c.t = next
	next, err = s.Probe(context.Background(), func(context.Context, string) ([]*dns.DNSKEY, []*dns.RRSIG, error) {
		set := kr.rrset([]*dnssec.Key{k1}, k1)
		return set.keys, set.sigs, nil
	})
	// TTL 3600: half an hour, so one hour.
	if err != nil || !next.Equal(c.t.Add(time.Hour)) {
		t.Errorf("probe: next %v, %v; want an hour later", next, err)
	}
}

func observeSet(s *Store, zone string, set signedKeys) error {
	return s.Observe(zone, set.keys, set.sigs)
}

// TestRead: DS and DNSKEY anchors (Debian's root.key holds the latter;
// a DNSKEY stands for its SHA-256 DS), by owner; only keys in force
// from a managed file; errors naming the file and the line.
func TestRead(t *testing.T) {
	// The DNSKEY form of KSK-2017 gives the same DS as the embedded one.
	const ksk2017 = ". IN DNSKEY 257 3 8 AwEAAaz/tAm8yTn4Mfeh5eyI96WSVexTBAvkMgJzkKTOiW1vkIbzxeF3+/4RgWOq7HrxRixHlFlExOLAJr5emLvN7SWXgnLh4+B5xQlNVz8Og8kvArMtNROxVQuCaSnIDdD5LKyWbRd2n9WGe2R8PzgCmr3EgVLrjyBxWezF0jLHwVN8efS3rCj/EWgvIWgb9tarpVUDK/b58Da+sqqls3eNbuv7pr+eoZG+SrDK6nWeL3c6H5Apxz7LjVc1uTIdsIXxuOLYA4/ilBmSVIzuDWfdRUfhHdY6+cn8HFRm+2hM8AnXGXws9555KrUB5qihylGa8subX2Nn6UwNR1AkUTV74bU="
	a, err := Read(strings.NewReader(ksk2017+"\nexample. IN DS 1 13 2 "+strings.Repeat("AB", 32)+"\n"), "anchors")
	if err != nil {
		t.Fatal(err)
	}
	root := validator.RootAnchors()["."][0]
	if ds := a["."]; len(ds) != 1 || !strings.EqualFold(ds[0].Digest, root.Digest) || len(a["example."]) != 1 {
		t.Errorf("anchors %v, want KSK-2017's DS %v and example.'s", a, root)
	}
	// States: only Valid and Missing keys are anchors.
	a, err = Read(strings.NewReader(ksk2017+" ;;state=1 [ ADDPEND ] ;;count=0 ;;lastchange=1\n"), "anchors")
	if err != nil || len(a["."]) != 0 {
		t.Errorf("an AddPend key only: %v %v, want no anchor", a, err)
	}
	a, err = Read(strings.NewReader(ksk2017+" ;;state=3 [ MISSING ] ;;count=0 ;;lastchange=1\n"), "anchors")
	if err != nil || len(a["."]) != 1 {
		t.Errorf("a Missing key: %v %v, want it", a, err)
	}
	for _, tc := range []struct{ text, err string }{
		{". IN DS 1 8 2 AB\n. IN A 192.0.2.1\n", "anchors: . A: a trust anchor is a DS or DNSKEY record"},
		{". IN DNSKEY 1 3 8 AwEAAQ==\n", "anchors: DNSKEY"},
		{"", "anchors: no trust anchor in it"},
		{". IN DS 1 8 2 AB\n. IN DS bad\n", "anchors: dns: bad DS KeyTag: \"bad\" at line: 2:"},
	} {
		if _, err := Read(strings.NewReader(tc.text), "anchors"); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: %v, want %q", tc.text, err, tc.err)
		}
	}
}

// TestKeyTagSignal: RFC 8145 §5.1's query name (tags in hex, ascending,
// below the trust point), sent after a probe that validated, naming the
// anchors then in force.
func TestKeyTagSignal(t *testing.T) {
	ds := func(tags ...uint16) []*dns.DS {
		var out []*dns.DS
		for _, tag := range tags {
			out = append(out, &dns.DS{KeyTag: tag})
		}
		return out
	}
	for _, c := range []struct {
		zone string
		tags []uint16
		want string
	}{
		{".", []uint16{20326}, "_ta-4f66."},
		{".", []uint16{38696, 20326, 20326}, "_ta-4f66-9728."},
		{"Example.", []uint16{1}, "_ta-0001.example."},
	} {
		if got := KeyTagName(c.zone, ds(c.tags...)); got != c.want {
			t.Errorf("%s %v: %q, want %q", c.zone, c.tags, got, c.want)
		}
	}
	c := &clock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	kr := keyring{t, c, "."}
	k1, k2 := kr.key(dnssec.FlagsKSK), kr.key(dnssec.FlagsKSK)
	path := filepath.Join(t.TempDir(), "root.key")
	var asked []string
	s := storeOf(t, path, k1.DNSKEY.ToDS(dns.SHA256).String()+"\n", Options{Now: c.now, Managed: true, Signal: func(_ context.Context, name string) { asked = append(asked, name) }})
	fetch := func(context.Context, string) ([]*dns.DNSKEY, []*dns.RRSIG, error) {
		set := kr.rrset([]*dnssec.Key{k1, k2}, k1)
		return set.keys, set.sigs, nil
	}
	if _, err := s.Probe(context.Background(), fetch); err != nil {
		t.Fatal(err)
	}
	// K2 is pending: only K1 is signalled.
	if want := fmt.Sprintf("_ta-%04x.", k1.Tag()); len(asked) != 1 || asked[0] != want {
		t.Errorf("signalled %q, want [%s]", asked, want)
	}
}

// TestRevokeOnlyKey: a zone revoking its only anchored key (signing the
// RRset with it alone) is heard although the RRset then validates from
// no anchor (RFC 5011 §2.1); the point is left without anchors, as
// Unbound deletes such a trust point, and the file written, holding
// only the revoked key, loads again (a file left with no key at all
// too, by its ;;id header).
func TestRevokeOnlyKey(t *testing.T) {
	c := &clock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	kr := keyring{t, c, "."}
	k1 := kr.key(dnssec.FlagsKSK)
	path := filepath.Join(t.TempDir(), "root.key")
	s := storeOf(t, path, k1.DNSKEY.String()+"\n", Options{Now: c.now, Managed: true})
	if err := observeSet(s, ".", kr.rrset([]*dnssec.Key{revoked(k1)}, revoked(k1))); err == nil {
		t.Error("an RRset signed by a revoked key alone validated")
	}
	if got := states(s, ".", k1); got != "REVOKED" || len(s.Anchors()["."]) != 0 {
		t.Errorf("K1 %s, anchors %v; want REVOKED and none", got, s.Anchors())
	}
	again, err := Load(path, Options{Now: c.now})
	if err != nil || states(again, ".", k1) != "REVOKED" || len(again.Anchors()["."]) != 0 {
		t.Fatalf("reloaded: %v, %v", err, again)
	}
	// A stale signature by the revoked key does not revoke.
	k2 := kr.key(dnssec.FlagsKSK)
	s = storeOf(t, path, k2.DNSKEY.String()+"\n", Options{Now: c.now, Managed: true})
	set := kr.rrset([]*dnssec.Key{revoked(k2)}, revoked(k2))
	c.t = c.t.Add(30 * 24 * time.Hour)
	s.Observe(".", set.keys, set.sigs)
	if got := states(s, ".", k2); got != "VALID" {
		t.Errorf("revoked by an expired signature: %s, want VALID", got)
	}
	os.WriteFile(path, []byte(";;id: . 1\n"), 0o644)
	if s, err := Load(path, Options{}); err != nil || len(s.Zones()) != 1 || len(s.Anchors()["."]) != 0 {
		t.Errorf("a file with a point and no key: %v, want the point without anchors", err)
	}
}
