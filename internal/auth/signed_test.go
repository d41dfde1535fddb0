package auth

import (
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/tsig"
)

const (
	testSecret  = "c2VjcmV0IGtleSBmb3IgdGhlIGV4YW1wbGUgb25seQ=="
	otherSecret = "b3RoZXIgc2VjcmV0IG9mIHRoZSBzYW1lIGxlbmd0aCEh"
)

// signQuery packs m signed with key name, alg and secret at time at, and
// returns the wire form and the query's MAC.
func signQuery(t *testing.T, m *dns.Msg, name, alg, secret string, at time.Time) ([]byte, string) {
	t.Helper()
	m.SetTsig(name, alg, tsig.Fudge, at.Unix())
	pkt, mac, err := dns.TsigGenerate(m, secret, "", false)
	if err != nil {
		t.Fatal(err)
	}
	return pkt, mac
}

// TestTSIG checks RFC 8945 §5.2 at the wire level: a query signed with a
// known key is answered and the answer signed (its MAC verifies against
// the query's); an unknown key or algorithm gets NOTAUTH with BADKEY and
// an unsigned TSIG, a MAC that does not verify NOTAUTH with BADSIG, a time
// outside the fudge NOTAUTH with BADTIME, signed, with the server's time.
func TestTSIG(t *testing.T) {
	r := testResponder(t, Options{})
	r.SetAccess(&Access{Keys: tsig.NewKeyring([]tsig.Key{{Name: "xfr", Algorithm: "hmac-sha256", Secret: testSecret}})})
	now := time.Now()
	for _, tc := range []struct {
		name      string
		key, alg  string
		secret    string
		at        time.Time
		tcp, edns bool
		rcode     int
		tsigErr   uint16
		signed    bool
		answers   int
	}{
		{"good", "xfr.", dns.HmacSHA256, testSecret, now, false, false, dns.RcodeSuccess, 0, true, 1},
		{"good over TCP with EDNS", "xfr.", dns.HmacSHA256, testSecret, now, true, true, dns.RcodeSuccess, 0, true, 1},
		{"key name in capitals", "XFR.", dns.HmacSHA256, testSecret, now, false, false, dns.RcodeSuccess, 0, true, 1},
		{"unknown key", "other.", dns.HmacSHA256, testSecret, now, false, false, dns.RcodeNotAuth, tsig.BadKey, false, 0},
		{"other algorithm", "xfr.", dns.HmacSHA384, testSecret, now, false, true, dns.RcodeNotAuth, tsig.BadKey, false, 0},
		{"wrong secret", "xfr.", dns.HmacSHA256, otherSecret, now, false, false, dns.RcodeNotAuth, tsig.BadSig, false, 0},
		{"ten minutes late", "xfr.", dns.HmacSHA256, testSecret, now.Add(-10 * time.Minute), false, false, dns.RcodeNotAuth, tsig.BadTime, true, 0},
		{"ten minutes early", "xfr.", dns.HmacSHA256, testSecret, now.Add(10 * time.Minute), true, false, dns.RcodeNotAuth, tsig.BadTime, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := query("www.example.test.", dns.TypeA)
			if tc.edns {
				m.SetEdns0(1232, false)
			}
			pkt, qmac := signQuery(t, m, tc.key, tc.alg, tc.secret, tc.at)
			var s Scratch
			out := r.Answer(&s, pkt, make([]byte, 0, BufferSize), tc.tcp)
			resp := new(dns.Msg)
			if err := resp.Unpack(out); err != nil {
				t.Fatal(err)
			}
			if resp.Rcode != tc.rcode || len(resp.Answer) != tc.answers || resp.Id != m.Id {
				t.Fatalf("rcode %s, %d answers, id %d:\n%v", dns.RcodeToString[resp.Rcode], len(resp.Answer), resp.Id, resp)
			}
			ts := resp.IsTsig()
			if ts == nil {
				t.Fatalf("no TSIG, or not last:\n%v", resp)
			}
			if ts.Error != tc.tsigErr || ts.Hdr.Name != dns.CanonicalName(tc.key) || ts.Algorithm != tc.alg || ts.OrigId != m.Id {
				t.Errorf("TSIG %v", ts)
			}
			if (resp.IsEdns0() != nil) != tc.edns {
				t.Errorf("OPT %v, want %v", resp.IsEdns0() != nil, tc.edns)
			}
			switch {
			case tc.rcode == dns.RcodeSuccess:
				// A client's check: the answer's MAC covers the query's.
				if err := dns.TsigVerify(append([]byte(nil), out...), testSecret, qmac, false); err != nil {
					t.Errorf("the answer does not verify: %v", err)
				}
			case tc.signed:
				if ts.MACSize == 0 || ts.OtherLen != 6 || ts.TimeSigned != uint64(tc.at.Unix()) {
					t.Errorf("BADTIME answer: MAC size %d, other %q, time %d", ts.MACSize, ts.OtherData, ts.TimeSigned)
				}
			default:
				if ts.MACSize != 0 {
					t.Errorf("MAC of %d bytes on %s", ts.MACSize, dns.RcodeToString[int(ts.Error)])
				}
			}
		})
	}
}

