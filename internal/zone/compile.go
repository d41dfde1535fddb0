package zone

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/miekg/dns"
)

// maxErrors bounds how many problems one compile reports.
const maxErrors = 100

// Load parses and compiles a zone file.
func Load(path, origin string) (*Zone, error) {
	recs, err := ParseFile(path, origin)
	if err != nil {
		return nil, err
	}
	return Compile(origin, recs)
}

// Compile checks records and builds the zone's lookup structure. It
// reports every problem found (up to a bound), each as "file:line: what".
func Compile(origin string, recs []Record) (*Zone, error) {
	origin = dns.CanonicalName(dns.Fqdn(origin))
	c := &compiler{
		z:     &Zone{},
		nodes: make(map[string]*Node, len(recs)/2+1),
		sets:  make(map[setKey]*pending),
	}
	wire, err := nameWire(origin)
	if err != nil {
		return nil, fmt.Errorf("zone %s: invalid origin: %w", origin, err)
	}
	c.z.Origin = wire
	c.z.Labels = dns.CountLabel(origin) + 1
	c.origin = origin
	for i := range recs {
		c.add(&recs[i])
	}
	c.finish()
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	return c.z, nil
}

// setKey names an RRset being collected: RRSIGs are collected per covered
// type, beside the RRset they cover.
type setKey struct {
	owner string // the node's canonical wire name
	typ   uint16 // the type, or for signatures the covered type
	sig   bool
}

// pending is an RRset being collected.
type pending struct {
	node    *Node
	typ     uint16
	first   *Record
	wire    []byte
	count   int
	ttl     uint32
	sig     bool // an RRSIG set; covered is the type it covers
	covered uint16
	seen    map[string]bool // rdata already added, once the set is large
}

type compiler struct {
	nsec3    []*Node
	nsec3map map[string]*Node
	z        *Zone
	origin   string
	nodes    map[string]*Node
	sets     map[setKey]*pending
	order    []*pending
	soa      []*Record
	errs     []error
	buf      []byte
}

