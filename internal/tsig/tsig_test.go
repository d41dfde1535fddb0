package tsig

import (
	"testing"
	"time"

	"github.com/miekg/dns"
)

const secret = "c2VjcmV0IGtleSBmb3IgdGhlIGV4YW1wbGUgb25seQ=="

// signedQuery returns a query signed by the client with key name, alg
// and secret, at time at, and the offset of its TSIG record.
func signedQuery(t *testing.T, name, alg, sec string, at time.Time) ([]byte, int, string) {
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

// TestSignStream signs a stream of responses and checks each as a client
// does (RFC 8945 §5.3.1): the first against the query's MAC with every
// TSIG variable, each later one against the MAC before it, timers only.
func TestSignStream(t *testing.T) {
	kr := NewKeyring([]Key{{Name: "xfr.", Algorithm: "hmac-sha512", Secret: secret}})
	q, at, qmac := signedQuery(t, "xfr.", dns.HmacSHA512, secret, time.Now())
	r, err := kr.Verify(q, at)
	if err != nil {
		t.Fatal(err)
	}
	if r.Error != 0 {
		t.Fatalf("Verify: error %d", r.Error)
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
			t.Errorf("message %d: %d bytes signed, over %d + MaxLen %d", i, len(signed), len(raw), r.MaxLen())
		}
		// TsigVerify rewrites the message's ARCOUNT: verify a copy.
		if err := dns.TsigVerify(append([]byte(nil), signed...), secret, prev, i > 0); err != nil {
			t.Fatalf("message %d does not verify: %v", i, err)
		}
		var m dns.Msg
		if err := m.Unpack(signed); err != nil {
			t.Fatal(err)
		}
		prev = m.IsTsig().MAC
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
	}{
		{"BADKEY", "nokey.", time.Now(), BadKey, false},
		{"BADTIME", "xfr.", time.Now().Add(-time.Hour), BadTime, true},
	} {
		q, at, qmac := signedQuery(t, tc.key, dns.HmacSHA256, secret, tc.at)
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
			// Other Data. miekg/dns verifies no NOTAUTH message, so
			// the MAC is recomputed from the same variables.
			stub := *ts
			stub.MAC, stub.MACSize = "", 0
			m.Extra[len(m.Extra)-1] = &stub
			m.Compress = true
			if _, mac, err := dns.TsigGenerate(&m, secret, qmac, false); err != nil || mac != ts.MAC {
				t.Errorf("%s: MAC %s, want %s (%v)", tc.name, ts.MAC, mac, err)
			}
			if ts.OtherLen != 6 || ts.TimeSigned != uint64(tc.at.Unix()) {
				t.Errorf("%s: other data %q, time signed %d", tc.name, ts.OtherData, ts.TimeSigned)
			}
		} else if ts.MACSize != 0 {
			t.Errorf("%s: MAC of %d bytes on an unsigned error", tc.name, ts.MACSize)
		}
	}
}
