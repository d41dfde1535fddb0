package upstream

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/miekg/dns"
)

// unpackSeeds are answers of the kinds authorities send, packed by
// miekg/dns (compressed), and some that Unpack's own parser must leave
// to dns.Msg.Unpack; name says which.
func unpackSeeds(t testing.TB) []struct {
	name   string
	pkt    []byte
	common bool // read by unpackCommon
} {
	t.Helper()
	msg := func(rcode int, aa bool, edns bool, answer, ns, extra []string) *dns.Msg {
		q := new(dns.Msg)
		q.SetQuestion(question.Name, question.Qtype)
		q.Id = 4242
		r := new(dns.Msg)
		r.SetRcode(q, rcode)
		r.Authoritative = aa
		r.Compress = true
		for _, sec := range []struct {
			to   *[]dns.RR
			text []string
		}{{&r.Answer, answer}, {&r.Ns, ns}, {&r.Extra, extra}} {
			for _, s := range sec.text {
				rr, err := dns.NewRR(s)
				if err != nil {
					t.Fatal(err)
				}
				*sec.to = append(*sec.to, rr)
			}
		}
		if edns {
			r.SetEdns0(1232, true)
		}
		return r
	}
	pack := func(m *dns.Msg) []byte {
		p, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := pack(msg(dns.RcodeSuccess, true, true, []string{"www.example.test. 300 IN A 192.0.2.1"}, nil, nil))
	forward := append([]byte(nil), a...)
	// The answer's owner (offset 34, after the header and the
	// question), a pointer to the question's name (offset 12), made to
	// point forwards at the 0 of its TYPE: the root for dns.Msg.Unpack.
	if forward[34] != 0xC0 || forward[35] != 12 {
		t.Fatalf("answer owner % x", forward[34:36])
	}
	forward[35] = 36
	extRcode := msg(dns.RcodeSuccess, true, true, nil, []string{"example.test. 300 IN SOA ns.example.test. h.example.test. 1 2 3 4 5"}, nil)
	extRcode.IsEdns0().SetExtendedRcode(dns.RcodeBadVers)
	return []struct {
		name   string
		pkt    []byte
		common bool
	}{
		{"answer", a, true},
		{"answer without EDNS", pack(msg(dns.RcodeSuccess, true, false, []string{"www.example.test. 300 IN A 192.0.2.1", "www.example.test. 300 IN A 192.0.2.2"}, nil, nil)), true},
		{"AAAA", pack(msg(dns.RcodeSuccess, true, true, []string{"www.example.test. 300 IN AAAA 2001:db8::1"}, nil, nil)), true},
		{"CNAME and DNAME", pack(msg(dns.RcodeSuccess, true, true, []string{"www.example.test. 300 IN CNAME www.a.example.test.", "a.example.test. 300 IN DNAME b.example.", "www.a.example.test. 300 IN CNAME www.b.example.", "www.b.example. 60 IN A 192.0.2.9"}, []string{"example.test. 300 IN NS ns.example.test."}, nil)), true},
		{"NXDOMAIN", pack(msg(dns.RcodeNameError, true, true, nil, []string{"example.test. 300 IN SOA ns.example.test. hostmaster.example.test. 2026120401 7200 3600 1209600 300"}, nil)), true},
		{"referral", pack(msg(dns.RcodeSuccess, false, true, nil, []string{"example.test. 172800 IN NS ns1.example.test.", "example.test. 172800 IN NS ns2.example.test.", "example.test. 172800 IN NS ns.elsewhere."},
			[]string{"ns1.example.test. 172800 IN A 192.0.2.53", "ns1.example.test. 172800 IN AAAA 2001:db8::53", "ns2.example.test. 172800 IN A 192.0.2.54"})), true},
		{"extended rcode", pack(extRcode), true},
		{"root SOA", pack(msg(dns.RcodeNameError, true, false, nil, []string{". 300 IN SOA a.root. h.root. 1 2 3 4 5"}, nil)), true},
		{"class CH", pack(msg(dns.RcodeSuccess, true, false, []string{"www.example.test. 300 CH A 192.0.2.1"}, nil, nil)), true},
		{"escaped octet", pack(msg(dns.RcodeSuccess, true, false, []string{`www.example.test. 300 IN CNAME a\.b.example.test.`}, nil, nil)), false},
		{"MX", pack(msg(dns.RcodeSuccess, true, false, []string{"www.example.test. 300 IN MX 10 mx.example.test."}, nil, nil)), false},
		{"RRSIG", pack(msg(dns.RcodeSuccess, true, true, []string{"www.example.test. 300 IN A 192.0.2.1", "www.example.test. 300 IN RRSIG A 13 3 300 20270101000000 20260101000000 12345 example.test. AAAA"}, nil, nil)), false},
		{"OPT with an option", pack(func() *dns.Msg {
			m := msg(dns.RcodeSuccess, true, true, []string{"www.example.test. 300 IN A 192.0.2.1"}, nil, nil)
			m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_NSID{Code: dns.EDNS0NSID, Nsid: "6e73"})
			return m
		}()), false},
		{"forward pointer", forward, false},
		{"no question", pack(&dns.Msg{MsgHdr: dns.MsgHdr{Id: 4242, Response: true, Rcode: dns.RcodeFormatError}}), false},
	}
}

