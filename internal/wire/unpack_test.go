package wire

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/miekg/dns"
)

// packed returns a message answering with rrs, compressed.
func packed(t testing.TB, rrs ...string) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion("example.test.", dns.TypeAXFR)
	m.Response = true
	m.Compress = true
	for _, s := range rrs {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		m.Answer = append(m.Answer, rr)
	}
	p, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// uncompressed is rr's wire form without compression, miekg/dns's.
func uncompressed(t testing.TB, rr dns.RR) []byte {
	buf := make([]byte, 70000)
	n, err := dns.PackRR(rr, buf, 0, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

func TestAppendRecord(t *testing.T) {
	rrs := []string{
		"example.test. 300 IN SOA ns1.example.test. hostmaster.example.test. 7 3600 600 86400 300",
		"example.test. 300 IN NS ns1.example.test.",
		"Www.Example.Test. 60 IN CNAME example.test.",
		"example.test. 300 IN MX 10 mail.example.test.",
		"_sip._tcp.example.test. 300 IN SRV 1 2 5060 sip.example.test.",
		"example.test. 300 IN RRSIG A 13 2 300 20300101000000 20200101000000 12345 example.test. c2lnbmF0dXJl",
		"a.example.test. 300 IN NSEC b.example.test. A RRSIG NSEC",
		"example.test. 300 IN TXT \"hello\" \"world\"",
		"example.test. 300 IN A 192.0.2.1",
		"example.test. 300 IN TYPE65400 \\# 3 010203",
		"x.example.test. 300 IN DNAME example.test.",
	}
	msg := packed(t, rrs...)
	off, _ := skipName(msg, 12)
	off += 4 // the question's type and class
	var dst []byte
	for i, s := range rrs {
		want := uncompressed(t, mustRR(t, s))
		start := len(dst)
		var owner int
		var err error
		dst, owner, off, err = AppendRecord(dst, msg, off)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		got := dst[start:]
		if !bytes.Equal(got, want) {
			t.Errorf("record %d %s:\n got %x\nwant %x", i, s, got, want)
		}
		if owner != NameLen(got) {
			t.Errorf("record %d: owner length %d, want %d", i, owner, NameLen(got))
		}
	}
	if off != len(msg) {
		t.Errorf("ended at %d of %d", off, len(msg))
	}
}

func mustRR(t testing.TB, s string) dns.RR {
	rr, err := dns.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	return rr
}

// TestAppendRecordMalformed: names and records that break the rules are
// errors, whatever they hold.
func TestAppendRecordMalformed(t *testing.T) {
	hdr := make([]byte, 12)
	a := func(b ...byte) []byte { return append(append([]byte(nil), hdr...), b...) }
	long := []byte{}
	for range 5 {
		long = append(long, 63)
		long = append(long, bytes.Repeat([]byte{'a'}, 63)...)
	}
	long = append(long, 0)
	for _, tc := range []struct {
		name string
		msg  []byte
	}{
		{"pointer to itself", a(0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0)},
		{"pointer forward", a(0xC0, 14, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0)},
		{"pointer cut", a(0xC0)},
		{"label type 01", a(0x40, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0)},
		{"label past the end", a(5, 'a', 'b')},
		{"name over 255", append(a(), append(long, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0)...)},
		{"header cut", a(0, 0, 1, 0, 1, 0)},
		{"rdata past the end", a(0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 9, 1, 2)},
		{"NS name past its rdata", a(0, 0, 2, 0, 1, 0, 0, 0, 0, 0, 2, 3, 'a', 'b', 'c', 0)},
		{"MX too short", a(0, 0, 15, 0, 1, 0, 0, 0, 0, 0, 1, 0)},
		{"SOA with trailing bytes", a(0, 0, 6, 0, 1, 0, 0, 0, 0, 0, 23, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5, 9)},
	} {
		if _, _, _, err := AppendRecord(nil, tc.msg, 12); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// FuzzAppendRecord reads every answer record of a message: never a
// panic, and where miekg/dns reads the record too, the same record.
func FuzzAppendRecord(f *testing.F) {
	f.Add(packed(f, "example.test. 300 IN SOA ns1.example.test. h.example.test. 1 2 3 4 5", "example.test. 300 IN MX 10 example.test.", "a.example.test. 300 IN A 192.0.2.1"))
	f.Add(packed(f, "a.example.test. 300 IN NSEC example.test. A", "example.test. 300 IN RRSIG A 8 2 300 20300101000000 20200101000000 1 example.test. AAAA"))
	f.Add(packed(f, "example.test. 300 IN NS a.example.test.", "example.test. 300 IN NS b.example.test."))
	f.Fuzz(func(t *testing.T, msg []byte) {
		if len(msg) < 12 {
			return
		}
		off, ok := skipName(msg, 12)
		if !ok || off+4 > len(msg) || binary.BigEndian.Uint16(msg[4:]) != 1 {
			return
		}
		off += 4
		for range binary.BigEndian.Uint16(msg[6:]) {
			got, owner, next, err := AppendRecord(nil, msg, off)
			if err != nil {
				return
			}
			if owner < 1 || owner > len(got) || next <= off || next > len(msg) {
				t.Fatalf("owner %d of %d, next %d (from %d of %d)", owner, len(got), next, off, len(msg))
			}
			typ := binary.BigEndian.Uint16(got[owner:])
			if RDataOf(typ) == nil {
				// Opaque RDATA is copied as it is (RFC 3597 §4:
				// names in it are never compressed).
				if !bytes.Equal(got[owner+10:], msg[next-len(got[owner+10:]):next]) {
					t.Fatalf("type %d: RDATA %x is not the message's", typ, got[owner+10:])
				}
				off = next
				continue
			}
			// Where miekg/dns reads the record in the message, it reads
			// the same record in what AppendRecord made of it (it
			// drops some malformed RDATA on the way: compared as it
			// understands both).
			if rr, mnext, merr := dns.UnpackRR(msg, off); merr == nil && rr != nil && mnext == next {
				again, _, err := dns.UnpackRR(got, 0)
				if err != nil {
					t.Fatalf("%v: miekg/dns reads the record in the message but not %x: %v", rr, got, err)
				}
				if again.String() != rr.String() {
					t.Errorf("got %v, miekg/dns %v", again, rr)
				}
			}
			off = next
		}
	})
}
