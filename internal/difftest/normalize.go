package difftest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// Response is a DNS message reduced to what the comparison cares about.
// Sections are sets of RRsets rendered as canonical strings, so record
// order (which RFC 2181 section 5 makes meaningless inside an RRset) and
// name case (RFC 4343) never cause a difference.
type Response struct {
	// Rcode is the full 12-bit response code: the header's 4 bits plus the
	// OPT record's extended bits (RFC 6891 section 6.1.3).
	Rcode  int
	Opcode int
	// Flags lists the header flags that are set, e.g. "qr aa rd".
	Flags string
	// Question is the question section as received, case preserved: a
	// server must echo the QNAME octets it was sent (RFC 1035 section
	// 4.1.1), which clients using 0x20 randomization rely on.
	Question string
	// EDNS tells whether the response carried an OPT record (RFC 6891
	// section 7: a responder includes one if and only if the query did).
	EDNS bool
	// EDNSVersion and DO are taken from the OPT record when EDNS is set.
	// The advertised UDP size and the options (NSID, padding, cookies)
	// are local policy and deliberately ignored.
	EDNSVersion uint8
	DO          bool
	// EDNSZ is the OPT record's Z field, which responders set to zero
	// whatever the query had (RFC 6891 section 6.1.4).
	EDNSZ      uint16
	Answer     []string
	Authority  []string
	Additional []string
}

// Normalize reduces m to a Response.
func Normalize(m *dns.Msg) Response {
	r := Response{
		Rcode:  m.Rcode,
		Opcode: m.Opcode,
		Flags:  flagString(m),
	}
	for _, q := range m.Question {
		r.Question += fmt.Sprintf("%s %s %s", q.Name, dns.ClassToString[q.Qclass], typeString(q.Qtype))
	}
	// miekg/dns folds the OPT's extended RCODE into m.Rcode on unpack, so
	// m.Rcode is already the full value.
	var additional []dns.RR
	for _, rr := range m.Extra {
		if opt, ok := rr.(*dns.OPT); ok {
			r.EDNS = true
			r.EDNSVersion = opt.Version()
			r.DO = opt.Do()
			r.EDNSZ = uint16(opt.Hdr.Ttl & 0x7FFF)
			continue
		}
		additional = append(additional, rr)
	}
	r.Answer = rrsets(m.Answer)
	r.Authority = rrsets(m.Ns)
	r.Additional = rrsets(additional)
	return r
}

// flagString lists the set header flags in wire order (RFC 1035 section
// 4.1.1, RFC 4035 section 3.2 for AD and CD).
func flagString(m *dns.Msg) string {
	var f []string
	for _, x := range []struct {
		set  bool
		name string
	}{
		{m.Response, "qr"}, {m.Authoritative, "aa"}, {m.Truncated, "tc"},
		{m.RecursionDesired, "rd"}, {m.RecursionAvailable, "ra"},
		{m.Zero, "z"}, {m.AuthenticatedData, "ad"}, {m.CheckingDisabled, "cd"},
	} {
		if x.set {
			f = append(f, x.name)
		}
	}
	return strings.Join(f, " ")
}

// typeString names an RR type, falling back to the RFC 3597 TYPEnnn form.
func typeString(t uint16) string {
	if s, ok := dns.TypeToString[t]; ok {
		return s
	}
	return fmt.Sprintf("TYPE%d", t)
}

// rrsetKey identifies an RRset: owner (lowercased), class and type
// (RFC 2181 section 5).
type rrsetKey struct {
	owner string
	class uint16
	rtype uint16
	// covered is the type an RRSIG covers: signatures over different
	// RRsets are kept apart because each must carry the TTL of the RRset
	// it covers (RFC 4034 section 3), which differ at one owner.
	covered uint16
}

// rrsets groups rrs into RRsets and renders each as
// "owner TTL CLASS TYPE rdata | rdata ..." with sorted rdata. Records of one
// RRset that disagree on TTL (forbidden by RFC 2181 section 5.2) keep every
// TTL in the rendering so the disagreement stays visible.
func rrsets(rrs []dns.RR) []string {
	type set struct {
		ttls  []uint32
		rdata []string
	}
	sets := map[rrsetKey]*set{}
	var keys []rrsetKey
	for _, rr := range rrs {
		h := rr.Header()
		k := rrsetKey{owner: strings.ToLower(h.Name), class: h.Class, rtype: h.Rrtype}
		if sig, ok := rr.(*dns.RRSIG); ok {
			k.covered = sig.TypeCovered
		}
		s, ok := sets[k]
		if !ok {
			s = &set{}
			sets[k] = s
			keys = append(keys, k)
		}
		if !slices.Contains(s.ttls, h.Ttl) {
			s.ttls = append(s.ttls, h.Ttl)
		}
		s.rdata = append(s.rdata, rdataString(rr))
	}
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		s := sets[k]
		slices.Sort(s.rdata)
		slices.Sort(s.ttls)
		ttl := make([]string, len(s.ttls))
		for i, v := range s.ttls {
			ttl[i] = fmt.Sprint(v)
		}
		rtype := typeString(k.rtype)
		if k.rtype == dns.TypeRRSIG {
			rtype += "(" + typeString(k.covered) + ")"
		}
		out = append(out, fmt.Sprintf("%s %s %s %s %s", k.owner, strings.Join(ttl, ","),
			dns.ClassToString[k.class], rtype, strings.Join(s.rdata, " | ")))
	}
	slices.Sort(out)
	return out
}

