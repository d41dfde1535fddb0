package signed

import (
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestDefects: the broken zones hold the defect they are named for, so
// that a validator's verdict on them is about that defect.
func TestDefects(t *testing.T) {
	addrs := []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("192.0.2.3"), netip.MustParseAddr("192.0.2.4")}
	zones, anchor, err := signTree(addrs, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(anchor) != 1 || anchor[0].Algorithm != dns.RSASHA256 {
		t.Errorf("root anchor %v, want one RSA/SHA-256 DS", anchor)
	}
	records := map[string][]dns.RR{}
	for _, z := range zones {
		records[dns.CanonicalName(z.rrs[0].Header().Name)] = z.rrs
	}
	count := func(origin string, ok func(dns.RR) bool) int {
		n := 0
		for _, rr := range records[origin] {
			if ok(rr) {
				n++
			}
		}
		return n
	}
	tags := map[uint16]int{}
	for _, rr := range records["collide.nsec."] {
		if k, ok := rr.(*dns.DNSKEY); ok {
			tags[k.KeyTag()]++
		}
	}
	if len(tags) != 1 {
		t.Errorf("collide.nsec.: DNSKEY tags %v, want two keys of one tag", tags)
	}
	for _, c := range []struct {
		origin, what string
		n            int
		ok           func(dns.RR) bool
	}{
		{"iter500.nsec.", "NSEC3 with 500 iterations", 5, func(rr dns.RR) bool { n, ok := rr.(*dns.NSEC3); return ok && n.Iterations == 500 }},
		{"badnsec3.nsec.", "NSEC3 without salt", 5, func(rr dns.RR) bool { n, ok := rr.(*dns.NSEC3); return ok && n.Salt == "" }},
		{"nonsec.nsec.", "NSEC", 0, func(rr dns.RR) bool { return rr.Header().Rrtype == dns.TypeNSEC }},
		{"nozonebit.nsec.", "DNSKEY without the Zone Key bit", 1, func(rr dns.RR) bool { k, ok := rr.(*dns.DNSKEY); return ok && k.Flags == dns.SEP }},
		{"nosig.nsec.", "RRSIG over www A", 0, func(rr dns.RR) bool {
			s, ok := rr.(*dns.RRSIG)
			return ok && s.TypeCovered == dns.TypeA && s.Hdr.Name == "www.nosig.nsec."
		}},
		{"unsupported.nsec.", "DNSKEY of algorithm 253", 1, func(rr dns.RR) bool { k, ok := rr.(*dns.DNSKEY); return ok && k.Algorithm == dns.PRIVATEDNS }},
		{"unsupported.nsec.", "RRSIG", 0, func(rr dns.RR) bool { return rr.Header().Rrtype == dns.TypeRRSIG }},
	} {
		if got := count(c.origin, c.ok); got != c.n {
			t.Errorf("%s: %d %s, want %d", c.origin, got, c.what, c.n)
		}
	}
}
