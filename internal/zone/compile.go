package zone

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
)

// maxErrors bounds how many problems one compile reports.
const maxErrors = 100

// Load parses and compiles a zone file. Records are compiled as they are
// parsed, so a large zone never exists twice in memory.
func Load(path, origin string) (*Zone, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("zone %s: %w", dns.Fqdn(origin), err)
	}
	defer f.Close()
	hint := 0
	if st, err := f.Stat(); err == nil {
		// About one name per 24 bytes of zone file, at most a million (a
		// signed zone has several long records per name: the cap keeps
		// a wrong guess from reserving gigabytes): presizing the name
		// map saves rehashing it over and over as it grows.
		hint = int(min(st.Size()/24, 1<<20))
	}
	return read(f, path, origin, hint)
}

// Read parses and compiles zone data from r; name is used in messages
// and to resolve relative $INCLUDE paths.
func Read(r io.Reader, name, origin string) (*Zone, error) {
	return read(r, name, origin, 0)
}

func read(r io.Reader, name, origin string, hint int) (*Zone, error) {
	// The fast reader first, when the input can be read again should it
	// decline (see fast.go).
	if rs, ok := r.(io.ReadSeeker); ok {
		if at, err := rs.Seek(0, io.SeekCurrent); err == nil {
			z, err := readFast(rs, name, origin, hint)
			if err == nil {
				return z, nil
			}
			if _, err := rs.Seek(at, io.SeekStart); err != nil {
				return nil, fmt.Errorf("zone %s: %w", dns.Fqdn(origin), err)
			}
		}
	}
	return readFull(r, name, origin, hint)
}

// readFull reads a zone with miekg/dns's parser.
func readFull(r io.Reader, name, origin string, hint int) (*Zone, error) {
	c, err := newCompiler(origin, hint)
	if err != nil {
		return nil, err
	}
	// Parsing (miekg/dns) and compiling each take about half the time of
	// a load: run them on two cores, handing records over in batches.
	type batch []Record
	const batchSize = 1024
	full := make(chan batch, 8)
	free := make(chan batch, 8)
	perr := make(chan error, 1)
	go func() {
		b := make(batch, 0, batchSize)
		err := ParseFunc(r, name, origin, func(rr dns.RR, file string, line int) {
			b = append(b, Record{RR: rr, File: file, Line: line})
			if len(b) == batchSize {
				full <- b
				select {
				case b = <-free:
					b = b[:0]
				default:
					b = make(batch, 0, batchSize)
				}
			}
		})
		if len(b) > 0 {
			full <- b
		}
		close(full)
		perr <- err
	}()
	for b := range full {
		for i := range b {
			c.add(b[i].RR, b[i].File, b[i].Line)
			b[i] = Record{}
		}
		select {
		case free <- b:
		default:
		}
	}
	if err := <-perr; err != nil {
		return nil, err
	}
	return c.finish()
}

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
	buf    []byte
	owner  [256]byte
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

// posError is an error with its position, for sorting.
type posError struct {
	p   pos
	err error
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
		buf:    make([]byte, 65535+512),
		seen:   make(map[setID]map[string]bool),
	}
	owire, err := nameWire(origin)
	if err != nil {
		return nil, fmt.Errorf("zone %s: invalid origin: %w", origin, err)
	}
	c.z.Origin = owire
	c.z.Labels = dns.CountLabel(origin) + 1
	c.z.Apex = c.node(owire)
	return c, nil
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

// intern copies a wire name into the arena of small RRsets' wire form
// (see appendWire): a zone file gives a name's records right after it, so
// the name and its records' wire form share a cache line, and an answer
// from a large zone compares the one and copies the other for one miss.
func (c *compiler) intern(name []byte) []byte {
	return append(carve(&c.wires, len(name)), name...)
}

// node returns the node for a canonical wire name, creating it and its
// ancestors up to the apex (which makes empty non-terminals exist).
func (c *compiler) node(owner []byte) *Node {
	// A name's records come together: the last node saves the lookup.
	if n := c.lastNode; n != nil && string(n.Name) == string(owner) {
		return n
	}
	n, h := c.nodes.find(owner)
	if n != nil {
		c.lastNode = n
		return n
	}
	name := c.intern(owner)
	n = c.newNode(name)
	c.nodes.add(n, h)
	c.list = append(c.list, n)
	if c.z.Origin != nil && len(name) > len(c.z.Origin) {
		// Siblings come together in zone files: the last parent
		// saves a map lookup per name.
		up := name[int(name[0])+1:]
		if p := c.lastParent; p != nil && string(p.Name) == string(up) {
			n.Parent = p
		} else {
			n.Parent = c.node(up)
			c.lastParent = n.Parent
		}
		if name[0] == 1 && name[1] == '*' {
			n.Flags |= Wildcard
		}
	} else {
		n.Flags |= Apex
	}
	c.lastNode = n // after the parents' lookups, which set it too
	return n
}

