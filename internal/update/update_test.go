package update

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnssec"
	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/zone"
)

const testZone = `$ORIGIN example.com.
@        3600 IN SOA ns1 hostmaster 1 7200 3600 1209600 300
@        3600 IN NS ns1
@        3600 IN NS ns2
@        3600 IN MX 10 mail
@        3600 IN TXT "apex"
ns1      3600 IN A 192.0.2.1
ns2      3600 IN A 192.0.2.2
mail     3600 IN A 192.0.2.3
www      3600 IN A 192.0.2.10
www      3600 IN A 192.0.2.11
alias    3600 IN CNAME www
txt       300 IN TXT "hello"
a.b.c    3600 IN A 192.0.2.20
`

func loadTestZone(t testing.TB) *zone.Zone {
	t.Helper()
	z, err := zone.Read(strings.NewReader(testZone), "test.zone", "example.com.")
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// records renders a zone version as sorted presentation lines.
func records(t testing.TB, z *zone.Zone) []string {
	t.Helper()
	var rrs []dns.RR
	for _, r := range z.SortedRecords() {
		rr, err := r.Unpack()
		if err != nil {
			t.Fatal(err)
		}
		rrs = append(rrs, rr)
	}
	return dnstest.Records(rrs)
}

func rr(t testing.TB, s string) dns.RR { return dnstest.RRs(t, s)[0] }

// msg is an UPDATE of example.com. built by edit, in wire form.
func msg(t testing.TB, edit func(m *dns.Msg)) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.SetUpdate("example.com.")
	m.Id = 4711
	edit(m)
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestApply runs each rule of RFC 2136 §3.2 and §3.4 on wire-form
// messages: the RCODE, and for NOERROR the records the zone gains and
// loses and the new serial (0: no new version).
func TestApply(t *testing.T) {
	type change = []string // "+record" or "-record", as dnstest.Records prints them
	for _, tc := range []struct {
		name   string
		edit   func(t testing.TB, m *dns.Msg)
		opt    Options
		rcode  int
		serial uint32
		change change
	}{
		// §2.4.4 / §2.4.5: name in use, not in use.
		{name: "name in use", edit: func(t testing.TB, m *dns.Msg) {
			m.NameUsed([]dns.RR{rr(t, "www.example.com. A 192.0.2.1")})
			m.Insert([]dns.RR{rr(t, "new.example.com. 60 A 192.0.2.99")})
		}, serial: 2, change: change{"+new.example.com.\t60\tin\ta\t192.0.2.99"}},
		{name: "name in use: absent", edit: func(t testing.TB, m *dns.Msg) {
			m.NameUsed([]dns.RR{rr(t, "nothere.example.com. A 192.0.2.1")})
			m.Insert([]dns.RR{rr(t, "new.example.com. 60 A 192.0.2.99")})
		}, rcode: dns.RcodeNameError},
		{name: "name in use: empty non-terminal", edit: func(t testing.TB, m *dns.Msg) {
			m.NameUsed([]dns.RR{rr(t, "b.c.example.com. A 192.0.2.1")})
		}, rcode: dns.RcodeNameError},
		{name: "name not in use", edit: func(t testing.TB, m *dns.Msg) {
			m.NameNotUsed([]dns.RR{rr(t, "c.example.com. A 192.0.2.1")})
			m.Insert([]dns.RR{rr(t, "c.example.com. 60 TXT x")})
		}, serial: 2, change: change{"+c.example.com.\t60\tin\ttxt\t\"x\""}},
		{name: "name not in use: present", edit: func(t testing.TB, m *dns.Msg) {
			m.NameNotUsed([]dns.RR{rr(t, "WWW.example.com. A 192.0.2.1")})
		}, rcode: dns.RcodeYXDomain},
		// §2.4.1 / §2.4.3: RRset exists, does not exist.
		{name: "rrset exists", edit: func(t testing.TB, m *dns.Msg) {
			m.RRsetUsed([]dns.RR{rr(t, "www.example.com. A 192.0.2.1")})
		}},
		{name: "rrset exists: absent", edit: func(t testing.TB, m *dns.Msg) {
			m.RRsetUsed([]dns.RR{rr(t, "www.example.com. MX 1 mail.example.com.")})
		}, rcode: dns.RcodeNXRrset},
		{name: "rrset does not exist", edit: func(t testing.TB, m *dns.Msg) {
			m.RRsetNotUsed([]dns.RR{rr(t, "www.example.com. MX 1 mail.example.com.")})
		}},
		{name: "rrset does not exist: present", edit: func(t testing.TB, m *dns.Msg) {
			m.RRsetNotUsed([]dns.RR{rr(t, "www.example.com. A 192.0.2.1")})
		}, rcode: dns.RcodeYXRrset},
		// §2.4.2: RRset exists (value dependent), TTL aside, names in
		// RDATA compared without case.
		{name: "rrset value", edit: func(t testing.TB, m *dns.Msg) {
			m.Used([]dns.RR{rr(t, "www.example.com. 5 A 192.0.2.11"), rr(t, "www.example.com. 5 A 192.0.2.10")})
			m.Used([]dns.RR{rr(t, "alias.example.com. 5 CNAME WWW.EXAMPLE.COM.")})
		}},
		{name: "rrset value: fewer", edit: func(t testing.TB, m *dns.Msg) {
			m.Used([]dns.RR{rr(t, "www.example.com. A 192.0.2.11")})
		}, rcode: dns.RcodeNXRrset},
		{name: "rrset value: more", edit: func(t testing.TB, m *dns.Msg) {
			m.Used([]dns.RR{rr(t, "www.example.com. A 192.0.2.11"), rr(t, "www.example.com. A 192.0.2.10"), rr(t, "www.example.com. A 192.0.2.12")})
		}, rcode: dns.RcodeNXRrset},
		{name: "rrset value: absent", edit: func(t testing.TB, m *dns.Msg) {
			m.Used([]dns.RR{rr(t, "nothere.example.com. A 192.0.2.11")})
		}, rcode: dns.RcodeNXRrset},
		// §3.2.1-§3.2.3: what no prerequisite may be.
		{name: "prerequisite TTL", edit: func(t testing.TB, m *dns.Msg) {
			m.Answer = append(m.Answer, &dns.ANY{Hdr: dns.RR_Header{Name: "www.example.com.", Rrtype: dns.TypeA, Class: dns.ClassANY, Ttl: 5}})
		}, rcode: dns.RcodeFormatError},
		{name: "prerequisite class ANY with RDATA", edit: func(t testing.TB, m *dns.Msg) {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: "www.example.com.", Rrtype: dns.TypeA, Class: dns.ClassANY}, A: net.IPv4(192, 0, 2, 1)})
		}, rcode: dns.RcodeFormatError},
		{name: "prerequisite class NONE with RDATA", edit: func(t testing.TB, m *dns.Msg) {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: "www.example.com.", Rrtype: dns.TypeA, Class: dns.ClassNONE}, A: net.IPv4(192, 0, 2, 1)})
		}, rcode: dns.RcodeFormatError},
		{name: "prerequisite class CH", edit: func(t testing.TB, m *dns.Msg) {
			m.Answer = append(m.Answer, &dns.ANY{Hdr: dns.RR_Header{Name: "www.example.com.", Rrtype: dns.TypeA, Class: dns.ClassCHAOS}})
		}, rcode: dns.RcodeFormatError},
		{name: "prerequisite outside the zone", edit: func(t testing.TB, m *dns.Msg) {
			m.NameUsed([]dns.RR{rr(t, "www.example.org. A 192.0.2.1")})
		}, rcode: dns.RcodeNotZone},
		// A failed prerequisite changes nothing (§3.2: checked first).
		{name: "prerequisite fails after updates listed", edit: func(t testing.TB, m *dns.Msg) {
			m.Insert([]dns.RR{rr(t, "new.example.com. 60 A 192.0.2.99")})
			m.NameNotUsed([]dns.RR{rr(t, "www.example.com. A 192.0.2.1")})
		}, rcode: dns.RcodeYXDomain},
		// §3.4.2.2: additions.
		{name: "add to an RRset sets its TTL", edit: func(t testing.TB, m *dns.Msg) {
			m.Insert([]dns.RR{rr(t, "www.example.com. 600 A 192.0.2.12")})
		}, serial: 2, change: change{
			"+www.example.com.\t600\tin\ta\t192.0.2.10", "+www.example.com.\t600\tin\ta\t192.0.2.11", "+www.example.com.\t600\tin\ta\t192.0.2.12",
			"-www.example.com.\t3600\tin\ta\t192.0.2.10", "-www.example.com.\t3600\tin\ta\t192.0.2.11"}},
		{name: "add a record present: nothing changes", edit: func(t testing.TB, m *dns.Msg) {
			m.Insert([]dns.RR{rr(t, "WWW.example.com. 3600 A 192.0.2.10")})
		}},
		{name: "add twice in one update", edit: func(t testing.TB, m *dns.Msg) {
			m.Insert([]dns.RR{rr(t, "txt.example.com. 300 TXT two"), rr(t, "txt.example.com. 300 TXT two")})
		}, serial: 2, change: change{"+txt.example.com.\t300\tin\ttxt\t\"two\""}},
		{name: "CNAME beside data ignored", edit: func(t testing.TB, m *dns.Msg) {
			m.Insert([]dns.RR{rr(t, "www.example.com. 60 CNAME mail.example.com.")})
		}},
		{name: "data beside CNAME ignored", edit: func(t testing.TB, m *dns.Msg) {
			m.Insert([]dns.RR{rr(t, "alias.example.com. 60 A 192.0.2.1")})
		}},
		{name: "CNAME replaces CNAME", edit: func(t testing.TB, m *dns.Msg) {
			m.Insert([]dns.RR{rr(t, "alias.example.com. 60 CNAME mail.example.com.")})
		}, serial: 2, change: change{"+alias.example.com.\t60\tin\tcname\tmail.example.com.", "-alias.example.com.\t3600\tin\tcname\twww.example.com."}},
		{name: "CNAME after deleting the data", edit: func(t testing.TB, m *dns.Msg) {
			m.RemoveName([]dns.RR{rr(t, "txt.example.com. A 192.0.2.1")})
			m.Insert([]dns.RR{rr(t, "txt.example.com. 60 CNAME www.example.com.")})
		}, serial: 2, change: change{"+txt.example.com.\t60\tin\tcname\twww.example.com.", "-txt.example.com.\t300\tin\ttxt\t\"hello\""}},
		{name: "SOA with a greater serial", edit: func(t testing.TB, m *dns.Msg) {
			m.Insert([]dns.RR{rr(t, "example.com. 3600 SOA ns1.example.com. hostmaster.example.com. 100 7200 3600 1209600 60")})
		}, serial: 100},
		{name: "SOA with a smaller serial ignored", edit: func(t testing.TB, m *dns.Msg) {
			m.Insert([]dns.RR{rr(t, "example.com. 3600 SOA ns1.example.com. hostmaster.example.com. 0 7200 3600 1209600 60")})
		}},
		{name: "SOA with the same serial: the serial moves on", edit: func(t testing.TB, m *dns.Msg) {
			m.Insert([]dns.RR{rr(t, "example.com. 3600 SOA ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 60")})
		}, serial: 2},
		{name: "SOA below the apex ignored", edit: func(t testing.TB, m *dns.Msg) {
			m.Insert([]dns.RR{rr(t, "www.example.com. 3600 SOA ns1.example.com. hostmaster.example.com. 5 7200 3600 1209600 60")})
		}},
		// §3.4.2.3: deleting RRsets and names.
		{name: "delete an RRset", edit: func(t testing.TB, m *dns.Msg) {
			m.RemoveRRset([]dns.RR{rr(t, "www.example.com. A 192.0.2.1")})
		}, serial: 2, change: change{"-www.example.com.\t3600\tin\ta\t192.0.2.10", "-www.example.com.\t3600\tin\ta\t192.0.2.11"}},
		{name: "delete an RRset absent", edit: func(t testing.TB, m *dns.Msg) {
			m.RemoveRRset([]dns.RR{rr(t, "www.example.com. MX 1 mail.example.com.")})
		}},
		{name: "delete a name", edit: func(t testing.TB, m *dns.Msg) {
			m.RemoveName([]dns.RR{rr(t, "alias.example.com. A 192.0.2.1")})
		}, serial: 2, change: change{"-alias.example.com.\t3600\tin\tcname\twww.example.com."}},
		{name: "delete the apex name keeps SOA and NS", edit: func(t testing.TB, m *dns.Msg) {
			m.RemoveName([]dns.RR{rr(t, "example.com. A 192.0.2.1")})
		}, serial: 2, change: change{"-example.com.\t3600\tin\tmx\t10 mail.example.com.", "-example.com.\t3600\tin\ttxt\t\"apex\""}},
		{name: "delete the apex NS RRset ignored", edit: func(t testing.TB, m *dns.Msg) {
			m.RemoveRRset([]dns.RR{rr(t, "example.com. NS ns1.example.com.")})
			m.RemoveRRset([]dns.RR{rr(t, "example.com. SOA ns1.example.com. h.example.com. 1 1 1 1 1")})
		}},
		// §3.4.2.4: deleting records.
		{name: "delete a record", edit: func(t testing.TB, m *dns.Msg) {
			m.Remove([]dns.RR{rr(t, "www.example.com. A 192.0.2.10")})
		}, serial: 2, change: change{"-www.example.com.\t3600\tin\ta\t192.0.2.10"}},
		{name: "delete a record: names without case", edit: func(t testing.TB, m *dns.Msg) {
			m.Remove([]dns.RR{rr(t, "ALIAS.example.com. CNAME WWW.example.COM.")})
		}, serial: 2, change: change{"-alias.example.com.\t3600\tin\tcname\twww.example.com."}},
		{name: "delete a record absent", edit: func(t testing.TB, m *dns.Msg) {
			m.Remove([]dns.RR{rr(t, "www.example.com. A 192.0.2.99")})
		}},
		{name: "delete the SOA ignored", edit: func(t testing.TB, m *dns.Msg) {
			m.Remove([]dns.RR{rr(t, "example.com. SOA ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 300")})
		}},
		{name: "delete every apex NS keeps the last", edit: func(t testing.TB, m *dns.Msg) {
			m.Remove([]dns.RR{rr(t, "example.com. NS ns1.example.com."), rr(t, "example.com. NS ns2.example.com.")})
		}, serial: 2, change: change{"-example.com.\t3600\tin\tns\tns1.example.com."}},
		{name: "delete then add in one update", edit: func(t testing.TB, m *dns.Msg) {
			m.RemoveRRset([]dns.RR{rr(t, "txt.example.com. TXT x")})
			m.Insert([]dns.RR{rr(t, "txt.example.com. 300 TXT hello")})
		}},
		{name: "add then delete in one update", edit: func(t testing.TB, m *dns.Msg) {
			m.Insert([]dns.RR{rr(t, "_acme-challenge.www.example.com. 60 TXT token")})
			m.Remove([]dns.RR{rr(t, "_acme-challenge.www.example.com. TXT token")})
		}},
		// §3.4.1: the prescan refuses the whole update.
		{name: "update outside the zone", edit: func(t testing.TB, m *dns.Msg) {
			m.Insert([]dns.RR{rr(t, "new.example.com. 60 A 192.0.2.99"), rr(t, "www.example.net. 60 A 192.0.2.1")})
		}, rcode: dns.RcodeNotZone},
		{name: "update adding type ANY", edit: func(t testing.TB, m *dns.Msg) {
			m.Insert([]dns.RR{rr(t, "new.example.com. 60 A 192.0.2.99")})
			m.Ns = append(m.Ns, &dns.ANY{Hdr: dns.RR_Header{Name: "www.example.com.", Rrtype: dns.TypeANY, Class: dns.ClassINET, Ttl: 60}})
		}, rcode: dns.RcodeFormatError},
		{name: "update adding AXFR", edit: func(t testing.TB, m *dns.Msg) {
			m.Ns = append(m.Ns, &dns.RFC3597{Hdr: dns.RR_Header{Name: "www.example.com.", Rrtype: dns.TypeAXFR, Class: dns.ClassINET, Ttl: 60}, Rdata: "00"})
		}, rcode: dns.RcodeFormatError},
		{name: "update deleting an RRset with a TTL", edit: func(t testing.TB, m *dns.Msg) {
			m.Ns = append(m.Ns, &dns.ANY{Hdr: dns.RR_Header{Name: "www.example.com.", Rrtype: dns.TypeA, Class: dns.ClassANY, Ttl: 60}})
		}, rcode: dns.RcodeFormatError},
		{name: "update deleting an RRset with RDATA", edit: func(t testing.TB, m *dns.Msg) {
			m.Ns = append(m.Ns, &dns.A{Hdr: dns.RR_Header{Name: "www.example.com.", Rrtype: dns.TypeA, Class: dns.ClassANY}, A: net.IPv4(192, 0, 2, 10)})
		}, rcode: dns.RcodeFormatError},
		{name: "update deleting a record of type ANY", edit: func(t testing.TB, m *dns.Msg) {
			m.Ns = append(m.Ns, &dns.ANY{Hdr: dns.RR_Header{Name: "www.example.com.", Rrtype: dns.TypeANY, Class: dns.ClassNONE}})
		}, rcode: dns.RcodeFormatError},
		{name: "update in class CH", edit: func(t testing.TB, m *dns.Msg) {
			m.Ns = append(m.Ns, &dns.TXT{Hdr: dns.RR_Header{Name: "www.example.com.", Rrtype: dns.TypeTXT, Class: dns.ClassCHAOS}, Txt: []string{"x"}})
		}, rcode: dns.RcodeFormatError},
		{name: "update adding a record without RDATA", edit: func(t testing.TB, m *dns.Msg) {
			m.Ns = append(m.Ns, &dns.ANY{Hdr: dns.RR_Header{Name: "www.example.com.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}})
		}, rcode: dns.RcodeFormatError},
		// A zone signed by the server keeps its DNSSEC records.
		{name: "signed zone: RRSIG added", opt: Options{Signed: true}, edit: func(t testing.TB, m *dns.Msg) {
			m.Insert([]dns.RR{rr(t, "www.example.com. 60 RRSIG A 13 3 60 20300101000000 20200101000000 1 example.com. AAAA")})
		}, rcode: dns.RcodeRefused},
		{name: "signed zone: NSEC deleted", opt: Options{Signed: true}, edit: func(t testing.TB, m *dns.Msg) {
			m.RemoveRRset([]dns.RR{rr(t, "www.example.com. NSEC a.example.com. A")})
		}, rcode: dns.RcodeRefused},
		// The zone section (§3.1).
		{name: "another zone", edit: func(t testing.TB, m *dns.Msg) {
			m.Question[0].Name = "example.org."
		}, rcode: dns.RcodeNotAuth},
		{name: "a zone below", edit: func(t testing.TB, m *dns.Msg) {
			m.Question[0].Name = "www.example.com."
		}, rcode: dns.RcodeNotAuth},
		{name: "zone type not SOA", edit: func(t testing.TB, m *dns.Msg) {
			m.Question[0].Qtype = dns.TypeNS
		}, rcode: dns.RcodeFormatError},
		{name: "two zones", edit: func(t testing.TB, m *dns.Msg) {
			m.Question = append(m.Question, m.Question[0])
		}, rcode: dns.RcodeFormatError},
		{name: "zone class CH", edit: func(t testing.TB, m *dns.Msg) {
			m.Question[0].Qclass = dns.ClassCHAOS
		}, rcode: dns.RcodeNotAuth},
		// Serial policies (Knot's serial-policy).
		{name: "serial unixtime", opt: Options{Serial: dnssec.SerialUnixtime}, edit: func(t testing.TB, m *dns.Msg) {
			m.Remove([]dns.RR{rr(t, "txt.example.com. TXT hello")})
		}, serial: 1_800_000_000, change: change{"-txt.example.com.\t300\tin\ttxt\t\"hello\""}},
		{name: "serial dateserial", opt: Options{Serial: dnssec.SerialDateserial}, edit: func(t testing.TB, m *dns.Msg) {
			m.Remove([]dns.RR{rr(t, "txt.example.com. TXT hello")})
		}, serial: 2027011500, change: change{"-txt.example.com.\t300\tin\ttxt\t\"hello\""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := loadTestZone(t)
			before := records(t, z)
			pkt := msg(t, func(m *dns.Msg) { tc.edit(t, m) })
			tc.opt.Now = time.Unix(1_800_000_000, 0)
			res, err := ParseApply(z, pkt, tc.opt)
			if got := Rcode(err); got != tc.rcode {
				t.Fatalf("rcode %s (%v), want %s", dns.RcodeToString[got], err, dns.RcodeToString[tc.rcode])
			}
			if !slices.Equal(records(t, z), before) {
				t.Fatal("the zone updated changed")
			}
			if err != nil {
				return
			}
			if tc.serial == 0 {
				if res.Zone != nil {
					t.Fatalf("a new version, serial %d, for an update that changes nothing: %v", res.Zone.Serial, res.Diff)
				}
				return
			}
			if res.Zone == nil {
				t.Fatal("no new version")
			}
			if res.Zone.Serial != tc.serial || res.Diff.From != 1 || res.Diff.To != tc.serial {
				t.Errorf("serial %d (diff %d→%d), want %d", res.Zone.Serial, res.Diff.From, res.Diff.To, tc.serial)
			}
			var got change
			for _, r := range res.Diff.Deleted {
				got = append(got, "-"+line(t, r))
			}
			for _, r := range res.Diff.Added {
				got = append(got, "+"+line(t, r))
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.change))
			if !slices.Equal(got, want) {
				t.Errorf("changes\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			// The new version is the old one with the difference.
			recs, err := res.Diff.Apply(z.SortedRecords())
			if err != nil {
				t.Fatal(err)
			}
			z2, err := zone.CompileRecords("example.com.", "t", recs)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(records(t, z2), records(t, res.Zone)) {
				t.Error("the difference does not lead to the new version")
			}
		})
	}
}

func line(t testing.TB, r zone.RR) string {
	rr, err := r.Unpack()
	if err != nil {
		t.Fatal(err)
	}
	return strings.ToLower(rr.String())
}

// TestParse: what is not an UPDATE is FORMERR.
func TestParse(t *testing.T) {
	q := new(dns.Msg)
	q.SetQuestion("example.com.", dns.TypeSOA)
	query, _ := q.Pack()
	for name, pkt := range map[string][]byte{
		"empty":     nil,
		"truncated": msg(t, func(m *dns.Msg) { m.Insert([]dns.RR{rr(t, "a.example.com. 60 A 192.0.2.1")}) })[:30],
		"query":     query,
	} {
		if _, err := Parse(pkt); Rcode(err) != dns.RcodeFormatError {
			t.Errorf("%s: %v, want FORMERR", name, err)
		}
	}
	m, err := Parse(msg(t, func(m *dns.Msg) {
		m.Question[0].Name = "EXAMPLE.com."
		m.NameUsed([]dns.RR{rr(t, "www.example.com. A 192.0.2.1")})
		m.Insert([]dns.RR{rr(t, "a.example.com. 60 A 192.0.2.1")})
	}))
	if err != nil || m.Zone != "example.com." || len(m.Prereqs) != 1 || len(m.Updates) != 1 {
		t.Fatalf("%+v %v", m, err)
	}
}

// TestSequence applies updates one after another, each to the version
// the last made, as a server does.
func TestSequence(t *testing.T) {
	z := loadTestZone(t)
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("host%d.example.com.", i/2)
		pkt := msg(t, func(m *dns.Msg) {
			if i%2 == 0 {
				m.Insert([]dns.RR{rr(t, name+" 60 A 192.0.2.1")})
			} else {
				m.RemoveName([]dns.RR{rr(t, name+" A 192.0.2.1")})
			}
		})
		res, err := ParseApply(z, pkt, Options{})
		if err != nil || res.Zone == nil {
			t.Fatalf("update %d: %v", i, err)
		}
		if res.Zone.Serial != z.Serial+1 {
			t.Fatalf("update %d: serial %d after %d", i, res.Zone.Serial, z.Serial)
		}
		z = res.Zone
	}
	if got := records(t, z); !slices.Equal(got, records(t, loadTestZoneSerial(t, 21))) {
		t.Errorf("after 20 updates:\n%s", strings.Join(got, "\n"))
	}
}

func loadTestZoneSerial(t testing.TB, serial int) *zone.Zone {
	t.Helper()
	text := strings.Replace(testZone, "hostmaster 1 ", fmt.Sprintf("hostmaster %d ", serial), 1)
	z, err := zone.Read(strings.NewReader(text), "test.zone", "example.com.")
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// FuzzApply: any message is answered with an RCODE, never a panic, and
// a new version is what its difference makes of the old one.
func FuzzApply(f *testing.F) {
	for _, s := range []func(m *dns.Msg){
		func(m *dns.Msg) { m.Insert([]dns.RR{rr(f, "a.example.com. 60 A 192.0.2.1")}) },
		func(m *dns.Msg) { m.RemoveName([]dns.RR{rr(f, "www.example.com. A 192.0.2.1")}) },
		func(m *dns.Msg) { m.RemoveRRset([]dns.RR{rr(f, "example.com. NS ns1.example.com.")}) },
		func(m *dns.Msg) { m.Remove([]dns.RR{rr(f, "www.example.com. A 192.0.2.10")}) },
		func(m *dns.Msg) {
			m.Used([]dns.RR{rr(f, "www.example.com. A 192.0.2.11")})
			m.Insert([]dns.RR{rr(f, "_acme-challenge.example.com. 60 TXT x")})
		},
		func(m *dns.Msg) { m.NameNotUsed([]dns.RR{rr(f, "x.example.com. A 192.0.2.1")}) },
		func(m *dns.Msg) {
			m.Insert([]dns.RR{rr(f, "example.com. 3600 SOA ns1.example.com. hostmaster.example.com. 100 7200 3600 1209600 60")})
		},
		func(m *dns.Msg) { m.Insert([]dns.RR{rr(f, "alias.example.com. 60 CNAME mail.example.com.")}) },
	} {
		f.Add(msg(f, s))
	}
	z := loadTestZone(f)
	f.Fuzz(func(t *testing.T, pkt []byte) {
		res, err := ParseApply(z, pkt, Options{Now: time.Unix(1_800_000_000, 0)})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("an error without an RCODE: %v", err)
			}
			return
		}
		if res.Zone == nil {
			return
		}
		recs, err := res.Diff.Apply(z.SortedRecords())
		if err != nil {
			t.Fatal(err)
		}
		z2, err := zone.CompileRecords("example.com.", "t", recs)
		if err != nil {
			t.Fatal(err)
		}
		if z2.Digest() != res.Zone.Digest() {
			t.Fatal("the difference does not lead to the new version")
		}
	})
}

// BenchmarkApply is one update (a record added) of a zone of n names:
// the new version is compiled whole, so the cost grows with the zone.
func BenchmarkApply(b *testing.B) {
	for _, n := range []int{100, 10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var text strings.Builder
			text.WriteString(testZone)
			for i := range n {
				fmt.Fprintf(&text, "h%d 300 IN A 10.%d.%d.%d\n", i, i>>16&255, i>>8&255, i&255)
			}
			z, err := zone.Read(strings.NewReader(text.String()), "bench.zone", "example.com.")
			if err != nil {
				b.Fatal(err)
			}
			pkt := msg(b, func(m *dns.Msg) { m.Insert([]dns.RR{rr(b, "new.example.com. 60 A 192.0.2.1")}) })
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseApply(z, pkt, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
