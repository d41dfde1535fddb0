package tsig

import (
	"errors"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/config"
)

const secret = "c2VjcmV0IGtleSBmb3IgdGhlIGV4YW1wbGUgb25seQ=="

// signedQuery returns a query signed by the client with key name, alg
// and secret, at time at, and the offset of its TSIG record.
func signedQuery(t testing.TB, name, alg, sec string, at time.Time) ([]byte, int, string) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion("example.test.", dns.TypeAXFR)
	m.SetTsig(name, alg, Fudge, at.Unix())
	wire, mac, err := dns.TsigGenerate(m, sec, "", false)
	if err != nil {
		t.Fatal(err)
	}
	m.Extra = nil
	unsigned, _ := m.Pack()
	return wire, len(unsigned), mac
}

func TestVerify(t *testing.T) {
	kr := NewKeyring([]Key{{Name: "XFR", Algorithm: "hmac-sha256", Secret: secret}, {Name: "old.", Algorithm: "hmac-sha1", Secret: secret}})
	now := time.Now()
	other := "b3RoZXIgc2VjcmV0IG9mIHRoZSBzYW1lIGxlbmd0aCEh"
	for _, tc := range []struct {
		name, key, alg, secret string
		at                     time.Time
		want                   uint16
	}{
		{"good", "xfr.", dns.HmacSHA256, secret, now, 0},
		{"key name in another case", "XfR.", dns.HmacSHA256, secret, now, 0},
		{"sha1", "old.", dns.HmacSHA1, secret, now, 0},
		{"unknown key", "nokey.", dns.HmacSHA256, secret, now, BadKey},
		{"known key, other algorithm", "xfr.", dns.HmacSHA512, secret, now, BadKey},
		{"wrong secret", "xfr.", dns.HmacSHA256, other, now, BadSig},
		{"an hour late", "xfr.", dns.HmacSHA256, secret, now.Add(-time.Hour), BadTime},
		{"an hour early", "xfr.", dns.HmacSHA256, secret, now.Add(time.Hour), BadTime},
		{"wrong secret and late: the MAC first", "xfr.", dns.HmacSHA256, other, now.Add(-time.Hour), BadSig},
	} {
		msg, at, _ := signedQuery(t, tc.key, tc.alg, tc.secret, tc.at)
		before := string(msg)
		r, err := kr.Verify(msg, at)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if r.Error != tc.want {
			t.Errorf("%s: error %d, want %d", tc.name, r.Error, tc.want)
		}
		if string(msg) != before {
			t.Errorf("%s: Verify changed the message", tc.name)
		}
		if wantKey := tc.want == 0; (r.KeyName() != "") != wantKey {
			t.Errorf("%s: KeyName %q", tc.name, r.KeyName())
		}
	}
	if _, err := kr.Verify([]byte{1, 2, 3}, 1); err == nil {
		t.Error("Verify of garbage: no error")
	}
}