// rdataString renders the rdata of rr in presentation format with the
// domain names it embeds lowercased, since names compare case-insensitively
// (RFC 4343 section 3) and servers differ in whether they keep the zone
// file's case.
func rdataString(rr dns.RR) string {
	rr = dns.Copy(rr)
	lc := strings.ToLower
	switch v := rr.(type) {
	case *dns.NS:
		v.Ns = lc(v.Ns)
	case *dns.CNAME:
		v.Target = lc(v.Target)
	case *dns.DNAME:
		v.Target = lc(v.Target)
	case *dns.PTR:
		v.Ptr = lc(v.Ptr)
	case *dns.MX:
		v.Mx = lc(v.Mx)
	case *dns.SRV:
		v.Target = lc(v.Target)
	case *dns.SOA:
		v.Ns, v.Mbox = lc(v.Ns), lc(v.Mbox)
	case *dns.NAPTR:
		v.Replacement = lc(v.Replacement)
	case *dns.RRSIG:
		v.SignerName = lc(v.SignerName)
	case *dns.NSEC:
		v.NextDomain = lc(v.NextDomain)
	case *dns.RFC3597:
		// Its String method renders the header differently (CLASS1),
		// so the prefix below would not come off.
		return fmt.Sprintf("\\# %d %s", len(v.Rdata)/2, v.Rdata)
	}
	return strings.TrimPrefix(rr.String(), rr.Header().String())
}

// Difference is one way two responses differ.
type Difference struct {
	// Field is what differs: "rcode", "opcode", "flags.aa" (one per flag),
	// "question", "edns", "answer", "authority" or "additional".
	Field string
	// Want and Got describe the reference's and the tested server's value.
	Want, Got string
}

// String renders d on one line (sections on several).
func (d Difference) String() string {
	return fmt.Sprintf("%s: want %s, got %s", d.Field, d.Want, d.Got)
}

// Compare lists every way got differs from want, in a fixed field order.
func Compare(want, got Response) []Difference {
	var diffs []Difference
	if want.Rcode != got.Rcode {
		diffs = append(diffs, Difference{"rcode", dns.RcodeToString[want.Rcode], dns.RcodeToString[got.Rcode]})
	}
	if want.Opcode != got.Opcode {
		diffs = append(diffs, Difference{"opcode", fmt.Sprint(want.Opcode), fmt.Sprint(got.Opcode)})
	}
	wf, gf := strings.Fields(want.Flags), strings.Fields(got.Flags)
	for _, f := range []string{"qr", "aa", "tc", "rd", "ra", "z", "ad", "cd"} {
		if w, g := slices.Contains(wf, f), slices.Contains(gf, f); w != g {
			diffs = append(diffs, Difference{"flags." + f, onOff(w), onOff(g)})
		}
	}
	if want.Question != got.Question {
		diffs = append(diffs, Difference{"question", quote(want.Question), quote(got.Question)})
	}
	if w, g := ednsString(want), ednsString(got); w != g {
		diffs = append(diffs, Difference{"edns", w, g})
	}
	for _, s := range []struct {
		name      string
		want, got []string
	}{
		{"answer", want.Answer, got.Answer},
		{"authority", want.Authority, got.Authority},
		{"additional", want.Additional, got.Additional},
	} {
		if !slices.Equal(s.want, s.got) {
			diffs = append(diffs, Difference{s.name, setString(s.want), setString(s.got)})
		}
	}
	return diffs
}

func onOff(b bool) string {
	if b {
		return "set"
	}
	return "clear"
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// ednsString renders the essential OPT properties.
func ednsString(r Response) string {
	if !r.EDNS {
		return "no OPT"
	}
	if r.EDNSZ != 0 {
		return fmt.Sprintf("OPT version %d do=%v z=%#04x", r.EDNSVersion, r.DO, r.EDNSZ)
	}
	return fmt.Sprintf("OPT version %d do=%v", r.EDNSVersion, r.DO)
}

// setString renders a section for a diff: one RRset a line.
func setString(rrsets []string) string {
	if len(rrsets) == 0 {
		return "{}"
	}
	return "{\n\t\t" + strings.Join(rrsets, "\n\t\t") + "\n\t}"
}

// SectionDiff renders the set difference of two sections, marking RRsets
// only the reference has with "-" and those only the tested server has
// with "+".
func SectionDiff(want, got []string) string {
	var b strings.Builder
	for _, w := range want {
		if !slices.Contains(got, w) {
			fmt.Fprintf(&b, "\t\t- %s\n", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			fmt.Fprintf(&b, "\t\t+ %s\n", g)
		}
	}
	return b.String()
}
