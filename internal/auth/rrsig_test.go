package auth

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/zone"
)

// orphanZone has signatures whose RRset is absent (kept as data): at
// orph, one covering A, below the TXT that is signed; at orph2, one
// covering a type above TXT.
const orphanZone = `$ORIGIN orphan.test.
$TTL 3600
@ SOA ns1 host 1 7200 3600 1209600 300
@ NS ns1
ns1 A 192.0.2.1
orph TXT "x"
orph RRSIG TXT 13 3 3600 20360101000000 20260101000000 1 orphan.test. AAAA
orph RRSIG MX 13 3 3600 20360101000000 20260101000000 1 orphan.test. AAAA
orph RRSIG A 13 3 3600 20360101000000 20260101000000 1 orphan.test. AAAA
orph RRSIG A 13 3 3600 20360101000000 20260101000000 2 orphan.test. BBBB
orph2 TXT "y"
orph2 RRSIG TXT 13 3 3600 20360101000000 20260101000000 1 orphan.test. AAAA
orph2 RRSIG SPF 13 3 3600 20360101000000 20260101000000 1 orphan.test. AAAA
`

// TestQTypeRRSIG: a query for RRSIG is answered as Knot 3.2 answers it,
// over UDP and TCP alike: with the signatures of one covered type, the
// lowest at the name (orphan signatures included), not every signature at
// the name, which made a 41-byte query draw the largest answer the zone
// had (the amplification RFC 8482 §4.2 closes for ANY). A CNAME is not
// followed for RRSIG or NSEC, which live at the alias itself (RFC 4035
// §2.5); a wildcard synthesizes its signatures, with the wildcard proof
// under DO. The signed.test cases were checked against knotd 3.2.6.
func TestQTypeRRSIG(t *testing.T) {
	r, _ := signedResponder(t)
	z, err := zone.Read(strings.NewReader(orphanZone), "orphan.zone", "orphan.test.")
	if err != nil {
		t.Fatal(err)
	}
	zs := append(r.Zones().Zones(), z)
	r.Publish(zone.NewSet(zs...))
	tests := []struct {
		name         string
		qname        string
		qtype        uint16
		do           bool
		rcode        int
		answer, auth string
	}{
		{"apex", "signed.test.", dns.TypeRRSIG, false, 0, "signed.test. RRSIG(NS)", ""},
		{"apex with DO", "signed.test.", dns.TypeRRSIG, true, 0, "signed.test. RRSIG(NS)", ""},
		{"one type", "www.signed.test.", dns.TypeRRSIG, false, 0, "www.signed.test. RRSIG(A)", ""},
		{"alias", "alias.signed.test.", dns.TypeRRSIG, true, 0, "alias.signed.test. RRSIG(CNAME)", ""},
		{"NSEC at an alias", "alias.signed.test.", dns.TypeNSEC, true, 0,
			"alias.signed.test. NSEC, alias.signed.test. RRSIG(NSEC)", ""},
		{"wildcard", "x.w.signed.test.", dns.TypeRRSIG, true, 0, "x.w.signed.test. RRSIG(A)",
			"*.w.signed.test. NSEC, *.w.signed.test. RRSIG(NSEC)"},
		{"empty non-terminal", "b.signed.test.", dns.TypeRRSIG, false, 0, "", "signed.test. SOA"},
		{"glue: a referral", "ns.secure.signed.test.", dns.TypeRRSIG, false, 0, "",
			"secure.signed.test. NS"},
		{"orphan below the signed type", "orph.orphan.test.", dns.TypeRRSIG, false, 0,
			"orph.orphan.test. RRSIG(A), orph.orphan.test. RRSIG(A)", ""},
		{"orphan above the signed type", "orph2.orphan.test.", dns.TypeRRSIG, false, 0, "orph2.orphan.test. RRSIG(TXT)", ""},
		{"orphans with DO", "orph.orphan.test.", dns.TypeRRSIG, true, 0,
			"orph.orphan.test. RRSIG(A), orph.orphan.test. RRSIG(A)", ""},
	}
	for _, tc := range tests {
		for _, tcp := range []bool{false, true} {
			name := tc.name + "/udp"
			if tcp {
				name = tc.name + "/tcp"
			}
			t.Run(name, func(t *testing.T) {
				m := query(tc.qname, tc.qtype)
				m.SetEdns0(4096, tc.do)
				pkt, err := m.Pack()
				if err != nil {
					t.Fatal(err)
				}
				var s Scratch
				out := r.Answer(&s, pkt, make([]byte, 0, BufferSize), tcp)
				resp := new(dns.Msg)
				if err := resp.Unpack(out); err != nil {
					t.Fatal(err)
				}
				if resp.Rcode != tc.rcode || resp.Truncated || !resp.Authoritative && tc.auth == "" {
					t.Errorf("rcode %d TC %v AA %v", resp.Rcode, resp.Truncated, resp.Authoritative)
				}
				if got := shape(resp.Answer); got != tc.answer {
					t.Errorf("answer:\n %s\nwant\n %s", got, tc.answer)
				}
				if got := shape(resp.Ns); got != tc.auth {
					t.Errorf("authority:\n %s\nwant\n %s", got, tc.auth)
				}
				// The header's counts are the records that follow.
				if an := binary.BigEndian.Uint16(out[6:]); int(an) != len(resp.Answer) {
					t.Errorf("ANCOUNT %d, %d records", an, len(resp.Answer))
				}
			})
		}
	}
}