func TestSignErrors(t *testing.T) {
	kr := NewKeyring([]Key{{Name: "xfr.", Algorithm: "hmac-sha256", Secret: secret}})
	for _, tc := range []struct {
		name     string
		key      string
		at       time.Time
		want     uint16
		verifies bool
		truncate int // octets of the query's MAC sent, 0: all
	}{
		{"BADKEY", "nokey.", time.Now(), BadKey, false, 0},
		{"BADTIME", "xfr.", time.Now().Add(-time.Hour), BadTime, true, 0},
		// RFC 8945 §5.3.2: signed, with the whole MAC, over the
		// request's MAC as truncated (§5.2.2.1).
		{"BADTRUNC", "xfr.", time.Now(), BadTrunc, true, 20},
	} {
		q, at, qmac := signedQuery(t, tc.key, dns.HmacSHA256, secret, tc.at)
		if tc.truncate > 0 {
			qmac = qmac[:2*tc.truncate]
			q = withMAC(t, q, qmac)
		}
		r, _ := kr.Verify(q, at)
		resp := new(dns.Msg)
		resp.SetRcode(&dns.Msg{MsgHdr: dns.MsgHdr{Id: 7}, Question: []dns.Question{{Name: "example.test.", Qtype: dns.TypeSOA, Qclass: dns.ClassINET}}}, dns.RcodeNotAuth)
		raw, _ := resp.Pack()
		signed, err := r.Signer().Sign(raw)
		if err != nil {
			t.Fatal(err)
		}
		var m dns.Msg
		if err := m.Unpack(signed); err != nil {
			t.Fatal(err)
		}
		ts := m.IsTsig()
		if ts == nil || ts.Error != tc.want || ts.Hdr.Name != tc.key {
			t.Fatalf("%s: TSIG %v", tc.name, ts)
		}
		if tc.verifies {
			// BADTIME: signed, with the request's time and ours in
			// Other Data; BADTRUNC signed. miekg/dns verifies no
			// NOTAUTH message, so the MAC is recomputed from the same
			// variables.
			stub := *ts
			stub.MAC, stub.MACSize = "", 0
			m.Extra[len(m.Extra)-1] = &stub
			m.Compress = true
			if _, mac, err := dns.TsigGenerate(&m, secret, qmac, false); err != nil || mac != ts.MAC {
				t.Errorf("%s: MAC %s, want %s (%v)", tc.name, ts.MAC, mac, err)
			}
			if tc.want == BadTime && (ts.OtherLen != 6 || ts.TimeSigned != uint64(tc.at.Unix())) {
				t.Errorf("%s: other data %q, time signed %d", tc.name, ts.OtherData, ts.TimeSigned)
			}
			if ts.MACSize != 32 {
				t.Errorf("%s: a MAC of %d octets", tc.name, ts.MACSize)
			}
		} else if ts.MACSize != 0 {
			t.Errorf("%s: MAC of %d bytes on an unsigned error", tc.name, ts.MACSize)
		}
	}
}

