package wire

import (
	"testing"

	"github.com/miekg/dns"
)

func pack(t testing.TB, m *dns.Msg) []byte {
	t.Helper()
	p, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParse(t *testing.T) {
	m := new(dns.Msg)
	m.SetQuestion("WWW.Example.TEST.", dns.TypeAAAA)
	m.SetEdns0(4096, true)
	m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_NSID{Code: dns.EDNS0NSID})
	var q Query
	res, rc := q.Parse(pack(t, m))
	if res != Answer || rc != 0 {
		t.Fatalf("Parse = %v, %d", res, rc)
	}
	if got := string(q.Name()); got != "\x03www\x07example\x04test\x00" {
		t.Errorf("name %q: want lowercased wire form", got)
	}
	if q.Labels() != 4 || string(q.Suffix(1)) != "\x07example\x04test\x00" || string(q.Suffix(3)) != "\x00" {
		t.Errorf("labels %d suffix1 %q", q.Labels(), q.Suffix(1))
	}
	if q.QType != dns.TypeAAAA || q.QClass != dns.ClassINET || q.ID != m.Id {
		t.Errorf("type %d class %d id %d", q.QType, q.QClass, q.ID)
	}
	if !q.EDNS || q.UDPSize != 4096 || !q.DO || !q.NSID || q.EDNSVersion != 0 {
		t.Errorf("EDNS %v size %d DO %v NSID %v", q.EDNS, q.UDPSize, q.DO, q.NSID)
	}
}

// opt is an OPT record (payload 1232, no options) and aRR an A record
// for the root, in wire form.
var (
	opt = []byte{0, 0, 41, 4, 0xd0, 0, 0, 0, 0, 0, 0}
	aRR = []byte{0, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1}
)

// tsigRR is a TSIG record (RFC 8945 §4.2) for key "k." with an empty MAC.
var tsigRR = []byte{1, 'k', 0, 0, 250, 0, 255, 0, 0, 0, 0, 0, 29,
	11, 'h', 'm', 'a', 'c', '-', 's', 'h', 'a', '2', '5', '6', 0, // algorithm
	0, 0, 0, 0, 0, 1, 1, 44, 0, 0, 0, 7, 0, 0, 0, 0}

// withRRs returns pkt with the given section counts and the records rrs
// appended.
func withRRs(pkt []byte, an, ns, ar byte, rrs ...[]byte) []byte {
	p := append([]byte(nil), pkt...)
	p[7], p[9], p[11] = an, ns, ar
	for _, rr := range rrs {
		p = append(p, rr...)
	}
	return p
}

func TestParseTSIG(t *testing.T) {
	m := new(dns.Msg)
	m.SetQuestion("a.test.", dns.TypeSOA)
	good := pack(t, m)
	var q Query
	for _, tc := range []struct {
		name string
		pkt  []byte
		at   int
	}{
		{"alone", withRRs(good, 0, 0, 1, tsigRR), len(good)},
		{"after OPT", withRRs(good, 0, 0, 2, opt, tsigRR), len(good) + len(opt)},
		{"none", withRRs(good, 0, 0, 1, opt), 0},
	} {
		if res, rc := q.Parse(tc.pkt); res != Answer || rc != 0 || q.TSIG != tc.at {
			t.Errorf("%s: Parse = %v, %d, TSIG at %d; want Answer, TSIG at %d", tc.name, res, rc, q.TSIG, tc.at)
		}
	}
	// A query without one after a query with one: Parse resets it.
	q.Parse(withRRs(good, 0, 0, 1, tsigRR))
	if q.Parse(good); q.TSIG != 0 {
		t.Errorf("TSIG at %d after a query without one", q.TSIG)
	}
}

