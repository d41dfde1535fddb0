package zone

// The compiler: its state, and finish, which runs the adjust pass and
// the checks and publishes the zone.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
)

// Compile checks records and builds the zone's lookup structure. It
// reports every problem found (up to a bound), each as "file:line: what".
func Compile(origin string, recs []Record) (*Zone, error) {
	c, err := newCompiler(origin, len(recs))
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		c.add(r.RR, r.File, r.Line)
	}
	return c.finish()
}

// CompileRecords builds a zone from records in wire form (an SOA first,
// then any order, as SortedRecords and Diff.Apply give them), checked
// as Compile checks a file's; problems name source and the record's
// index. It is how a changed version (a dynamic update, a difference
// applied) is built without going through presentation form.
func CompileRecords(origin, source string, recs []RR) (*Zone, error) {
	c, err := newCompiler(origin, len(recs))
	if err != nil {
		return nil, err
	}
	file := c.fileIndex(source)
	for i, r := range recs {
		p := pos{file, uint32(i + 1)}
		if len(r.Tail) < 10 || 10+int(binary.BigEndian.Uint16(r.Tail[8:])) != len(r.Tail) {
			c.errorf(&p, "malformed record")
			continue
		}
		if binary.BigEndian.Uint16(r.Tail[2:]) != dns.ClassINET {
			c.errorf(&p, "class %d is not IN", binary.BigEndian.Uint16(r.Tail[2:]))
			continue
		}
		if !wire.InZone(r.Owner, c.z.Origin) {
			c.errorf(&p, "%s is outside the zone %s", NameString(r.Owner), c.origin)
			continue
		}
		name := c.owner[:len(r.Owner)]
		wire.Lower(name, r.Owner)
		c.addTail(p, name, r.Tail)
	}
	return c.finish()
}

// pos is where a record came from: an index into compiler.files and a line.
type pos struct {
	file uint16
	line uint32
}

type compiler struct {
	z      *Zone
	origin string
	nodes  index   // the zone's index, filled as names are met
	list   []*Node // every node, in the order met
	nsec3  []*Node
	n3map  map[string]*Node
	files  []string
	soa    []pos
	errs   []posError
	warns  []posWarning
	nwarn  int       // warnings found, kept or not
	now    time.Time // for signature validity
	buf    []byte
	owner  [256]byte
	// lowTarget holds an NS or MX target being checked (checkTarget).
	lowTarget [256]byte
	// seen indexes the RDATA of large RRsets for duplicate detection.
	seen map[setID]map[string]bool
	// Slabs for nodes and for RRsets while they are built (setSlab) and
	// once their signatures are attached (finalSlab); pointer-free arenas
	// for small RRsets' wire form, without (wires) and with their
	// signatures (signedWires).
	nodeSlab    []Node
	setSlab     []RRset
	finalSlab   []RRset
	wires       []byte
	signedWires []byte
	// The nodes made or found last: records of a name, and names under
	// one parent, come together.
	lastParent *Node
	lastNode   *Node
	// sigScratch collects a node's RRSIG sets in attachSigs.
	sigScratch []RRset
}

// setID names an RRset under construction (pointers into a node's slice
// move as it grows).
type setID struct {
	n      *Node
	t, cov uint16
}

func newCompiler(origin string, sizeHint int) (*compiler, error) {
	origin = dns.CanonicalName(dns.Fqdn(origin))
	if _, ok := dns.IsDomainName(origin); !ok {
		return nil, fmt.Errorf("zone %s: invalid origin", origin)
	}
	c := &compiler{
		z:      &Zone{},
		origin: origin,
		nodes:  newIndex(sizeHint),
		list:   make([]*Node, 0, sizeHint),
		seen:   make(map[setID]map[string]bool),
		now:    time.Now(),
	}
	owire, err := wire.NameWire(origin)
	if err != nil {
		return nil, fmt.Errorf("zone %s: invalid origin: %w", origin, err)
	}
	c.z.Origin = owire
	c.z.Labels = dns.CountLabel(origin) + 1
	c.z.Apex = c.node(owire)
	return c, nil
}

