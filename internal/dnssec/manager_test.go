package dnssec

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
)

const day = 24 * time.Hour

func testPolicy() Policy {
	return Policy{
		Algorithm:         dns.ED25519,
		ZSKLifetime:       30 * day,
		KSKLifetime:       90 * day,
		SignatureValidity: 14 * day,
		SignatureRefresh:  5 * day,
		DNSKEYTTL:         time.Hour,
		MaxZoneTTL:        day,
		PropagationDelay:  time.Hour,
		ParentDelay:       day,
		DSTTL:             day,
	}
}

// snapshot is what the signed zone exposes about keys at one moment.
type snapshot struct {
	dnskeys, cds, cdnskey []string
	zoneSigner, keySigner []string
}

func (s snapshot) String() string {
	return fmt.Sprintf("DNSKEY %v CDS %v CDNSKEY %v zone-signer %v key-signer %v",
		s.dnskeys, s.cds, s.cdnskey, s.zoneSigner, s.keySigner)
}

// labeller names keys K1, K2, ... and Z1, Z2, ... in creation order, so
// expectations do not depend on random key tags.
type labeller struct {
	names map[uint16]string
	nk    int
	nz    int
}

func (l *labeller) label(tag uint16, ksk bool) string {
	if n, ok := l.names[tag]; ok {
		return n
	}
	var n string
	if ksk {
		l.nk++
		n = fmt.Sprintf("K%d", l.nk)
	} else {
		l.nz++
		n = fmt.Sprintf("Z%d", l.nz)
	}
	l.names[tag] = n
	return n
}

// observe reads a snapshot from the signed zone itself (not from the
// plan), so it checks what resolvers would see.
func observe(t *testing.T, l *labeller, st State, signed []dns.RR) snapshot {
	t.Helper()
	// Label new keys in creation order (state order is KSKs, then ZSKs,
	// each by creation time).
	for _, k := range st.Keys {
		l.label(k.Tag, k.KSK)
	}
	var s snapshot
	tags := map[uint16]bool{}
	for _, rr := range signed {
		switch r := rr.(type) {
		case *dns.DNSKEY:
			s.dnskeys = append(s.dnskeys, l.names[r.KeyTag()])
			tags[r.KeyTag()] = true
		case *dns.CDS:
			s.cds = append(s.cds, l.names[r.KeyTag])
			if r.DigestType != dns.SHA256 {
				t.Errorf("CDS digest type %d", r.DigestType)
			}
		case *dns.CDNSKEY:
			s.cdnskey = append(s.cdnskey, l.names[r.KeyTag()])
		case *dns.RRSIG:
			name := l.names[r.KeyTag]
			if name == "" {
				t.Errorf("RRSIG by unknown key %d", r.KeyTag)
			}
			if r.TypeCovered == dns.TypeDNSKEY {
				s.keySigner = append(s.keySigner, name)
			} else if r.TypeCovered == dns.TypeSOA {
				s.zoneSigner = append(s.zoneSigner, name)
			}
		}
	}
	for _, l := range [][]string{s.dnskeys, s.cds, s.cdnskey, s.zoneSigner, s.keySigner} {
		sort.Strings(l)
	}
	// Every RRSIG in the zone is by a published key.
	for _, rr := range signed {
		if r, ok := rr.(*dns.RRSIG); ok && !tags[r.KeyTag] {
			t.Errorf("RRSIG %s/%s by unpublished key %d", r.Hdr.Name, dns.TypeToString[r.TypeCovered], r.KeyTag)
		}
	}
	return s
}

func keyOf(st State, tag uint16) *KeyState {
	for _, k := range st.Keys {
		if k.Tag == tag {
			return k
		}
	}
	return nil
}

