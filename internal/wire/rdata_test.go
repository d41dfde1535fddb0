package wire

import (
	"encoding/binary"
	"testing"

	"github.com/miekg/dns"
)

// rdataExamples has a record of every type in the descriptor table, each
// with its names under example. (the question's name below).
var rdataExamples = map[uint16]string{
	TypeNS:    "NS ns.example.",
	TypeMD:    "MD md.example.",
	TypeMF:    "MF mf.example.",
	TypeCNAME: "CNAME c.example.",
	TypeSOA:   "SOA ns.example. host.example. 1 2 3 4 5",
	TypeMB:    "MB mb.example.",
	TypeMG:    "MG mg.example.",
	TypeMR:    "MR mr.example.",
	TypePTR:   "PTR p.example.",
	TypeMINFO: "MINFO r.example. e.example.",
	TypeMX:    "MX 10 mail.example.",
	TypeRP:    "RP mbox.example. txt.example.",
	TypeAFSDB: "AFSDB 1 afs.example.",
	TypeRT:    "RT 10 rt.example.",
	TypePX:    "PX 10 map822.example. mapx400.example.",
	TypeSRV:   "SRV 0 5 5060 sip.example.",
	TypeKX:    "KX 10 kx.example.",
	TypeDNAME: "DNAME d.example.",
	TypeRRSIG: "RRSIG A 13 2 3600 20300101000000 20200101000000 12345 example. AAAA",
	TypeNSEC:  "NSEC next.example. A RRSIG NSEC",
}

// TestRDataMatchesMiekg checks every descriptor against miekg/dns, which
// implements RFC 3597 §4 independently: packed in a message after the
// question example., each name field is where the descriptor says, and
// miekg/dns compressed it exactly when the descriptor says FieldName; the
// fields cover the whole RDATA unless the last is FieldRest.
func TestRDataMatchesMiekg(t *testing.T) {
	n := 0
	for typ := range len(rdataTable) {
		d := RDataOf(uint16(typ))
		if d == nil {
			continue
		}
		n++
		text, ok := rdataExamples[uint16(typ)]
		if !ok {
			t.Errorf("type %d has a descriptor and no example", typ)
			continue
		}
		rr, err := dns.NewRR("x.example. 3600 IN " + text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		m := new(dns.Msg)
		m.SetQuestion("example.", uint16(typ))
		m.Answer = []dns.RR{rr}
		m.Compress = true
		msg, err := m.Pack()
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		// The answer's owner x.example. is "x" and a pointer (4 octets).
		off := HeaderLen + len("\x07example\x00") + 4 + 4
		rdlen := int(binary.BigEndian.Uint16(msg[off+8:]))
		rd := msg[off+10 : off+10+rdlen]
		at := 0
		fields := d.Fields()
		for i, f := range fields {
			switch f {
			case FieldName, FieldNameUncompressed:
				pointer := false
				for at < len(rd) && rd[at] != 0 {
					if rd[at]&0xC0 == 0xC0 {
						pointer = true
						at++
						break
					}
					at += int(rd[at]) + 1
				}
				at++
				if pointer != (f == FieldName) {
					t.Errorf("%s: name field %d compressed by miekg/dns: %v, descriptor: %v", text, i, pointer, f == FieldName)
				}
			case FieldRest:
				if i != len(fields)-1 {
					t.Errorf("%s: FieldRest is not the last field", text)
				}
				at = len(rd)
			default:
				at += f.Size()
			}
		}
		if at != len(rd) {
			t.Errorf("%s: the fields cover %d octets of %d", text, at, len(rd))
		}
	}
	if n != len(rdataExamples) {
		t.Errorf("%d descriptors, %d examples", n, len(rdataExamples))
	}
}

// TestAdditionalName: the hosts of NS, MX and SRV, none for the rest, and
// nil for RDATA cut short.
func TestAdditionalName(t *testing.T) {
	for typ, want := range map[uint16]string{TypeNS: "ns.example.", TypeMX: "mail.example.", TypeSRV: "sip.example."} {
		rr, packed := packExample(t, rdataExamples[typ])
		rd := packed[len(packed)-int(rr.Header().Rdlength):]
		d := RDataOf(typ)
		if got := d.AdditionalName(rd); string(got) != string(wireName(t, want)) {
			t.Errorf("type %d: additional name %q, want %s", typ, got, want)
		}
		for cut := range len(rd) {
			if got := d.AdditionalName(rd[:cut]); got != nil {
				t.Errorf("type %d cut to %d octets: %q, want nil", typ, cut, got)
			}
		}
	}
	for _, typ := range []uint16{TypeSOA, TypeCNAME, TypeDNAME, TypeRRSIG, TypeKX} {
		if d := RDataOf(typ); d.Additional() || d.AdditionalName([]byte("\x01a\x00")) != nil {
			t.Errorf("type %d has an additional name", typ)
		}
	}
	if RDataOf(TypeA) != nil || RDataOf(TypeTXT) != nil || RDataOf(65280) != nil {
		t.Error("a type without names has a descriptor")
	}
}

// TestBuilderRData writes a record of every descriptor's type after the
// question example.: miekg/dns decodes it to the record written, and its
// RDATA got shorter exactly when the descriptor has a compressible name.
func TestBuilderRData(t *testing.T) {
	var q Query
	raw := parsedQuestion(t, &q, "example.", dns.TypeA)
	for typ, text := range rdataExamples {
		rr, packed := packExample(t, text)
		owner := wireName(t, "x.example.")
		tail := packed[len(owner):]
		var b Builder
		b.Reset(make([]byte, 0, 1024), 1024)
		b.Header(1, FlagQR)
		b.Question(raw, &q)
		start := b.Len()
		b.RR(owner, tail)
		b.CountAnswer(1)
		msg := b.Finish()
		var m dns.Msg
		if err := m.Unpack(msg); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if len(m.Answer) != 1 || m.Answer[0].String() != rr.String() {
			t.Errorf("%s: decoded %v", text, m.Answer)
		}
		shorter := len(msg)-start-4 < len(tail)
		if shorter != RDataOf(typ).Compressed() {
			t.Errorf("%s: RDATA compressed %v, descriptor %v", text, shorter, RDataOf(typ).Compressed())
		}
	}
}

// packExample returns the record x.example. 3600 IN text, and its
// uncompressed wire form.
func packExample(t *testing.T, text string) (dns.RR, []byte) {
	t.Helper()
	rr, err := dns.NewRR("x.example. 3600 IN " + text)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	n, err := dns.PackRR(rr, buf, 0, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return rr, buf[:n]
}