func (c *compiler) errorf(r *Record, format string, args ...any) {
	if len(c.errs) == maxErrors {
		c.errs = append(c.errs, fmt.Errorf("zone %s: too many errors", c.origin))
	}
	if len(c.errs) > maxErrors {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if r != nil {
		c.errs = append(c.errs, fmt.Errorf("%s: %s", r.Position(), msg))
	} else {
		c.errs = append(c.errs, fmt.Errorf("zone %s: %s", c.origin, msg))
	}
}

// node returns the node for a canonical wire name, creating it and its
// ancestors up to the apex (which makes empty non-terminals exist).
func (c *compiler) node(wire []byte) *Node {
	if n, ok := c.nodes[bytesString(wire)]; ok {
		return n
	}
	n := &Node{Name: wire}
	c.nodes[bytesString(wire)] = n
	if len(wire) > len(c.z.Origin) {
		n.Parent = c.node(wire[int(wire[0])+1:])
		if wire[0] == 1 && wire[1] == '*' {
			n.Flags |= Wildcard
		}
	} else {
		n.Flags |= Apex
		c.z.Apex = n
	}
	return n
}

// nsec3Node returns the node of an NSEC3 owner, kept out of the name tree.
func (c *compiler) nsec3Node(wire []byte) *Node {
	if n, ok := c.nsec3map[bytesString(wire)]; ok {
		return n
	}
	if c.nsec3map == nil {
		c.nsec3map = make(map[string]*Node)
	}
	n := &Node{Name: wire}
	c.nsec3map[bytesString(wire)] = n
	c.nsec3 = append(c.nsec3, n)
	return n
}

func (c *compiler) add(r *Record) {
	h := r.RR.Header()
	owner := dns.CanonicalName(h.Name)
	if !dns.IsSubDomain(c.origin, owner) {
		c.errorf(r, "%s is outside the zone %s", h.Name, c.origin)
		return
	}
	if h.Class != dns.ClassINET {
		c.errorf(r, "class %s is not IN", dns.ClassToString[h.Class])
		return
	}
	switch h.Rrtype {
	case dns.TypeOPT, dns.TypeTSIG, dns.TypeTKEY, dns.TypeAXFR, dns.TypeIXFR, dns.TypeANY:
		c.errorf(r, "type %s cannot be zone data", dns.TypeToString[h.Rrtype])
		return
	}
	wire, err := nameWire(owner)
	if err != nil {
		c.errorf(r, "owner %s: %v", h.Name, err)
		return
	}
	var n *Node
	if sig, ok := r.RR.(*dns.RRSIG); h.Rrtype == dns.TypeNSEC3 || ok && sig.TypeCovered == dns.TypeNSEC3 {
		// RFC 5155 §7.2.8: NSEC3 owners are not part of the name space.
		n = c.nsec3Node(wire)
	} else {
		n = c.node(wire)
	}
	key := setKey{owner: bytesString(n.Name), typ: h.Rrtype}
	if sig, ok := r.RR.(*dns.RRSIG); ok {
		// RRSIGs are kept beside the RRset they cover (RFC 4035 §3.1.1
		// sends them together).
		key.typ, key.sig = sig.TypeCovered, true
	}
	p := c.sets[key]
	if p == nil {
		p = &pending{node: n, typ: h.Rrtype, first: r, ttl: h.Ttl, sig: key.sig, covered: key.typ}
		c.sets[key] = p
		c.order = append(c.order, p)
	}
	tail, err := c.tail(r.RR)
	if err != nil {
		c.errorf(r, "cannot encode %s record: %v", dns.TypeToString[h.Rrtype], err)
		return
	}
	// RFC 2181 §5: identical records are one record.
	if p.has(tail) {
		return
	}
	if h.Rrtype == dns.TypeSOA {
		c.soa = append(c.soa, r)
	}
	p.wire = append(p.wire, tail...)
	p.count++
	c.z.Records++
}

// tail encodes rr without its owner: TYPE, CLASS, TTL, RDLENGTH, RDATA,
// names in RDATA uncompressed.
func (c *compiler) tail(rr dns.RR) ([]byte, error) {
	if cap(c.buf) < 65535+300 {
		c.buf = make([]byte, 65535+300)
	}
	buf := c.buf[:cap(c.buf)]
	n, err := dns.PackRR(rr, buf, 0, nil, false)
	if err != nil {
		return nil, err
	}
	_, ownerLen, err := dns.UnpackDomainName(buf[:n], 0)
	if err != nil {
		return nil, err
	}
	return buf[ownerLen:n], nil
}

// has reports whether the set already holds a record with tail's RDATA,
// and remembers tail's RDATA. Small sets are scanned; large ones indexed.
func (p *pending) has(tail []byte) bool {
	rd := tail[10:]
	if p.seen != nil {
		if p.seen[string(rd)] {
			return true
		}
		p.seen[string(rd)] = true
		return false
	}
	found := false
	w := p.wire
	for len(w) >= 10 {
		n := 10 + int(binary.BigEndian.Uint16(w[8:]))
		if string(w[10:n]) == string(rd) {
			found = true
		}
		w = w[n:]
	}
	if !found && p.count >= 16 {
		p.seen = make(map[string]bool, 2*p.count)
		w := p.wire
		for len(w) >= 10 {
			n := 10 + int(binary.BigEndian.Uint16(w[8:]))
			p.seen[string(w[10:n])] = true
			w = w[n:]
		}
		p.seen[string(rd)] = true
	}
	return found
}

func (c *compiler) finish() {
	z := c.z
	// RFC 1035 §5.2: exactly one SOA, at the apex.
	switch {
	case len(c.soa) == 0:
		c.errorf(nil, "no SOA record at the apex")
	case len(c.soa) > 1:
		for _, r := range c.soa[1:] {
			c.errorf(r, "second SOA record (first at %s)", c.soa[0].Position())
		}
	}
	for _, r := range c.soa {
		if dns.CanonicalName(r.RR.Header().Name) != c.origin {
			c.errorf(r, "SOA record at %s, not at the apex %s", r.RR.Header().Name, c.origin)
		}
	}
	if z.Apex == nil {
		z.Apex = c.node(z.Origin)
	}
	// Materialize the RRsets on their nodes, RRSIGs beside what they cover.
	for _, p := range c.order {
		if p.sig {
			continue
		}
		p.node.RRsets = append(p.node.RRsets, RRset{Type: p.typ, Count: p.count, TTL: p.ttl, Wire: p.wire})
	}
	for _, p := range c.order {
		if !p.sig {
			continue
		}
		s := &RRset{Type: dns.TypeRRSIG, Count: p.count, TTL: p.ttl, Wire: p.wire}
		if set := p.node.Get(p.covered); set != nil {
			set.Sigs = s
		} else {
			// A signature whose RRset is absent is kept as data so a
			// query for RRSIG still finds it.
			p.node.RRsets = append(p.node.RRsets, RRset{Type: dns.TypeRRSIG, Count: p.count, TTL: p.ttl, Wire: p.wire})
		}
	}
	firstOf := func(n *Node, t uint16) *Record {
		if p := c.sets[setKey{owner: bytesString(n.Name), typ: t}]; p != nil {
			return p.first
		}
		return nil
	}
	nodes := make([]*Node, 0, len(c.nodes))
	for _, n := range c.nodes {
		nodes = append(nodes, n)
	}
	// Parents before children, and a stable order for messages.
	sort.Slice(nodes, func(i, j int) bool {
		if len(nodes[i].Name) != len(nodes[j].Name) {
			return len(nodes[i].Name) < len(nodes[j].Name)
		}
		return string(nodes[i].Name) < string(nodes[j].Name)
	})
	for _, n := range nodes {
		sort.Slice(n.RRsets, func(i, j int) bool { return n.RRsets[i].Type < n.RRsets[j].Type })
		n.CNAME, n.DNAME, n.NS = n.Get(dns.TypeCNAME), n.Get(dns.TypeDNAME), n.Get(dns.TypeNS)
		if len(n.RRsets) == 0 {
			n.Flags |= NonTerminal
		}
		if n.NS != nil && n.Flags&Apex == 0 {
			n.Flags |= Delegation
		}
		if p := n.Parent; p != nil {
			if p.Cut != nil {
				n.Cut = p.Cut
			} else if p.Flags&Delegation != 0 || p.DNAME != nil {
				n.Cut = p
			}
			if n.Flags&Wildcard != 0 {
				p.WildcardChild = n
			}
		}
		c.checkNode(n, firstOf)
	}
	if z.Apex.NS == nil {
		c.errorf(nil, "no NS records at the apex")
	}
	if soa := z.Apex.Get(dns.TypeSOA); soa != nil && len(c.soa) > 0 {
		z.SOA = soa
		s := c.soa[0].RR.(*dns.SOA)
		z.Serial = s.Serial
		z.NegTTL = min(s.Hdr.Ttl, s.Minttl)
		z.NegSOA = append([]byte(nil), soa.Wire[:10+int(binary.BigEndian.Uint16(soa.Wire[8:]))]...)
		binary.BigEndian.PutUint32(z.NegSOA[4:], z.NegTTL)
	}
	for _, n := range nodes {
		for i := range n.RRsets {
			c.additional(n, &n.RRsets[i])
		}
	}
	c.buildDNSSEC(nodes)
	z.nodes = c.nodes
	z.Names = len(c.nodes)
}

// checkNode applies the per-name rules of RFC 1034 and RFC 2181.
func (c *compiler) checkNode(n *Node, firstOf func(*Node, uint16) *Record) {
	if n.CNAME != nil {
		// RFC 1034 §3.6.2, RFC 2181 §10.1: a CNAME has no other data,
		// except the DNSSEC records about it (RFC 4035 §2.5).
		for _, s := range n.RRsets {
			switch s.Type {
			case dns.TypeCNAME, dns.TypeRRSIG, dns.TypeNSEC:
			default:
				c.errorf(firstOf(n, s.Type), "%s record beside a CNAME at %s (RFC 1034 §3.6.2)",
					dns.TypeToString[s.Type], name(n))
			}
		}
		if n.CNAME.Count > 1 {
			c.errorf(firstOf(n, dns.TypeCNAME), "more than one CNAME record at %s (RFC 2181 §10.1)", name(n))
		}
		if n.Flags&Apex != 0 {
			c.errorf(firstOf(n, dns.TypeCNAME), "CNAME record at the zone apex")
		}
	}
	if n.DNAME != nil && n.DNAME.Count > 1 {
		c.errorf(firstOf(n, dns.TypeDNAME), "more than one DNAME record at %s (RFC 6672 §2.4)", name(n))
	}
	if n.Cut != nil && n.Cut.Flags&Delegation != 0 {
		// RFC 1034 §4.2.1: below a cut only glue (addresses) may appear.
		for _, s := range n.RRsets {
			if s.Type != dns.TypeA && s.Type != dns.TypeAAAA {
				c.errorf(firstOf(n, s.Type), "%s record at %s below the delegation %s (only glue allowed)",
					dns.TypeToString[s.Type], name(n), name(n.Cut))
			}
		}
	}
	if n.Flags&Delegation != 0 {
		for _, s := range n.RRsets {
			switch s.Type {
			case dns.TypeNS, dns.TypeDS, dns.TypeRRSIG, dns.TypeNSEC, dns.TypeA, dns.TypeAAAA:
			default:
				c.errorf(firstOf(n, s.Type), "%s record at the delegation %s (RFC 1034 §4.2.1: not authoritative)",
					dns.TypeToString[s.Type], name(n))
			}
		}
	}
}

// additional links an RRset to the in-zone nodes whose addresses go into
// the additional section with it.
func (c *compiler) additional(n *Node, s *RRset) {
	var off int
	switch s.Type {
	case dns.TypeNS:
		off = 0
	case dns.TypeMX:
		off = 2
	case dns.TypeSRV:
		off = 6
	default:
		return
	}
	var seen []*Node
	s.Each(func(tail []byte) {
		rd := tail[10:]
		if len(rd) <= off {
			return
		}
		target := rd[off:]
		target = target[:wireNameLen(target)]
		t := c.nodes[bytesString(lowerWire(target))]
		if t == nil || (t.Get(dns.TypeA) == nil && t.Get(dns.TypeAAAA) == nil) {
			return
		}
		for _, x := range seen {
			if x == t {
				return
			}
		}
		seen = append(seen, t)
	})
	s.Additional = seen
}

func wireNameLen(p []byte) int {
	n := 0
	for n < len(p) && p[n] != 0 {
		n += int(p[n]) + 1
	}
	return n + 1
}

// lowerWire returns a lowercased copy of a wire name.
func lowerWire(p []byte) []byte {
	out := make([]byte, len(p))
	for i, b := range p {
		if b >= 'A' && b <= 'Z' {
			b += 'a' - 'A'
		}
		out[i] = b
	}
	return out
}

// nameWire packs a presentation name (already lowercased) uncompressed.
func nameWire(s string) ([]byte, error) {
	buf := make([]byte, 256)
	n, err := dns.PackDomainName(s, buf, 0, nil, false)
	if err != nil {
		return nil, err
	}
	return buf[:n:n], nil
}

func name(n *Node) string {
	s, _, err := dns.UnpackDomainName(n.Name, 0)
	if err != nil {
		return fmt.Sprintf("%q", n.Name)
	}
	return strings.ToLower(s)
}

// NameString renders a wire name for messages.
func NameString(wire []byte) string {
	s, _, err := dns.UnpackDomainName(wire, 0)
	if err != nil {
		return fmt.Sprintf("%q", wire)
	}
	return s
}