// Placeholder returns an Unavailable zone for origin, to serve in place of
// a configured zone that failed to load.
func Placeholder(origin string) (*Zone, error) {
	origin = dns.CanonicalName(dns.Fqdn(origin))
	w, err := wire.NameWire(origin)
	if err != nil {
		return nil, fmt.Errorf("zone %s: invalid origin: %w", origin, err)
	}
	return &Zone{Origin: w, Labels: dns.CountLabel(origin) + 1, Unavailable: true}, nil
}

func (c *compiler) fileIndex(name string) uint16 {
	for i := len(c.files) - 1; i >= 0; i-- {
		if c.files[i] == name {
			return uint16(i)
		}
	}
	c.files = append(c.files, name)
	return uint16(len(c.files) - 1)
}

func (c *compiler) position(p pos) string {
	if int(p.file) < len(c.files) {
		return fmt.Sprintf("%s:%d", c.files[p.file], p.line)
	}
	return fmt.Sprintf("line %d", p.line)
}

// finish runs the adjust pass: RRSIGs beside what they cover, per-node
// flags and checks, additional-section links, DNSSEC chains.
func (c *compiler) finish() (*Zone, error) {
	z := c.z
	// RFC 1035 §5.2: exactly one SOA, at the apex.
	switch {
	case len(c.soa) == 0:
		c.errorf(nil, "no SOA record at the apex")
	case len(c.soa) > 1:
		for i := range c.soa[1:] {
			c.errorf(&c.soa[i+1], "second SOA record (first at %s)", c.position(c.soa[0]))
		}
	}
	for _, n := range c.nsec3 {
		c.attachSigs(n)
	}
	z.nsec3Owners = c.nsec3
	slices.SortFunc(z.nsec3Owners, func(a, b *Node) int { return bytes.Compare(a.Name, b.Name) })
	for _, n := range c.list {
		c.adjust(n)
	}
	for _, n := range c.list {
		if n.Flags&Delegation != 0 && n.Cut == nil {
			n.CutIndex = uint32(z.Cuts)
			z.Cuts++
		}
	}
	if z.Apex.NS() == nil {
		c.errorf(nil, "no NS records at the apex")
	}
	if soa := z.Apex.Get(dns.TypeSOA); soa != nil {
		z.SOA = soa
		end := 10 + int(binary.BigEndian.Uint16(soa.Wire[8:]))
		z.NegSOA = append([]byte(nil), soa.Wire[:end]...)
		binary.BigEndian.PutUint32(z.NegSOA[4:], z.NegTTL)
		if sigs, ok := soa.Sigs(); ok {
			sigs.TTL = z.NegTTL
			sigs.Wire = append([]byte(nil), sigs.Wire...)
			for w := sigs.Wire; len(w) >= 10; w = w[10+int(binary.BigEndian.Uint16(w[8:])):] {
				binary.BigEndian.PutUint32(w[4:], z.NegTTL)
			}
			z.NegSOASigs = &sigs
		}
	}
	for _, n := range c.list {
		for i := range n.RRsets {
			c.additional(&n.RRsets[i])
		}
	}
	if len(c.errs) > 0 {
		sort.SliceStable(c.errs, func(i, j int) bool { return c.errs[i].p.before(c.errs[j].p) })
		errs := make([]error, 0, len(c.errs)+1)
		for _, e := range c.errs {
			errs = append(errs, e.err)
		}
		if len(c.errs) > maxErrors {
			errs = append(errs[:maxErrors], fmt.Errorf("zone %s: too many errors", c.origin))
		}
		return nil, &Error{Errs: errs, Warnings: c.warnings()}
	}
	z.Warnings = c.warnings()
	z.files = c.files
	c.buildDNSSEC()
	c.trimArenas()
	c.nodes.fit()
	z.index = c.nodes
	z.Names = c.nodes.count
	return z, nil
}

func name(n *Node) string {
	s, _, err := dns.UnpackDomainName(n.Name, 0)
	if err != nil {
		return fmt.Sprintf("%q", n.Name)
	}
	return strings.ToLower(s)
}

// NameString renders a wire name for messages.
func NameString(name []byte) string {
	s, ok := wire.NameText(name)
	if !ok {
		return fmt.Sprintf("%q", name)
	}
	return s
}