// withMAC returns the signed query q (its TSIG at offset at) with its MAC
// replaced by mac, hex.
func withMAC(t *testing.T, q []byte, mac string) []byte {
	t.Helper()
	var m dns.Msg
	if err := m.Unpack(q); err != nil {
		t.Fatal(err)
	}
	ts := m.IsTsig()
	ts.MAC, ts.MACSize = mac, uint16(len(mac)/2)
	out, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVerifyTruncated: RFC 8945 §5.2.2.1 and §5.2.4. A MAC truncated to
// a length the RFC allows (at least 10 octets and half the HMAC's) that
// verifies gets BADTRUNC (Tern's policy is the whole MAC), after the
// time check; one that does not verify BADSIG; a MAC longer than the
// HMAC's or shorter than allowed is dropped (ErrDrop), without an
// answer.
func TestVerifyTruncated(t *testing.T) {
	kr := NewKeyring([]Key{{Name: "xfr.", Algorithm: "hmac-sha256", Secret: secret}, {Name: "old.", Algorithm: "hmac-sha1", Secret: secret}})
	now := time.Now()
	for _, tc := range []struct {
		name, key, alg string
		at             time.Time
		mac            func(full string) string // hex
		want           uint16
		drop           bool
	}{
		{"whole", "xfr.", dns.HmacSHA256, now, func(f string) string { return f }, 0, false},
		{"half (16 of 32)", "xfr.", dns.HmacSHA256, now, func(f string) string { return f[:32] }, BadTrunc, false},
		{"24 of 32", "xfr.", dns.HmacSHA256, now, func(f string) string { return f[:48] }, BadTrunc, false},
		{"half, wrong", "xfr.", dns.HmacSHA256, now, func(f string) string { return "ff" + f[2:32] }, BadSig, false},
		{"half, late: the time first", "xfr.", dns.HmacSHA256, now.Add(-time.Hour), func(f string) string { return f[:32] }, BadTime, false},
		{"15 of 32: below half", "xfr.", dns.HmacSHA256, now, func(f string) string { return f[:30] }, 0, true},
		{"33 of 32: longer than the HMAC", "xfr.", dns.HmacSHA256, now, func(f string) string { return f + "00" }, 0, true},
		{"none", "xfr.", dns.HmacSHA256, now, func(string) string { return "" }, 0, true},
		{"sha1 10 of 20", "old.", dns.HmacSHA1, now, func(f string) string { return f[:20] }, BadTrunc, false},
		{"sha1 9 of 20: below 10", "old.", dns.HmacSHA1, now, func(f string) string { return f[:18] }, 0, true},
	} {
		q, at, full := signedQuery(t, tc.key, tc.alg, secret, tc.at)
		msg := withMAC(t, q, tc.mac(full))
		r, err := kr.verify(msg, at, uint64(now.Unix()))
		if tc.drop {
			if !errors.Is(err, ErrDrop) {
				t.Errorf("%s: %v, %v: want ErrDrop", tc.name, r, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if r.Error != tc.want {
			t.Errorf("%s: error %d, want %d", tc.name, r.Error, tc.want)
		}
	}
}

// TestReplay: RFC 8945 §5.2.3's SHOULD: a query signed with a key earlier
// than the latest time signed of a query verified with that key is
// BADTIME, even within the fudge; the same time again, or later, is not.
// A query that fails (bad MAC, outside the fudge) does not move the
// latest time; keys are separate.
func TestReplay(t *testing.T) {
	kr := NewKeyring([]Key{{Name: "xfr.", Algorithm: "hmac-sha256", Secret: secret}, {Name: "other.", Algorithm: "hmac-sha256", Secret: secret}})
	base := time.Now().Truncate(time.Second)
	now := uint64(base.Unix())
	other := "b3RoZXIgc2VjcmV0IG9mIHRoZSBzYW1lIGxlbmd0aCEh"
	for i, tc := range []struct {
		key, secret string
		at          time.Duration
		want        uint16
	}{
		{"xfr.", secret, 0, 0},
		{"xfr.", secret, -5 * time.Second, BadTime}, // a replay: earlier than the last
		{"xfr.", secret, 0, 0},                      // the same second again
		{"other.", secret, -5 * time.Second, 0},     // another key
		{"xfr.", other, 100 * time.Second, BadSig},  // forged, later: does not count
		{"xfr.", secret, 1 * time.Second, 0},
		{"xfr.", secret, time.Hour, BadTime}, // outside the fudge: does not count
		{"xfr.", secret, 2 * time.Second, 0},
		{"xfr.", secret, 1 * time.Second, BadTime},
	} {
		q, at, _ := signedQuery(t, tc.key, dns.HmacSHA256, tc.secret, base.Add(tc.at))
		r, err := kr.verify(q, at, now)
		if err != nil {
			t.Fatal(err)
		}
		if r.Error != tc.want {
			t.Errorf("query %d (%s at %+v): error %d, want %d", i, tc.key, tc.at, r.Error, tc.want)
		}
	}
}

// FuzzVerify: Verify reads any bytes after any offset without panicking
// and without changing them, and what it accepts signs.
func FuzzVerify(f *testing.F) {
	kr := NewKeyring([]Key{{Name: "xfr.", Algorithm: "hmac-sha256", Secret: secret}})
	for _, at := range []time.Time{time.Now(), time.Unix(0, 0)} {
		q, off, _ := signedQuery(f, "xfr.", dns.HmacSHA256, secret, at)
		f.Add(q, off)
		f.Add(q[:len(q)-3], off)
	}
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 250, 0, 255}, 12)
	f.Fuzz(func(t *testing.T, msg []byte, at int) {
		before := string(msg)
		r, err := kr.Verify(msg, at)
		if string(msg) != before {
			t.Fatal("Verify changed the message")
		}
		if err != nil {
			return
		}
		resp := []byte{0, 1, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		if _, err := r.Signer().Sign(resp); err != nil && r.Key != nil {
			t.Fatalf("Sign: %v", err)
		}
	})
}

// TestAlgorithms: every algorithm the configuration accepts
// (config.TSIGAlgorithms; RFC 8945 §6) with miekg/dns as the oracle: a
// request it signs verifies, and with another secret is BADSIG; a
// stream of responses Signer signs (within MaxLen) verify with its
// TsigVerify, as a client checks them, the first with every
// TSIG variable, the later ones timers only, chained MAC to MAC (§5.3.1);
// and a stream it signs passes Stream, as a transfer client checks one.
func TestAlgorithms(t *testing.T) {
	other := "b3RoZXIgc2VjcmV0IG9mIHRoZSBzYW1lIGxlbmd0aCEh"
	if len(config.TSIGAlgorithms) < 5 {
		t.Fatalf("config.TSIGAlgorithms %v: want hmac-sha1, -sha224, -sha256, -sha384, -sha512", config.TSIGAlgorithms)
	}
	for _, alg := range config.TSIGAlgorithms {
		t.Run(alg, func(t *testing.T) {
			fq := dns.Fqdn(alg)
			// miekg/dns names these algorithms as the RFC does: the
			// test signs what the config names, no mapping.
			if _, ok := algorithms[fq]; !ok {
				t.Fatalf("%s: not in the package's algorithms", alg)
			}
			size := map[string]int{dns.HmacSHA1: 20, dns.HmacSHA224: 28, dns.HmacSHA256: 32, dns.HmacSHA384: 48, dns.HmacSHA512: 64}[fq]
			if size == 0 {
				t.Fatalf("%s: not an algorithm of miekg/dns", alg)
			}
			kr := NewKeyring([]Key{{Name: "xfr.", Algorithm: alg, Secret: secret}})
			for _, tc := range []struct {
				secret string
				want   uint16
			}{{secret, 0}, {other, BadSig}} {
				q, at, _ := signedQuery(t, "xfr.", fq, tc.secret, time.Now())
				r, err := kr.Verify(q, at)
				if err != nil || r.Error != tc.want {
					t.Errorf("Verify (secret %s): %v, error %d, want %d", tc.secret[:4], err, r.Error, tc.want)
				}
			}

			q, at, qmac := signedQuery(t, "xfr.", fq, secret, time.Now())
			r, err := kr.Verify(q, at)
			if err != nil || r.Error != 0 {
				t.Fatalf("Verify: %v %+v", err, r)
			}
			s := r.Signer()
			prev := qmac
			for i := range 3 {
				resp := new(dns.Msg)
				resp.SetReply(&dns.Msg{Question: []dns.Question{{Name: "example.test.", Qtype: dns.TypeAXFR, Qclass: dns.ClassINET}}})
				resp.Answer = append(resp.Answer, &dns.A{Hdr: dns.RR_Header{Name: "a.example.test.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: []byte{192, 0, 2, byte(i)}})
				raw, _ := resp.Pack()
				signed, err := s.Sign(raw)
				if err != nil {
					t.Fatal(err)
				}
				if len(signed) > len(raw)+r.MaxLen() {
					t.Errorf("response %d: %d bytes signed, over %d + MaxLen %d", i, len(signed), len(raw), r.MaxLen())
				}
				// TsigVerify rewrites the message's ARCOUNT: verify a copy.
				if err := dns.TsigVerify(append([]byte(nil), signed...), secret, prev, i > 0); err != nil {
					t.Fatalf("response %d does not verify: %v", i, err)
				}
				var m dns.Msg
				if err := m.Unpack(signed); err != nil {
					t.Fatal(err)
				}
				ts := m.IsTsig()
				if ts.Algorithm != fq || int(ts.MACSize) != size {
					t.Errorf("response %d: algorithm %s, MAC of %d octets, want %s and %d", i, ts.Algorithm, ts.MACSize, fq, size)
				}
				prev = ts.MAC
			}

			var qm dns.Msg
			if err := qm.Unpack(q); err != nil {
				t.Fatal(err)
			}
			msgs, offs := streamOf(t, &qm, qmac, fq, secret, 3, func(int) bool { return true }, time.Now())
			st, err := NewStream(Key{Name: "xfr.", Algorithm: alg, Secret: secret}, mustHex(t, qmac))
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range msgs {
				if err := st.Next(m, offs[i]); err != nil {
					t.Fatalf("stream message %d: %v", i, err)
				}
			}
			if err := st.Done(); err != nil {
				t.Errorf("stream: %v", err)
			}
		})
	}
}