// TestTSIGWithoutKeys: a server without keys answers every signed query
// BADKEY, and an unsigned one as before.
func TestTSIGWithoutKeys(t *testing.T) {
	r := testResponder(t, Options{})
	pkt, _ := signQuery(t, query("www.example.test.", dns.TypeA), "xfr.", dns.HmacSHA256, testSecret, time.Now())
	var s Scratch
	resp := new(dns.Msg)
	if err := resp.Unpack(r.Answer(&s, pkt, make([]byte, 0, BufferSize), false)); err != nil {
		t.Fatal(err)
	}
	if ts := resp.IsTsig(); resp.Rcode != dns.RcodeNotAuth || ts == nil || ts.Error != tsig.BadKey {
		t.Errorf("%v", resp)
	}
	if resp := ask(t, r, query("www.example.test.", dns.TypeA), false); resp.Rcode != 0 || len(resp.Answer) != 1 || resp.IsTsig() != nil {
		t.Errorf("unsigned query: %v", resp)
	}
}

// TestTSIGTruncated: a signed answer over the client's UDP limit is
// replaced by a signed TC answer with the question only.
func TestTSIGTruncated(t *testing.T) {
	r := testResponder(t, Options{})
	r.SetAccess(&Access{Keys: tsig.NewKeyring([]tsig.Key{{Name: "xfr.", Algorithm: "hmac-sha512", Secret: testSecret}})})
	m := query("big.example.test.", dns.TypeTXT)
	m.SetEdns0(1232, false)
	plain := ask(t, r, m, false)
	// A limit the answer fits, but not with the TSIG (a 64-byte MAC).
	size := uint16(plain.Len() + 20)
	m = query("big.example.test.", dns.TypeTXT)
	m.SetEdns0(size, false)
	if resp := ask(t, r, m, false); resp.Truncated || len(resp.Answer) != 5 {
		t.Fatalf("unsigned with a limit of %d: %v", size, resp)
	}
	pkt, qmac := signQuery(t, m, "xfr.", dns.HmacSHA512, testSecret, time.Now())
	var s Scratch
	out := r.Answer(&s, pkt, make([]byte, 0, BufferSize), false)
	resp := new(dns.Msg)
	if err := resp.Unpack(out); err != nil {
		t.Fatal(err)
	}
	if !resp.Truncated || len(resp.Answer) != 0 || len(out) > int(size) || resp.IsTsig() == nil || resp.IsEdns0() == nil {
		t.Errorf("%d bytes for a limit of %d:\n%v", len(out), size, resp)
	}
	if err := dns.TsigVerify(append([]byte(nil), out...), testSecret, qmac, false); err != nil {
		t.Errorf("the TC answer does not verify: %v", err)
	}
	// Over TCP the same query gets the whole answer, signed.
	out = r.Answer(&s, pkt, make([]byte, 0, BufferSize), true)
	if err := resp.Unpack(out); err != nil || resp.Truncated || len(resp.Answer) != 5 {
		t.Errorf("over TCP: %v %v", err, resp)
	}
}

// TestTSIGTruncatedMAC: RFC 8945 §5.2.4: a query whose MAC is truncated
// to a length the RFC allows, shorter than Tern's policy (the whole
// MAC), gets NOTAUTH with BADTRUNC, signed (§5.3.2); one truncated below
// what the RFC allows gets no answer at all (§5.2.2.1: dropped, logged).
func TestTSIGTruncatedMAC(t *testing.T) {
	r := testResponder(t, Options{})
	r.SetAccess(&Access{Keys: tsig.NewKeyring([]tsig.Key{{Name: "xfr.", Algorithm: "hmac-sha256", Secret: testSecret}})})
	for _, tc := range []struct {
		name  string
		bytes int
		drop  bool
	}{
		{"16 of 32", 16, false},
		{"8 of 32", 8, true},
	} {
		pkt, mac := signQuery(t, query("www.example.test.", dns.TypeA), "xfr.", dns.HmacSHA256, testSecret, time.Now())
		var m dns.Msg
		if err := m.Unpack(pkt); err != nil {
			t.Fatal(err)
		}
		m.IsTsig().MAC, m.IsTsig().MACSize = mac[:2*tc.bytes], uint16(tc.bytes)
		pkt, _ = m.Pack()
		var s Scratch
		out := r.Answer(&s, pkt, make([]byte, 0, BufferSize), false)
		if tc.drop {
			if out != nil {
				t.Errorf("%s: answered, want dropped", tc.name)
			}
			continue
		}
		resp := new(dns.Msg)
		if err := resp.Unpack(out); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if ts := resp.IsTsig(); resp.Rcode != dns.RcodeNotAuth || ts == nil || ts.Error != tsig.BadTrunc || ts.MACSize != 32 || len(resp.Answer) != 0 {
			t.Errorf("%s: %v", tc.name, resp)
		}
	}
}