// TestUnpack: the messages Unpack's parser reads come out as
// dns.Msg.Unpack makes them; the others are left to it and come out the
// same all the same; a truncated one is refused.
func TestUnpack(t *testing.T) {
	for _, c := range unpackSeeds(t) {
		t.Run(c.name, func(t *testing.T) {
			want := new(dns.Msg)
			wantErr := want.Unpack(c.pkt)
			_, common := new(reader).unpackCommon(c.pkt, question.Name)
			if common != c.common {
				t.Errorf("read by unpackCommon: %v, want %v", common, c.common)
			}
			got, err := Unpack(c.pkt, question.Name)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("error %v, dns.Msg.Unpack's %v", err, wantErr)
			}
			if err == nil && !reflect.DeepEqual(got, want) {
				t.Errorf("got\n%v\nwant\n%v", got, want)
			}
			if c.common {
				for n := 12; n < len(c.pkt); n++ {
					if m, ok := new(reader).unpackCommon(c.pkt[:n], question.Name); ok && len(m.Answer)+len(m.Ns)+len(m.Extra) > 0 {
						t.Fatalf("cut at %d of %d: read %v", n, len(c.pkt), m)
					}
				}
			}
		})
	}
}

// TestUnpackShares: the question's name spelt as asked is the string
// asked, and a name pointing at one read before is its string.
func TestUnpackShares(t *testing.T) {
	seeds := unpackSeeds(t)
	m, ok := new(reader).unpackCommon(seeds[0].pkt, question.Name)
	if !ok {
		t.Fatal("not read")
	}
	if unsafeString(m.Question[0].Name) != unsafeString(question.Name) || unsafeString(m.Answer[0].Header().Name) != unsafeString(question.Name) {
		t.Errorf("the names are copies of the question's")
	}
	// Another case: a string of its own.
	m, _ = new(reader).unpackCommon(seeds[0].pkt, "WWW.example.test.")
	if m.Question[0].Name != question.Name {
		t.Errorf("question %s", m.Question[0].Name)
	}
	m, _ = new(reader).unpackCommon(seeds[5].pkt, question.Name)
	if ns, glue := m.Ns[0].(*dns.NS).Ns, m.Extra[0].Header().Name; ns != glue || unsafeString(ns) != unsafeString(glue) {
		t.Errorf("glue owner %s not the NS name %s's string", glue, ns)
	}
}

// unsafeString is where s's bytes are.
func unsafeString(s string) *byte { return unsafe.StringData(s) }

// TestUnpackAllocs: an answer of one address record with EDNS is parsed
// in two allocations (the message with its question and sections, the
// record with its address), its names none.
func TestUnpackAllocs(t *testing.T) {
	pkt := unpackSeeds(t)[0].pkt
	if n := testing.AllocsPerRun(100, func() {
		if _, err := Unpack(pkt, question.Name); err != nil {
			t.Fatal(err)
		}
	}); n != 2 {
		t.Errorf("%v allocations, want 2", n)
	}
}

// FuzzUnpack holds Unpack to dns.Msg.Unpack: the same message, or an
// error where it errs; and unpackCommon reads nothing it refuses.
func FuzzUnpack(f *testing.F) {
	for _, c := range unpackSeeds(f) {
		f.Add(c.pkt)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		want := new(dns.Msg)
		wantErr := want.Unpack(pkt)
		got, ok := new(reader).unpackCommon(pkt, question.Name)
		if !ok {
			return
		}
		if wantErr != nil {
			t.Fatalf("read %v\nwhich dns.Msg.Unpack refuses: %v", got, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got\n%v\nwant\n%v", got, want)
		}
	})
}