// newNode allocates a node from a slab: a million nodes are a few hundred
// allocations instead of a million.
func (c *compiler) newNode(name []byte) *Node {
	if len(c.nodeSlab) == cap(c.nodeSlab) {
		c.nodeSlab = make([]Node, 0, 1024)
	}
	c.nodeSlab = append(c.nodeSlab, Node{Name: name})
	return &c.nodeSlab[len(c.nodeSlab)-1]
}

// appendSet appends an RRset to a node's list: in place when the list
// is the set slab's last (the node's records came together), else by
// copying it to the slab's end.
func (c *compiler) appendSet(l []RRset, s RRset) []RRset {
	end := len(c.setSlab)
	if len(l) > 0 && end > 0 && end < cap(c.setSlab) && &c.setSlab[end-1] == &l[len(l)-1] {
		c.setSlab = append(c.setSlab, s)
		return c.setSlab[end-len(l) : end+1 : end+1]
	}
	if cap(c.setSlab)-end < len(l)+1 {
		c.setSlab = make([]RRset, 0, max(1024, len(l)+1))
		end = 0
	}
	c.setSlab = append(c.setSlab, l...)
	c.setSlab = append(c.setSlab, s)
	return c.setSlab[end:len(c.setSlab):len(c.setSlab)]
}

// appendWire appends a record's tail to a set's wire form. Small sets
// live in an arena of pointer-free memory the collector never scans; a
// set that is the arena's last grows in place, which is the common case
// of an RRset's records written one after another.
func (c *compiler) appendWire(w, tail []byte) []byte {
	const maxArenaSet = 2 << 10
	if len(w)+len(tail) > maxArenaSet {
		return append(w, tail...)
	}
	end := len(c.wires)
	if len(w) > 0 && end >= len(w) && cap(c.wires)-end >= len(tail) && &c.wires[end-1] == &w[len(w)-1] {
		c.wires = append(c.wires, tail...)
		return c.wires[end-len(w) : len(c.wires) : len(c.wires)]
	}
	return append(append(carve(&c.wires, len(w)+len(tail)), w...), tail...)
}

// carve takes an empty slice with capacity n from the end of a byte
// arena, starting a new 256 KiB chunk when the current one is too full.
func carve(arena *[]byte, n int) []byte {
	if cap(*arena)-len(*arena) < n {
		*arena = make([]byte, 0, max(256<<10, n))
	}
	at := len(*arena)
	*arena = (*arena)[:at+n]
	return (*arena)[at : at : at+n]
}

// nsec3Node returns the node of an NSEC3 owner, kept out of the name tree
// (RFC 5155 §7.2.8: NSEC3 owners are not part of the name space).
func (c *compiler) nsec3Node(name []byte) *Node {
	if n, ok := c.n3map[bytesString(name)]; ok {
		return n
	}
	if c.n3map == nil {
		c.n3map = make(map[string]*Node)
	}
	n := c.newNode(c.intern(name))
	c.n3map[bytesString(n.Name)] = n
	c.nsec3 = append(c.nsec3, n)
	return n
}

// add compiles one record parsed by miekg/dns.
func (c *compiler) add(rr dns.RR, file string, line int) {
	p := pos{c.fileIndex(file), uint32(line)}
	h := rr.Header()
	if h.Class != dns.ClassINET {
		c.errorf(&p, "class %s is not IN", dns.ClassToString[h.Class])
		return
	}
	switch h.Rrtype {
	case dns.TypeOPT, dns.TypeTSIG, dns.TypeTKEY, dns.TypeAXFR, dns.TypeIXFR, dns.TypeANY:
		c.errorf(&p, "type %s cannot be zone data", dns.TypeToString[h.Rrtype])
		return
	}
	n, err := dns.PackDomainName(h.Name, c.owner[:], 0, nil, false)
	if err != nil {
		c.errorf(&p, "owner %s: %v", h.Name, err)
		return
	}
	name := c.owner[:n]
	wire.Lower(name, name)
	if !wire.InZone(name, c.z.Origin) {
		c.errorf(&p, "%s is outside the zone %s", h.Name, c.origin)
		return
	}
	tail, err := c.tail(rr)
	if err != nil {
		c.errorf(&p, "cannot encode %s record: %v", dns.TypeToString[h.Rrtype], err)
		return
	}
	c.addTail(p, name, tail)
}

