package zone

// Load-time checks (RFC 1034, RFC 2181, RFC 6672) and how their
// problems are collected.

import (
	"encoding/binary"
	"fmt"

	"github.com/miekg/dns"
	"github.com/tern-dns/tern/internal/wire"
)

// maxErrors bounds how many problems one compile reports.
const maxErrors = 100

// posError is an error with its position, for sorting.
type posError struct {
	p   pos
	err error
}

func (c *compiler) errorf(p *pos, format string, args ...any) {
	if len(c.errs) > maxErrors {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if p != nil {
		c.errs = append(c.errs, posError{*p, fmt.Errorf("%s: %s", c.position(*p), msg)})
	} else {
		c.errs = append(c.errs, posError{pos{}, fmt.Errorf("zone %s: %s", c.origin, msg)})
	}
}

// syntaxError records a syntax error at file:line; msg is ":column:
// what" or " what".
func (c *compiler) syntaxError(file string, line int, msg string) {
	if len(c.errs) > maxErrors {
		return
	}
	p := pos{c.fileIndex(file), uint32(line)}
	c.errs = append(c.errs, posError{p, fmt.Errorf("%s:%d:%s", file, line, msg)})
}

// setPos returns the position of the first record of n's set of type t.
func setPos(n *Node, t uint16) *pos {
	if s := n.Get(t); s != nil {
		return &pos{s.file, s.line}
	}
	return nil
}

// check applies the per-name rules of RFC 1034 and RFC 2181.
func (c *compiler) check(n *Node) {
	if cname := n.CNAME(); cname != nil {
		// RFC 1034 §3.6.2, RFC 2181 §10.1: a CNAME has no other data,
		// except the DNSSEC records about it (RFC 4035 §2.5).
		for _, s := range n.RRsets {
			switch s.Type {
			case dns.TypeCNAME, dns.TypeRRSIG, dns.TypeNSEC:
			default:
				c.errorf(setPos(n, s.Type), "%s record beside a CNAME at %s (RFC 1034 §3.6.2)",
					dns.TypeToString[s.Type], name(n))
			}
		}
		if cname.Count > 1 {
			c.errorf(setPos(n, dns.TypeCNAME), "more than one CNAME record at %s (RFC 2181 §10.1)", name(n))
		}
		if n.Flags&Apex != 0 {
			c.errorf(setPos(n, dns.TypeCNAME), "CNAME record at the zone apex")
		}
	}
	if soa := n.Get(dns.TypeSOA); soa != nil && n.Flags&Apex == 0 {
		c.errorf(setPos(n, dns.TypeSOA), "SOA record at %s, not at the apex %s", name(n), c.origin)
	}
	if d := n.DNAME(); d != nil && d.Count > 1 {
		c.errorf(setPos(n, dns.TypeDNAME), "more than one DNAME record at %s (RFC 6672 §2.4)", name(n))
	}
	if n.Cut != nil && n.Cut.Flags&Delegation == 0 && len(n.RRsets) > 0 {
		// RFC 6672 §2.4: "Resource records MUST NOT exist at any
		// subdomain of the owner of a DNAME RR."
		c.errorf(setPos(n, n.RRsets[0].Type), "%s record at %s below the DNAME at %s (RFC 6672 §2.4)",
			dns.TypeToString[n.RRsets[0].Type], name(n), name(n.Cut))
	}
	if n.Cut != nil && n.Cut.Flags&Delegation != 0 {
		// RFC 1034 §4.2.1: below a cut only glue (addresses) may appear.
		for _, s := range n.RRsets {
			if s.Type != dns.TypeA && s.Type != dns.TypeAAAA {
				c.errorf(setPos(n, s.Type), "%s record at %s below the delegation %s (only glue allowed)",
					dns.TypeToString[s.Type], name(n), name(n.Cut))
			}
		}
	}
	if n.Flags&Delegation != 0 {
		for _, s := range n.RRsets {
			switch s.Type {
			case dns.TypeNS, dns.TypeDS, dns.TypeRRSIG, dns.TypeNSEC, dns.TypeA, dns.TypeAAAA:
			default:
				c.errorf(setPos(n, s.Type), "%s record at the delegation %s (RFC 1034 §4.2.1: not authoritative)",
					dns.TypeToString[s.Type], name(n))
			}
		}
	}
}

// checkTarget warns about an in-zone NS or MX target (of set s) that has
// no address in the zone: t is its node, nil when the name does not
// exist. An MX target in a delegated child has its address there, and a
// name a wildcard with an address covers resolves; an NS target below a
// cut needs glue (RFC 1034 §4.2.1).
func (c *compiler) checkTarget(s *RRset, target []byte, t *Node) {
	// Lowered into the compiler's buffer: a local array would escape
	// (through NameString) and cost an allocation per target.
	target = c.lowTarget[:copy(c.lowTarget[:], target)]
	wire.Lower(target, target)
	if !wire.InZone(target, c.z.Origin) {
		return
	}
	e := t // the nearest node that exists
	for up := target; e == nil && len(up) > 1; {
		up = up[int(up[0])+1:]
		e = c.nodes.get(up)
	}
	if e == nil {
		return
	}
	if t == nil {
		if w := e.WildcardChild; w != nil && e.Cut == nil && (w.Get(dns.TypeA) != nil || w.Get(dns.TypeAAAA) != nil) {
			return
		}
	}
	below := e.Cut != nil || e.Flags&Delegation != 0 || (e != t && e.DNAME() != nil)
	if below && s.Type != dns.TypeNS {
		return
	}
	if c.warningsFull() {
		return
	}
	what := "has no A or AAAA record in the zone"
	if below {
		what = "is below a zone cut and has no glue (A or AAAA) record"
	}
	c.warnf(&pos{s.file, s.line}, "%s target %s %s", dns.Type(s.Type), NameString(target), what)
}

// checkValidity warns when none of the signatures sig (an RRSIG set
// covering one of n's RRsets) is valid at load time: resolvers will find
// the RRset bogus (RFC 4035 §5.3.1).
func (c *compiler) checkValidity(n *Node, sig *RRset) {
	now := uint32(c.now.Unix())
	expired, early := 0, 0
	// The records walked here rather than with Each, whose closure would
	// cost an allocation per signed RRset.
	for w := sig.Wire; len(w) >= 10; {
		n := 10 + int(binary.BigEndian.Uint16(w[8:]))
		if rd := w[10:n]; len(rd) >= 16 {
			// RFC 4034 §3.1.5: times compare in serial number
			// arithmetic (RFC 1982 §3.2).
			exp, inc := binary.BigEndian.Uint32(rd[8:]), binary.BigEndian.Uint32(rd[12:])
			switch {
			case wire.SerialCompare(exp, now) < 0:
				expired++
			case wire.SerialCompare(inc, now) > 0:
				early++
			}
		}
		w = w[n:]
	}
	if expired+early < int(sig.Count) || c.warningsFull() {
		return
	}
	var what string
	switch {
	case early == 0:
		what = "have all expired"
	case expired == 0:
		what = "are not valid yet (inception in the future)"
	default:
		what = "have expired or are not valid yet"
	}
	c.warnf(&pos{sig.file, sig.line}, "the RRSIGs of %s %s %s: validators will find it bogus (RFC 4035 §5.3.1)",
		name(n), dns.Type(sig.covered), what)
}