func TestParseRejects(t *testing.T) {
	m := new(dns.Msg)
	m.SetQuestion("a.test.", dns.TypeA)
	good := pack(t, m)
	long := new(dns.Msg)
	long.SetQuestion("a.test.", dns.TypeA)
	tests := []struct {
		name string
		pkt  []byte
		res  ParseResult
		rc   int
	}{
		{"empty", nil, Drop, 0},
		{"header only minus one", good[:11], Drop, 0},
		{"response bit", func() []byte { p := append([]byte(nil), good...); p[2] |= 0x80; return p }(), Drop, 0},
		{"no question", func() []byte { p := append([]byte(nil), good[:12]...); p[5] = 0; return p }(), Error, RcodeFormErr},
		{"name runs off the end", good[:14], Error, RcodeFormErr},
		{"missing type and class", good[:len(good)-4], Error, RcodeFormErr},
		{"name over 255 bytes", func() []byte {
			p := append([]byte(nil), good[:12]...)
			for i := 0; i < 5; i++ {
				p = append(p, 63)
				p = append(p, make([]byte, 63)...)
			}
			return append(p, 0, 0, 1, 0, 1)
		}(), Error, RcodeFormErr},
		{"OPT not at root", func() []byte {
			p := append([]byte(nil), good...)
			p[11] = 1
			return append(p, 1, 'x', 0, 0, 41, 4, 0, 0, 0, 0, 0, 0, 0)
		}(), Error, RcodeFormErr},
		{"OPT option overruns", func() []byte {
			p := append([]byte(nil), good...)
			p[11] = 1
			return append(p, 0, 0, 41, 4, 0, 0, 0, 0, 0, 0, 4, 0, 3, 0, 9)
		}(), Error, RcodeFormErr},
		// RFC 6891 §6.1.1: OPT belongs in the additional section.
		{"OPT in the answer section", withRRs(good, 1, 0, 0, opt), Error, RcodeFormErr},
		{"OPT in the authority section", withRRs(good, 0, 1, 0, opt), Error, RcodeFormErr},
		{"OPT in answer and additional", withRRs(good, 1, 0, 1, opt, opt), Error, RcodeFormErr},
		{"A record in the answer section", withRRs(good, 1, 0, 0, aRR), Answer, 0},
		{"OPT in additional after an answer record", withRRs(good, 1, 0, 1, aRR, opt), Answer, 0},
		// RFC 8945 §5.1: TSIG is the last record, in the additional section.
		{"TSIG in the answer section", withRRs(good, 1, 0, 0, tsigRR), Error, RcodeFormErr},
		{"TSIG in the authority section", withRRs(good, 0, 1, 0, tsigRR), Error, RcodeFormErr},
		{"TSIG before OPT", withRRs(good, 0, 0, 2, tsigRR, opt), Error, RcodeFormErr},
		{"two TSIGs", withRRs(good, 0, 0, 2, tsigRR, tsigRR), Error, RcodeFormErr},
		{"TSIG after OPT", withRRs(good, 0, 0, 2, opt, tsigRR), Answer, 0},
		{"EDNS version 1", func() []byte {
			p := append([]byte(nil), good...)
			p[11] = 1
			return append(p, 0, 0, 41, 4, 0, 0, 1, 0, 0, 0, 0)
		}(), Error, RcodeBadVers},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var q Query
			res, rc := q.Parse(tc.pkt)
			if res != tc.res || rc != tc.rc {
				t.Errorf("Parse = %v, %d; want %v, %d", res, rc, tc.res, tc.rc)
			}
		})
	}
}

func TestBuilderCompression(t *testing.T) {
	var q Query
	m := new(dns.Msg)
	m.SetQuestion("www.example.test.", dns.TypeA)
	pkt := pack(t, m)
	q.Parse(pkt)
	var b Builder
	b.Reset(make([]byte, 0, 512), 512)
	b.Header(1, FlagQR)
	b.Question(pkt[HeaderLen:q.QuestionEnd], &q)
	before := b.Len()
	b.Name([]byte("\x04mail\x07example\x04test\x00"))
	// "mail" then a pointer to "example.test." inside the question.
	if got := b.Bytes()[before:]; string(got) != "\x04mail\xc0\x10" {
		t.Errorf("compressed name % x", got)
	}
	before = b.Len()
	b.Name([]byte("\x04mail\x07example\x04test\x00"))
	if got := b.Bytes()[before:]; string(got) != "\xc0\x22" {
		t.Errorf("second write % x, want a pointer to the first", got)
	}
	before = b.Len()
	b.Name([]byte("\x00"))
	if got := b.Bytes()[before:]; string(got) != "\x00" {
		t.Errorf("root % x", got)
	}
}

// FuzzParse checks the parser never panics or reads out of bounds, and
// that what it accepts is consistent with miekg/dns's reading.
func FuzzParse(f *testing.F) {
	m := new(dns.Msg)
	m.SetQuestion("www.example.test.", dns.TypeA)
	p, _ := m.Pack()
	f.Add(p)
	m.SetEdns0(1232, true)
	p, _ = m.Pack()
	f.Add(p)
	f.Add([]byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 12, 0, 1, 0, 1})
	f.Add([]byte{0, 1})
	// An OPT in the answer and in the authority section: FORMERR.
	for _, sec := range []int{6, 8} {
		p := []byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 41, 4, 0xD0, 0, 0, 0, 0, 0, 0}
		p[sec+1] = 1
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		var q Query
		res, _ := q.Parse(pkt)
		if res != Answer {
			return
		}
		if q.QuestionEnd > len(pkt) || len(q.Name()) == 0 || q.Name()[len(q.Name())-1] != 0 {
			t.Fatalf("inconsistent parse: end %d len %d name %q", q.QuestionEnd, len(pkt), q.Name())
		}
		var mm dns.Msg
		if err := mm.Unpack(pkt); err == nil && len(mm.Question) == 1 {
			if !dns.IsFqdn(mm.Question[0].Name) || mm.Question[0].Qtype != q.QType {
				t.Fatalf("miekg reads %v, we read type %d", mm.Question[0], q.QType)
			}
			// RFC 6891 §6.1.1: an OPT outside the additional section,
			// or more than one, is never accepted.
			for i, sec := range [][]dns.RR{mm.Answer, mm.Ns, mm.Extra} {
				opts := 0
				for _, rr := range sec {
					if rr.Header().Rrtype == dns.TypeOPT {
						opts++
					}
				}
				if (i < 2 && opts > 0) || opts > 1 {
					t.Fatalf("accepted %d OPT records in section %d", opts, i+1)
				}
			}
		}
	})
}