// addTail compiles one record given as its lower-cased owner, inside the
// zone, and its tail (TYPE, CLASS IN, TTL, RDLENGTH, RDATA, as tail
// returns it). Both readers end here: miekg/dns's through add, the fast
// reader directly.
func (c *compiler) addTail(p pos, name, tail []byte) {
	typ := binary.BigEndian.Uint16(tail)
	ttl := binary.BigEndian.Uint32(tail[4:])
	rdata := tail[10:]
	covered := uint16(0)
	if typ == dns.TypeRRSIG && len(rdata) >= 2 {
		covered = binary.BigEndian.Uint16(rdata)
	}
	var node *Node
	if typ == dns.TypeNSEC3 || covered == dns.TypeNSEC3 {
		node = c.nsec3Node(name)
	} else {
		node = c.node(name)
	}
	set := node.set(typ, covered)
	if set == nil {
		rs := RRset{Type: typ, covered: covered, TTL: ttl, file: p.file, line: p.line}
		node.RRsets = c.appendSet(node.RRsets, rs)
		set = &node.RRsets[len(node.RRsets)-1]
	} else if c.duplicate(setID{node, typ, covered}, set, tail) {
		// RFC 2181 §5: identical records are one record.
		return
	}
	if typ == dns.TypeSOA {
		c.soa = append(c.soa, p)
		if len(c.soa) == 1 {
			// SOA RDATA: MNAME, RNAME, then SERIAL ... MINIMUM.
			if off := wire.NameLen(rdata); off < len(rdata) {
				if m := wire.NameLen(rdata[off:]); len(rdata) == off+m+20 {
					fixed := rdata[off+m:]
					c.z.Serial = binary.BigEndian.Uint32(fixed)
					c.z.NegTTL = min(ttl, binary.BigEndian.Uint32(fixed[16:]))
				}
			}
		}
	}
	if ttl < set.TTL {
		set.TTL = ttl
	}
	set.Wire = c.appendWire(set.Wire, tail)
	set.Count++
	c.z.Records++
}

// set finds the RRset of a type (for RRSIGs: of a covered type) being built.
func (n *Node) set(t, covered uint16) *RRset {
	for i := range n.RRsets {
		if s := &n.RRsets[i]; s.Type == t && s.covered == covered {
			return s
		}
	}
	return nil
}

// duplicate reports whether set already holds a record with tail's RDATA.
// Small sets are scanned; large ones get an index.
func (c *compiler) duplicate(id setID, set *RRset, tail []byte) bool {
	rd := tail[10:]
	if idx := c.seen[id]; idx != nil {
		if idx[string(rd)] {
			return true
		}
		idx[string(rd)] = true
		return false
	}
	found := false
	set.Each(func(t []byte) {
		if string(t[10:]) == string(rd) {
			found = true
		}
	})
	if !found && set.Count >= 16 {
		idx := make(map[string]bool, 2*set.Count)
		set.Each(func(t []byte) { idx[string(t[10:])] = true })
		idx[string(rd)] = true
		c.seen[id] = idx
	}
	return found
}

// tail encodes rr without its owner: TYPE, CLASS, TTL, RDLENGTH, RDATA,
// names in RDATA uncompressed. The result aliases c.buf.
func (c *compiler) tail(rr dns.RR) ([]byte, error) {
	n, err := dns.PackRR(rr, c.buf, 0, nil, false)
	if err != nil {
		return nil, err
	}
	ownerLen := wire.NameLen(c.buf[:n])
	if ownerLen+10 > n {
		return nil, errors.New("short record")
	}
	return c.buf[ownerLen:n], nil
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
	for _, n := range c.list {
		c.adjust(n)
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
		sort.SliceStable(c.errs, func(i, j int) bool {
			a, b := c.errs[i].p, c.errs[j].p
			if a.file != b.file {
				return a.file < b.file
			}
			return a.line < b.line
		})
		errs := make([]error, 0, len(c.errs)+1)
		for _, e := range c.errs {
			errs = append(errs, e.err)
		}
		if len(c.errs) > maxErrors {
			errs = append(errs[:maxErrors], fmt.Errorf("zone %s: too many errors", c.origin))
		}
		return nil, errors.Join(errs...)
	}
	c.buildDNSSEC()
	c.nodes.fit()
	z.index = c.nodes
	z.Names = c.nodes.count
	return z, nil
}

