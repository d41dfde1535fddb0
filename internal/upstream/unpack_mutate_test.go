package upstream

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// TestUnpackMutations holds unpackCommon to dns.Msg.Unpack on answers
// built at random (names with escapes, mixed case and long labels;
// A, AAAA, NS, CNAME, DNAME, SOA, TXT and OPT records in every section;
// compressed or not) and then cut short, with octets overwritten or
// with their counts changed: whatever unpackCommon reads must be what
// dns.Msg.Unpack reads, and nothing it refuses. A fixed seed: the same
// packets every run, as a table (FuzzUnpack explores further).
func TestUnpackMutations(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	labels := []string{"a", "B", "com", "Example", "ns1", "www", "long" + strings.Repeat("z", 59)}
	escaped := []string{`x\.y`, `\000`, `w\032w`} // left to dns.Msg.Unpack
	name := func() string {
		var b strings.Builder
		for range rng.IntN(5) {
			l := labels[rng.IntN(len(labels))]
			if rng.IntN(40) == 0 {
				l = escaped[rng.IntN(len(escaped))]
			}
			b.WriteString(l + ".")
		}
		if b.Len() == 0 {
			return "."
		}
		return b.String()
	}
	record := func() dns.RR {
		o := name()
		var s string
		switch rng.IntN(13) {
		case 0:
			s = o + " 300 IN A 192.0.2.1"
		case 1:
			s = o + " 300 IN AAAA 2001:db8::1"
		case 2:
			s = o + " 300 IN NS " + name()
		case 3:
			s = o + " 300 IN CNAME " + name()
		case 4:
			s = o + " 300 IN DNAME " + name()
		case 5:
			s = o + " 300 IN SOA " + name() + " " + name() + " 1 2 3 4 5"
		case 6:
			s = o + " 300 IN TXT hi" // left to dns.Msg.Unpack
		default:
			s = o + " 300 IN A 192.0.2.2"
		}
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return rr
	}
	section := func(most int) (rrs []dns.RR) {
		for range rng.IntN(most + 1) {
			rrs = append(rrs, record())
		}
		return rrs
	}
	packets, read := 0, 0
	for range 3000 {
		m := new(dns.Msg)
		m.SetQuestion(name(), dns.TypeA)
		m.Response = true
		m.Answer, m.Ns, m.Extra = section(3), section(3), section(2)
		if rng.IntN(2) == 0 {
			m.SetEdns0(1232, rng.IntN(2) == 0)
			if rng.IntN(3) == 0 {
				m.Extra[len(m.Extra)-1].(*dns.OPT).SetExtendedRcode(dns.RcodeBadCookie)
			}
		}
		m.Compress = rng.IntN(3) != 0
		pkt, err := m.Pack()
		if err != nil {
			continue // a name too long
		}
		// The last record's RDATA one octet longer than its type's
		// (dns.Msg.Unpack refuses it): its start is the length of
		// the message packed without it (compression points back).
		grown := func() []byte {
			last := m.Copy()
			switch {
			case len(last.Extra) > 0:
				last.Extra = last.Extra[:len(last.Extra)-1]
			case len(last.Ns) > 0:
				last.Ns = last.Ns[:len(last.Ns)-1]
			case len(last.Answer) > 0:
				last.Answer = last.Answer[:len(last.Answer)-1]
			default:
				return nil
			}
			prefix, err := last.Pack()
			if err != nil {
				return nil
			}
			_, off, err := dns.UnpackDomainName(pkt, len(prefix))
			if err != nil {
				t.Fatal(err)
			}
			p := append(append([]byte(nil), pkt...), 0)
			p[off+9]++ // rdlength's low octet; RDATA here is short
			return p
		}
		for range 8 {
			p := append([]byte(nil), pkt...)
			switch rng.IntN(5) {
			case 0:
				p = p[:rng.IntN(len(p)+1)]
			case 1:
				for range 1 + rng.IntN(3) {
					p[rng.IntN(len(p))] = byte(rng.IntN(256))
				}
			case 2:
				p[5+2*rng.IntN(4)] = byte(rng.IntN(12)) // a count
			case 3:
				if p = grown(); p == nil {
					continue
				}
			}
			packets++
			want := new(dns.Msg)
			wantErr := want.Unpack(p)
			got, ok := new(reader).unpackCommon(p, m.Question[0].Name)
			if !ok {
				continue
			}
			read++
			if wantErr != nil {
				t.Fatalf("read\n%v\nwhich dns.Msg.Unpack refuses (%v): % x", got, wantErr, p)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got\n%v\nwant\n%v\npacket % x", got, want, p)
			}
		}
	}
	// The generator must reach the parser: many packets have an escape
	// or a TXT record, or are broken, and go to dns.Msg.Unpack.
	if read < packets/10 {
		t.Fatalf("unpackCommon read %d of %d packets", read, packets)
	}
	if testing.Verbose() {
		t.Logf("unpackCommon read %d of %d packets", read, packets)
	}
}