// TestRollovers drives a ZSK pre-publication rollover and a KSK double-DS
// rollover with an injected clock, event by event, restarting from disk in
// the middle, and checks what the signed zone shows at each point.
func TestRollovers(t *testing.T) {
	dir := t.TempDir()
	p := testPolicy()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	zone := parseZone(t, testZone, "example.com.")
	zs, err := NewZoneSigner(dir, "example.com.", p, Options{NSEC3: true, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	l := &labeller{names: map[uint16]string{}}

	type window struct {
		from, to time.Time
		snap     snapshot
	}
	var windows []window
	now := t0
	restarts := 0
	var lastSerial uint32
	for steps := 0; now.Before(t0.Add(100 * day)); steps++ {
		if steps > 200 {
			t.Fatal("too many steps")
		}
		signed, next, st, err := zs.Sign(ctx, zone, now)
		if err != nil {
			t.Fatalf("at %s: %v", now, err)
		}
		if !next.After(now) {
			t.Fatalf("at %s: next event %s not in the future", now, next)
		}
		verifyInGo(t, signed, now)
		// Every step is a key event or a signature refresh: a new
		// version, with a greater serial (RFC 1982).
		serial := servedSerial(t, signed)
		if steps > 0 && wire.SerialCompare(serial, lastSerial) <= 0 {
			t.Errorf("at %s: serial %d after %d", now.Sub(t0), serial, lastSerial)
		}
		lastSerial = serial
		state := zs.Manager().State()
		snap := observe(t, l, state, signed)
		windows = append(windows, window{now, next, snap})
		t.Logf("%-9s %s (signed %d, reused %d)", now.Sub(t0), snap, st.Signed, st.Reused)

		// Invariants of RFC 7583 at every step.
		if len(snap.zoneSigner) != 1 || len(snap.keySigner) != 1 {
			t.Errorf("at %s: want exactly one zone and one key signer: %s", now.Sub(t0), snap)
		}
		if !reflect.DeepEqual(snap.cds, snap.cdnskey) {
			t.Errorf("at %s: CDS %v != CDNSKEY %v", now.Sub(t0), snap.cds, snap.cdnskey)
		}
		for _, k := range state.Keys {
			if !k.active(now) || k.Publish.Equal(t0) {
				continue
			}
			ipub, pub := p.zskPublishInterval(), k.Publish
			if k.KSK {
				// Double-DS: what must be in place first is the DS.
				ipub, pub = p.kskPublishInterval(), k.DSPublish
			}
			if now.Sub(pub) < ipub {
				t.Errorf("at %s: key %s signs %s after publication, before Ipub %s",
					now.Sub(t0), l.names[k.Tag], now.Sub(pub), ipub)
			}
			if k.Successor != 0 {
				continue
			}
		}
		for _, k := range state.Keys {
			if !k.Retire.IsZero() && !now.Before(k.Retire) && now.Before(k.Remove) {
				if !k.published(now) {
					t.Errorf("at %s: retired key %s unpublished before its removal time", now.Sub(t0), l.names[k.Tag])
				}
			}
		}

		// Simulate a restart every few steps (mid-rollover ones included):
		// a new signer from the same directory must reach the same plan
		// without creating keys, and with the old signed zone it must not
		// sign anything again.
		if steps%3 == 1 {
			before := zs.Manager().State()
			zs2, err := NewZoneSigner(dir, "example.com.", p, Options{NSEC3: true, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			if got := zs2.Manager().State(); !reflect.DeepEqual(got, before) {
				t.Fatalf("state after reload differs:\n got %+v\nwant %+v", got, before)
			}
			zs2.SetPrevious(signed)
			signed2, next2, st2, err := zs2.Sign(ctx, zone, now)
			if err != nil {
				t.Fatal(err)
			}
			if st2.Signed != 0 || !next2.Equal(next) || servedSerial(t, signed2) != serial {
				t.Errorf("after restart at %s: signed %d (want 0), next %s (want %s), serial %d (want %d)",
					now.Sub(t0), st2.Signed, next2, next, servedSerial(t, signed2), serial)
			}
			if s2 := observe(t, l, zs2.Manager().State(), signed2); !reflect.DeepEqual(s2, snap) {
				t.Errorf("after restart at %s: %s, want %s", now.Sub(t0), s2, snap)
			}
			zs = zs2
			restarts++
		}
		now = next
	}
	if restarts < 3 {
		t.Fatalf("only %d restarts", restarts)
	}

	at := func(d time.Duration) snapshot {
		x := t0.Add(d)
		for _, w := range windows {
			if !x.Before(w.from) && x.Before(w.to) {
				return w.snap
			}
		}
		t.Fatalf("no step covers %s", d)
		return snapshot{}
	}
	ls := func(s ...string) []string { return s }
	for _, c := range []struct {
		at   time.Duration
		what string
		want snapshot
	}{
		{0, "initial keys", snapshot{ls("K1", "Z1"), ls("K1"), ls("K1"), ls("Z1"), ls("K1")}},
		{30*day - 3*time.Hour, "before ZSK pre-publication", snapshot{ls("K1", "Z1"), ls("K1"), ls("K1"), ls("Z1"), ls("K1")}},
		{30*day - 2*time.Hour, "Z2 pre-published Ipub before Z1's lifetime ends", snapshot{ls("K1", "Z1", "Z2"), ls("K1"), ls("K1"), ls("Z1"), ls("K1")}},
		{30 * day, "Z2 signs, Z1 still published", snapshot{ls("K1", "Z1", "Z2"), ls("K1"), ls("K1"), ls("Z2"), ls("K1")}},
		{31*day + time.Hour - time.Second, "Z1 kept for Iret = Dprp + TTLsig", snapshot{ls("K1", "Z1", "Z2"), ls("K1"), ls("K1"), ls("Z2"), ls("K1")}},
		{31*day + time.Hour, "Z1 removed", snapshot{ls("K1", "Z2"), ls("K1"), ls("K1"), ls("Z2"), ls("K1")}},
		{88 * day, "K2's CDS beside K1's, its DNSKEY not yet (double-DS)", snapshot{ls("K1", "Z3"), ls("K1", "K2"), ls("K1", "K2"), ls("Z3"), ls("K1")}},
		{90*day - time.Second, "K1 signs until the new DS is in caches", snapshot{ls("K1", "Z3", "Z4"), ls("K1", "K2"), ls("K1", "K2"), ls("Z3"), ls("K1")}},
		{90 * day, "DNSKEY swaps K1 for K2, which signs it; Z4 signs the zone", snapshot{ls("K2", "Z3", "Z4"), ls("K1", "K2"), ls("K1", "K2"), ls("Z4"), ls("K2")}},
		{90*day + 2*time.Hour - time.Second, "K1's CDS kept while DNSKEY RRsets with K1 are cached", snapshot{ls("K2", "Z3", "Z4"), ls("K1", "K2"), ls("K1", "K2"), ls("Z4"), ls("K2")}},
		{90*day + 2*time.Hour, "K1's CDS gone: parent drops the old DS", snapshot{ls("K2", "Z3", "Z4"), ls("K2"), ls("K2"), ls("Z4"), ls("K2")}},
		{91*day + time.Hour, "Z3 removed", snapshot{ls("K2", "Z4"), ls("K2"), ls("K2"), ls("Z4"), ls("K2")}},
	} {
		if got := at(c.at); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s (t0+%s):\n got %s\nwant %s", c.what, c.at, got, c.want)
		}
	}

	// The key report shows every key with its state.
	var b strings.Builder
	if err := WriteKeyReport(&b, dir, "", t0.Add(89*day)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	for _, want := range []string{"zone example.com.", "KSK", "ZSK", "active", "published", "removed", "KSK rollover"} {
		if !strings.Contains(out, want) {
			t.Errorf("key report lacks %q:\n%s", want, out)
		}
	}
}

// TestLateStep checks that a Step far after its due time still rolls
// safely: the successor gets its full publication interval.
func TestLateStep(t *testing.T) {
	dir := t.TempDir()
	p := testPolicy()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, err := NewManager(dir, "example.com.", p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Step(t0); err != nil {
		t.Fatal(err)
	}
	late := t0.Add(40 * day)
	plan, err := m.Step(late)
	if err != nil {
		t.Fatal(err)
	}
	var zsk []*Key
	for _, k := range plan.Keys {
		if !k.IsKSK() {
			zsk = append(zsk, k)
		}
	}
	if len(zsk) != 2 {
		t.Fatalf("want old and new ZSK published, got %d", len(zsk))
	}
	st := m.State()
	for _, k := range zsk {
		ks := keyOf(st, k.Tag())
		if ks.Successor != 0 && !k.SignZone {
			t.Error("old ZSK stopped signing before its successor is ready")
		}
		if ks.Successor == 0 {
			if k.SignZone {
				t.Error("new ZSK signs at once")
			}
			if want := late.Add(p.zskPublishInterval()); !ks.Activate.Equal(want) {
				t.Errorf("new ZSK activates at %s, want %s", ks.Activate, want)
			}
		}
	}
	if !plan.Next.Equal(late.Add(p.zskPublishInterval())) {
		t.Errorf("next event %s", plan.Next)
	}
}

func TestStateFileAndPolicy(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, err := NewManager(dir, "Example.COM", testPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(StatePath(dir, "example.com.")); !os.IsNotExist(err) {
		t.Fatal("state written before Step")
	}
	if _, err := m.Step(t0); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(StatePath(dir, "example.com."))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v", fi, err)
	}
	st, err := LoadState(dir, "example.com.")
	if err != nil || len(st.Keys) != 2 {
		t.Fatalf("LoadState: %v %+v", err, st)
	}
	if err := os.WriteFile(StatePath(dir, "example.com."), []byte("{broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewManager(dir, "example.com.", testPolicy()); err == nil {
		t.Error("corrupt state file accepted")
	}
	bad := testPolicy()
	bad.SignatureRefresh = bad.SignatureValidity
	if _, err := NewManager(t.TempDir(), "example.com.", bad); err == nil {
		t.Error("refresh >= validity accepted")
	}
	bad = testPolicy()
	bad.KSKLifetime = time.Hour
	if _, err := NewManager(t.TempDir(), "example.com.", bad); err == nil {
		t.Error("KSK lifetime below publication interval accepted")
	}
}