// attachSigs moves each RRSIG set onto the RRset it covers. Signatures
// whose RRset is absent stay as data, so a query for RRSIG finds them.
func (c *compiler) attachSigs(n *Node) {
	keep := n.RRsets[:0]
	sigs := c.sigScratch[:0]
	for _, s := range n.RRsets {
		if s.Type == dns.TypeRRSIG {
			sigs = append(sigs, s)
		} else {
			keep = append(keep, s)
		}
	}
	c.sigScratch = sigs
	if len(sigs) == 0 {
		sortSets(n.RRsets)
		return
	}
	// The name moves beside the signed sets' wire form, which attach
	// carves next, so that an answer from a large signed zone reads name,
	// records and signatures from neighbouring cache lines (see intern).
	n.Name = append(carve(&c.signedWires, len(n.Name)), n.Name...)
	var orphans []RRset
	for _, sig := range sigs {
		if t := n.set(sig.covered, 0); t != nil {
			c.attach(t, &sig)
		} else {
			orphans = append(orphans, sig)
		}
	}
	// Only what stays, copied to a slab that holds nothing else, so the
	// slabs the sets were built in become garbage: a signed zone has a
	// million of these.
	need := len(keep) + min(len(orphans), 1)
	if cap(c.finalSlab)-len(c.finalSlab) < need {
		c.finalSlab = make([]RRset, 0, max(1024, need))
	}
	at := len(c.finalSlab)
	c.finalSlab = append(c.finalSlab, keep...)
	n.RRsets = c.finalSlab[at : len(c.finalSlab) : at+need]
	c.finalSlab = c.finalSlab[:at+need]
	if len(orphans) > 0 {
		merged := RRset{Type: dns.TypeRRSIG, TTL: orphans[0].TTL, file: orphans[0].file, line: orphans[0].line}
		for _, o := range orphans {
			merged.Wire = append(merged.Wire, o.Wire...)
			merged.Count += o.Count
		}
		n.RRsets = append(n.RRsets, merged)
	}
	sortSets(n.RRsets)
}

// attach puts the signatures of set t behind its records, in the spare
// capacity of t.Wire (RRset.Sigs reads them there). The copies come from
// an arena of their own, so the arena the sets were built in becomes
// garbage once a node's sets have all moved.
func (c *compiler) attach(t, sig *RRset) {
	const maxArenaSet = 4 << 10
	n := len(t.Wire) + len(sig.Wire)
	var w []byte
	if n > maxArenaSet {
		w = make([]byte, 0, n)
	} else {
		w = carve(&c.signedWires, n)
	}
	w = append(w, t.Wire...)
	w = append(w, sig.Wire...)
	t.Wire = w[:len(t.Wire):n]
	t.sigCount = uint16(min(sig.Count, 0xffff))
	t.sigTTL = sig.TTL
}

// sortSets orders a node's RRsets by type (insertion sort: nodes have few).
func sortSets(s []RRset) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].Type < s[j-1].Type; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// adjust computes a node's flags and checks its rules. Parents are
// adjusted first, since a node's cut is its parent's.
func (c *compiler) adjust(n *Node) {
	if n.Flags&adjusted != 0 {
		return
	}
	n.Flags |= adjusted
	c.attachSigs(n)
	for i := range n.RRsets {
		sameTTL(&n.RRsets[i])
	}
	for _, s := range n.RRsets {
		switch s.Type {
		case dns.TypeCNAME:
			n.Flags |= hasCNAME
		case dns.TypeDNAME:
			n.Flags |= hasDNAME
		case dns.TypeNS:
			n.Flags |= hasNS
		}
	}
	if len(n.RRsets) == 0 {
		n.Flags |= NonTerminal
	}
	if n.NS() != nil && n.Flags&Apex == 0 {
		n.Flags |= Delegation
	}
	if p := n.Parent; p != nil {
		c.adjust(p)
		if p.Cut != nil {
			n.Cut = p.Cut
		} else if p.Flags&Delegation != 0 || p.DNAME() != nil {
			n.Cut = p
		}
		if n.Flags&Wildcard != 0 {
			p.WildcardChild = n
		}
	}
	c.check(n)
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

// additional links an RRset to the in-zone nodes whose addresses go into
// the additional section with it.
func (c *compiler) additional(s *RRset) {
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
		target = target[:wire.NameLen(target)]
		var low [256]byte
		copy(low[:], target)
		wire.Lower(low[:len(target)], low[:len(target)])
		t := c.nodes.get(low[:len(target)])
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
	if len(seen) > 0 {
		s.targets = &seen
	}
}

// nameWire packs a presentation name (already lowercased) uncompressed.
func nameWire(s string) ([]byte, error) {
	var buf [256]byte
	n, err := dns.PackDomainName(s, buf[:], 0, nil, false)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), buf[:n]...), nil
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
	s, _, err := dns.UnpackDomainName(name, 0)
	if err != nil {
		return fmt.Sprintf("%q", name)
	}
	return s
}

// sameTTL gives every record of an RRset the set's lowest TTL. RFC 2181
// §5.2: TTLs in an RRset must agree, and a set whose TTLs differ is to be
// treated "as if all TTLs in the RRSet had been set to the value of the
// lowest TTL in the RRSet."
func sameTTL(s *RRset) {
	for w := s.Wire; len(w) >= 10; w = w[10+int(binary.BigEndian.Uint16(w[8:])):] {
		if binary.BigEndian.Uint32(w[4:]) != s.TTL {
			binary.BigEndian.PutUint32(w[4:], s.TTL)
		}
	}
}
