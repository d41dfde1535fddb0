package cookie

import (
	"encoding/hex"
	"net/netip"
	"testing"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func keysOf(t testing.TB, cur string, prev ...string) *Keys {
	t.Helper()
	k := &Keys{}
	for _, s := range append(prev, cur) {
		var sec Secret
		copy(sec[:], mustHex(t, s))
		k.Rotate(sec)
	}
	return k
}

// TestRFC9018Vectors: the server cookies of RFC 9018 Appendix A, made
// and checked.
func TestRFC9018Vectors(t *testing.T) {
	for _, c := range []struct {
		name, secret, client, ip string
		at                       uint32
		want                     string
	}{
		{"A.1", "e5e973e5a6b2a43f48e7dc849e37bfcf", "2464c4abcf10c957", "198.51.100.100", 1559731985, "010000005cf79f111f8130c3eee29480"},
		{"A.2", "e5e973e5a6b2a43f48e7dc849e37bfcf", "2464c4abcf10c957", "198.51.100.100", 1559734385, "010000005cf7a871d4a564a1442aca77"},
		{"A.3", "e5e973e5a6b2a43f48e7dc849e37bfcf", "fc93fc62807ddb86", "203.0.113.203", 1559734700, "010000005cf7a9acf73a7810aca2381e"},
		{"A.4", "445536bcd2513298075a5d379663c962", "22681ab97d52c298", "2001:db8:220:1:59de:d0f4:8769:82b8", 1559741961, "010000005cf7c609a6bb79d16625507a"},
	} {
		k := keysOf(t, c.secret)
		var sc [ServerLen]byte
		k.Make(sc[:], mustHex(t, c.client), netip.MustParseAddr(c.ip), c.at)
		if got := hex.EncodeToString(sc[:]); got != c.want {
			t.Errorf("%s: made %s, want %s", c.name, got, c.want)
		}
		opt := append(mustHex(t, c.client), sc[:]...)
		if v := k.Check(opt, netip.MustParseAddr(c.ip), c.at); v != Valid {
			t.Errorf("%s: its own cookie is %v", c.name, v)
		}
	}
	// A.2's query carries A.1's cookie, 40 minutes old: valid, to be
	// refreshed. A.3's carries reserved bytes the hash covers. A.4's
	// was made with the previous secret: accepted, and answered with a
	// cookie of the new one (A.4's response), as Stale.
	for _, c := range []struct {
		name, ip, opt string
		at            uint32
		keys          *Keys
		want          Verdict
	}{
		{"A.2 query", "198.51.100.100", "2464c4abcf10c957010000005cf79f111f8130c3eee29480", 1559734385, keysOf(t, "e5e973e5a6b2a43f48e7dc849e37bfcf"), Stale},
		{"A.3 query", "203.0.113.203", "fc93fc62807ddb8601abcdef5cf78f71a314227b6679ebf5", 0x5cf78f71 + 100, keysOf(t, "e5e973e5a6b2a43f48e7dc849e37bfcf"), Valid},
		{"A.3 from another address", "203.0.113.204", "fc93fc62807ddb8601abcdef5cf78f71a314227b6679ebf5", 0x5cf78f71 + 100, keysOf(t, "e5e973e5a6b2a43f48e7dc849e37bfcf"), Bad},
		{"A.4 query, previous secret", "2001:db8:220:1:59de:d0f4:8769:82b8", "22681ab97d52c298010000005cf7c57926556bd0934c72f8", 1559741961,
			keysOf(t, "445536bcd2513298075a5d379663c962", "dd3bdf9344b678b185a6f5cb60fca715"), Stale},
		{"A.4 query, the old secret forgotten", "2001:db8:220:1:59de:d0f4:8769:82b8", "22681ab97d52c298010000005cf7c57926556bd0934c72f8", 1559741961,
			keysOf(t, "445536bcd2513298075a5d379663c962"), Bad},
	} {
		if v := c.keys.Check(mustHex(t, c.opt), netip.MustParseAddr(c.ip), c.at); v != c.want {
			t.Errorf("%s: %v, want %v", c.name, v, c.want)
		}
	}
}

// TestCheck: lengths (RFC 7873 §5.2.2) and ages (RFC 9018 §4.3).
func TestCheck(t *testing.T) {
	k := keysOf(t, "e5e973e5a6b2a43f48e7dc849e37bfcf")
	addr := netip.MustParseAddr("192.0.2.1")
	cc := mustHex(t, "0102030405060708")
	const now = 1_800_000_000
	at := func(ts uint32) []byte {
		var sc [ServerLen]byte
		k.Make(sc[:], cc, addr, ts)
		return append(append([]byte(nil), cc...), sc[:]...)
	}
	for _, c := range []struct {
		name string
		opt  []byte
		want Verdict
	}{
		{"client only", cc, ClientOnly},
		{"empty", nil, Malformed},
		{"7 bytes", cc[:7], Malformed},
		{"9 bytes", make([]byte, 9), Malformed},
		{"15 bytes", make([]byte, 15), Malformed},
		{"41 bytes", make([]byte, 41), Malformed},
		{"8-byte server cookie", make([]byte, 16), Bad},
		{"32-byte server cookie", make([]byte, 40), Bad},
		{"fresh", at(now), Valid},
		{"29 minutes", at(now - 29*60), Valid},
		{"31 minutes: refreshed", at(now - 31*60), Stale},
		{"an hour", at(now - 3600), Stale},
		{"an hour and a second", at(now - 3601), Bad},
		{"five minutes ahead", at(now + 300), Valid},
		{"five minutes and a second ahead", at(now + 301), Bad},
		{"version 2", func() []byte { b := at(now); b[8] = 2; return b }(), Bad},
		{"hash changed", func() []byte { b := at(now); b[23] ^= 1; return b }(), Bad},
		{"client cookie changed", func() []byte { b := at(now); b[0] ^= 1; return b }(), Bad},
	} {
		if v := k.Check(c.opt, addr, now); v != c.want {
			t.Errorf("%s: %v, want %v", c.name, v, c.want)
		}
	}
}

// TestReplace: a switch between the random secret and a configured one
// (Replace) keeps the secret that made cookies accepted until its time,
// through a Set (a later reload) and a Rotate (the random secret's
// tick), and not past it; a second Replace takes its place.
func TestReplace(t *testing.T) {
	addr := netip.MustParseAddr("192.0.2.1")
	cc := mustHex(t, "0102030405060708")
	const now = 1_800_000_000
	secret := func(b byte) Secret {
		var s Secret
		for i := range s {
			s[i] = b
		}
		return s
	}
	made := func(k *Keys) []byte {
		var sc [ServerLen]byte
		k.Make(sc[:], cc, addr, now)
		return append(append([]byte(nil), cc...), sc[:]...)
	}
	k := &Keys{}
	k.Set([]Secret{secret(1)})
	c1 := made(k)
	k.Replace([]Secret{secret(2), secret(3)}, now+600)
	c2 := made(k)
	k.Set([]Secret{secret(3)}) // a reload within the lifetime
	k.Rotate(secret(4))        // and a rotation
	for _, c := range []struct {
		name string
		opt  []byte
		at   uint32
		want Verdict
	}{
		{"replaced secret's cookie, in time", c1, now + 599, Stale},
		{"replaced secret's cookie, at its time", c1, now + 600, Bad},
		{"replaced secret's cookie, after it", c1, now + 1200, Bad},
		{"a secret Set dropped", c2, now + 10, Bad},
	} {
		if v := k.Check(c.opt, addr, c.at); v != c.want {
			t.Errorf("%s: %v, want %v", c.name, v, c.want)
		}
	}
	c4 := made(k)
	k.Replace([]Secret{secret(5)}, now+600)
	if v := k.Check(c4, addr, now+10); v != Stale {
		t.Errorf("second replace: the replaced secret's cookie is %v, want stale", v)
	}
	if v := k.Check(c1, addr, now+10); v != Bad {
		t.Errorf("second replace: the first replaced secret's cookie is %v, want bad (one kept)", v)
	}
	k.Replace(nil, now+600)
	if v := k.Check(made(k), addr, now); v != Valid {
		t.Errorf("empty replace changed the secret: %v", v)
	}
}
