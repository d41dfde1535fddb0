package zone

import (
	"bufio"
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"net/netip"
	"strings"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
)

// The fast reader compiles the zone files servers actually load (one
// record per line or parenthesised, $ORIGIN and $TTL, the common types)
// straight from text to wire form, without building a dns.RR per record:
// on a million-record zone miekg/dns's parser and the garbage it leaves
// are two thirds of the load time, and Knot and NSD, whose load times
// operators compare, use hand-written parsers too.
//
// It is deliberately narrow. Whatever it is not sure to read exactly as
// miekg/dns does ($INCLUDE, $GENERATE, escapes in owner names, an unknown
// token, any error at all) makes it decline with errSlow, and the whole
// file is read again by miekg/dns, which then also produces the error
// messages. A record of a type it does not encode itself is handed to
// miekg/dns alone, as text. FuzzFastReader checks that both readers
// build the same zone from the same input.

// errSlow means the fast reader declined the input.
var errSlow = errors.New("zone: left to the full parser")

// fastMaxLine bounds a line the fast reader buffers (longer: declined).
const fastMaxLine = 1 << 20

// token is a byte range of the record being read.
type token struct {
	start, end int
	quoted     bool
	escaped    bool // holds a backslash: left to miekg/dns
}

type fastReader struct {
	c    *compiler
	br   *bufio.Reader
	file uint16
	line int // number of the line read last

	origin  []byte // the current $ORIGIN as absolute text, with its dot
	defTTL  uint32 // miekg/dns's default TTL ($TTL, else the last TTL given)
	hasDef  bool
	byDir   bool   // defTTL came from $TTL
	owner   []byte // the last owner, lower-cased wire form
	ownerT  []byte // the last owner as absolute text, for the fallback
	hasOwn  bool
	rec     []byte // a record continued over lines
	long    []byte // a line longer than br's buffer
	toks    []token
	out     []byte // the record's tail being built
	scratch []byte
	types   []uint16
}

// readBufferSize is the size of the read buffer for a zone of about
// hint names (0: not known): 64 KiB for a large zone file, less for a
// small one, whose buffer would otherwise cost more to clear than the
// zone to read (a hosting provider's hundred thousand zones of a few
// records each).
func readBufferSize(hint int) int {
	return min(max(hint*64, 4<<10), 64<<10)
}

// readFast compiles a zone with the fast reader; errSlow (or any error)
// means the caller reads it again with miekg/dns.
func readFast(r io.Reader, name, origin string, hint int) (*Zone, error) {
	c, err := newCompiler(origin, hint)
	if err != nil {
		return nil, err
	}
	f := &fastReader{
		c:      c,
		br:     bufio.NewReaderSize(r, readBufferSize(hint)),
		file:   c.fileIndex(name),
		origin: []byte(c.origin),
		out:    make([]byte, 0, 512),
	}
	if err := f.run(); err != nil {
		return nil, err
	}
	if len(c.errs) > 0 {
		return nil, errSlow
	}
	z, err := c.finish()
	if err != nil {
		return nil, errSlow
	}
	return z, nil
}

func (f *fastReader) run() error {
	depth, start := 0, 0
	for {
		line, err := f.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer: gathered in long, up to
			// fastMaxLine.
			f.long = append(f.long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = f.br.ReadSlice('\n')
				if f.long = append(f.long, line...); len(f.long) > fastMaxLine {
					return errSlow
				}
			}
			line = f.long
		}
		if len(line) == 0 && err != nil {
			break
		}
		f.line++
		data, base := line, 0
		if depth > 0 {
			base = len(f.rec)
			f.rec = append(f.rec, line...)
			data = f.rec
		}
		if depth, err = f.tokenize(data, base, depth); err != nil {
			return err
		}
		if depth > 0 {
			if base == 0 {
				f.rec = append(f.rec[:0], line...)
				start = f.line
			}
			continue
		}
		if base == 0 {
			start = f.line
		}
		if len(f.toks) > 0 {
			if err := f.record(data, start); err != nil {
				return err
			}
		}
		f.rec, f.toks = f.rec[:0], f.toks[:0]
	}
	if depth > 0 {
		return errSlow
	}
	return nil
}

// tokenize appends the tokens of data[from:] to f.toks and returns the
// parenthesis depth at its end. Quotes over lines decline.
func (f *fastReader) tokenize(data []byte, from, depth int) (int, error) {
	i := from
	for i < len(data) {
		switch b := data[i]; b {
		case ' ', '\t', '\r', '\n':
			i++
		case ';':
			return depth, nil
		case '(', ')':
			if b == '(' {
				depth++
			} else if depth--; depth < 0 {
				return 0, errSlow
			}
			i++
			if !separated(data, i) {
				return 0, errSlow
			}
		case '"':
			t := token{start: i + 1, quoted: true}
			j := i + 1
			for ; j < len(data) && data[j] != '"'; j++ {
				switch data[j] {
				case '\\':
					t.escaped = true
					j++
				case '\n':
					return 0, errSlow
				}
			}
			if j >= len(data) {
				return 0, errSlow
			}
			t.end = j
			f.toks = append(f.toks, t)
			i = j + 1
			if !separated(data, i) {
				return 0, errSlow
			}
		default:
			t := token{start: i}
			j := i
			for j < len(data) && plain[data[j]] {
				j++
			}
			for j < len(data) && data[j] == '\\' {
				// An escape: miekg/dns reads the token.
				t.escaped = true
				j += 2
				for j < len(data) && plain[data[j]] {
					j++
				}
			}
			if j > len(data) || (t.escaped && data[j-1] == '\n') || !separated(data, j) {
				return 0, errSlow
			}
			t.end = j
			f.toks = append(f.toks, t)
			i = j
		}
	}
	return depth, nil
}

// plain marks the bytes that continue an unquoted token without
// anything to look at: not blanks, ";", parentheses, quotes or "\\".
var plain = func() (t [256]bool) {
	for i := range t {
		t[i] = true
	}
	for _, b := range []byte(" \t\r\n;()\"\\") {
		t[b] = false
	}
	return t
}()

// separated reports whether data[i] ends a token the way miekg/dns's
// lexer sees it too: a blank, a comment or the end of the line. miekg/dns
// reads "0(0" or "\"a\"b" differently from "0 ( 0" (its field readers
// expect blanks), so the fast reader leaves such text to it.
func separated(data []byte, i int) bool {
	if i >= len(data) {
		return true
	}
	switch data[i] {
	case ' ', '\t', '\r', '\n', ';':
		return true
	}
	return false
}

func (f *fastReader) tok(data []byte, t token) []byte { return data[t.start:t.end] }

// record compiles the record (or directive) in data whose tokens are
// f.toks; line is where it started.
func (f *fastReader) record(data []byte, line int) error {
	toks := f.toks
	first := f.tok(data, toks[0])
	ownerGiven := data[0] != ' ' && data[0] != '\t'
	if ownerGiven && (toks[0].start != 0 || toks[0].quoted || toks[0].escaped) {
		return errSlow // a line opening with "(" or a quote
	}
	if ownerGiven && first[0] == '$' {
		return f.directive(data)
	}
	i := 0
	if ownerGiven {
		abs, ok := f.absolute(first)
		if !ok {
			return errSlow
		}
		f.ownerT = append(f.ownerT[:0], abs...)
		w, ok := appendName(f.owner[:0], abs)
		if !ok {
			return errSlow
		}
		wire.Lower(w, w)
		f.owner, f.hasOwn = w, true
		i = 1
	} else if !f.hasOwn {
		return errSlow
	}
	// [TTL] [class] or [class] [TTL], then the type.
	ttl, hasTTL, hasClass := uint32(0), false, false
	for ; i < len(toks) && !toks[i].quoted && !toks[i].escaped; i++ {
		t := f.tok(data, toks[i])
		if t[0] >= '0' && t[0] <= '9' && !hasTTL {
			v, ok := parseTTL(string(t))
			if !ok {
				return errSlow
			}
			ttl, hasTTL = v, true
			continue
		}
		if !hasClass && len(t) == 2 && t[0]|0x20 == 'i' && t[1]|0x20 == 'n' {
			hasClass = true
			continue
		}
		break
	}
	if i >= len(toks) || toks[i].quoted || toks[i].escaped {
		return errSlow
	}
	typ, ok := typeCode(f.tok(data, toks[i]))
	if !ok {
		return errSlow
	}
	if hasTTL {
		if !f.byDir {
			f.defTTL, f.hasDef = ttl, true
		}
	} else {
		if !f.hasDef {
			return errSlow
		}
		ttl = f.defTTL
	}
	if !wire.InZone(f.owner, f.c.z.Origin) {
		return errSlow
	}
	rd := toks[i+1:]
	f.out = f.out[:0]
	f.out = binary.BigEndian.AppendUint16(f.out, typ)
	f.out = binary.BigEndian.AppendUint16(f.out, dns.ClassINET)
	f.out = binary.BigEndian.AppendUint32(f.out, ttl)
	f.out = append(f.out, 0, 0)
	if len(rd) == 0 {
		return errSlow // miekg/dns's reading depends on what follows
	}
	if !f.rdata(data, typ, rd) {
		if data[len(data)-1] != '\n' {
			return errSlow // the lexer reads a last line without newline its own way
		}
		return f.fallback(data, toks[i].start, ttl, line)
	}
	if len(f.out)-10 > 65535 {
		return errSlow
	}
	binary.BigEndian.PutUint16(f.out[8:], uint16(len(f.out)-10))
	f.c.addTail(pos{f.file, uint32(line)}, f.owner, f.out)
	return nil
}

// directive handles $ORIGIN and $TTL; every other directive declines.
func (f *fastReader) directive(data []byte) error {
	if len(f.toks) != 2 || f.toks[1].quoted {
		return errSlow
	}
	d := string(f.tok(data, f.toks[0]))
	arg := f.tok(data, f.toks[1])
	switch {
	case strings.EqualFold(d, "$ORIGIN"):
		abs, ok := f.absolute(arg)
		if !ok || string(arg) == "@" {
			return errSlow
		}
		if _, ok := appendName(nil, abs); !ok {
			return errSlow
		}
		f.origin = append([]byte(nil), abs...)
	case strings.EqualFold(d, "$TTL"):
		ttl, ok := parseTTL(string(arg))
		if !ok {
			return errSlow
		}
		f.defTTL, f.hasDef, f.byDir = ttl, true, true
	default:
		return errSlow
	}
	return nil
}

// absolute makes a name absolute the way miekg/dns's toAbsoluteName
// does: "@" is the origin, a name without its final dot is relative.
// The result aliases f.scratch.
func (f *fastReader) absolute(name []byte) ([]byte, bool) {
	if len(name) == 0 {
		return nil, false
	}
	if len(name) == 1 && name[0] == '@' {
		return f.origin, true
	}
	if name[len(name)-1] == '.' {
		return name, true
	}
	f.scratch = append(f.scratch[:0], name...)
	if len(f.origin) > 1 {
		f.scratch = append(f.scratch, '.')
	}
	f.scratch = append(f.scratch, f.origin...)
	return f.scratch, true
}

// appendName appends the wire form of an absolute text name without
// escapes, or reports false for anything but letters-dots names of legal
// length (RFC 1035 §2.3.4).
func appendName(dst, name []byte) ([]byte, bool) {
	if len(name) == 1 && name[0] == '.' {
		return append(dst, 0), true
	}
	start := len(dst)
	for len(name) > 0 {
		i := bytes.IndexByte(name, '.')
		if i <= 0 || i > 63 {
			return dst, false
		}
		dst = append(dst, byte(i))
		dst = append(dst, name[:i]...)
		name = name[i+1:]
	}
	dst = append(dst, 0)
	return dst, len(dst)-start <= 255
}

// typeCode reads a type mnemonic or TYPEnnn (RFC 3597 §5).
func typeCode(t []byte) (uint16, bool) {
	var up [16]byte
	if len(t) > len(up) {
		return 0, false
	}
	for i, b := range t {
		if b >= 'a' && b <= 'z' {
			b -= 32
		}
		up[i] = b
	}
	u := up[:len(t)]
	// The types of almost every record first: the full map is a
	// noticeable part of loading a signed zone.
	switch string(u) {
	case "A":
		return dns.TypeA, true
	case "NS":
		return dns.TypeNS, true
	case "SOA":
		return dns.TypeSOA, true
	case "AAAA":
		return dns.TypeAAAA, true
	case "RRSIG":
		return dns.TypeRRSIG, true
	case "NSEC":
		return dns.TypeNSEC, true
	case "NSEC3":
		return dns.TypeNSEC3, true
	case "DS":
		return dns.TypeDS, true
	case "DNSKEY":
		return dns.TypeDNSKEY, true
	case "MX":
		return dns.TypeMX, true
	case "TXT":
		return dns.TypeTXT, true
	case "CNAME":
		return dns.TypeCNAME, true
	}
	if v, ok := dns.StringToType[string(u)]; ok {
		return v, true
	}
	if len(u) > 4 && string(u[:4]) == "TYPE" {
		v, ok := decimal(u[4:], 0xffff)
		return uint16(v), ok
	}
	return 0, false
}

// decimal parses an unsigned decimal number no larger than max, as
// strconv.ParseUint(s, 10, bits) accepts it.
func decimal(s []byte, max uint64) (uint64, bool) {
	if len(s) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
		if v > max {
			return 0, false
		}
	}
	return v, true
}

// rdata encodes the RDATA of the types the fast reader knows into f.out;
// false hands the record to miekg/dns.
func (f *fastReader) rdata(data []byte, typ uint16, rd []token) bool {
	for _, t := range rd {
		if t.escaped || t.quoted != (typ == dns.TypeTXT) {
			return false
		}
	}
	tok := func(i int) []byte { return f.tok(data, rd[i]) }
	if d := wire.RDataOf(typ); d != nil && d.Fields()[len(d.Fields())-1] != wire.FieldRest {
		// Names and numbers only (NS, CNAME, DNAME, PTR, MX, SRV, SOA
		// among the types read here): one token per field.
		return len(rd) == len(d.Fields()) && f.fields(d.Fields(), tok)
	}
	switch typ {
	case dns.TypeA:
		return len(rd) == 1 && f.ipv4(tok(0))
	case dns.TypeAAAA:
		a, err := netip.ParseAddr(string(tok(0)))
		if len(rd) != 1 || err != nil || !a.Is6() || a.Zone() != "" {
			return false
		}
		b := a.As16()
		f.out = append(f.out, b[:]...)
	case dns.TypeTXT:
		for i := range rd {
			s := tok(i)
			if len(s) == 0 || len(s) > 255 {
				return false
			}
			f.out = append(f.out, byte(len(s)))
			f.out = append(f.out, s...)
		}
	case dns.TypeDS:
		return len(rd) >= 4 && f.num(tok(0), 0xffff, 2) && f.num(tok(1), 0xff, 1) &&
			f.num(tok(2), 0xff, 1) && f.blob(data, rd[3:], hex.Decode)
	case dns.TypeDNSKEY:
		return len(rd) >= 4 && f.num(tok(0), 0xffff, 2) && f.num(tok(1), 0xff, 1) &&
			f.num(tok(2), 0xff, 1) && f.blob(data, rd[3:], base64.StdEncoding.Decode)
	case dns.TypeRRSIG:
		if len(rd) < 9 {
			return false
		}
		covered, ok := typeCode(tok(0))
		if !ok {
			return false
		}
		f.out = binary.BigEndian.AppendUint16(f.out, covered)
		return f.num(tok(1), 0xff, 1) && f.num(tok(2), 0xff, 1) && f.num(tok(3), 0xffffffff, 4) &&
			f.time(tok(4)) && f.time(tok(5)) && f.num(tok(6), 0xffff, 2) && f.name(tok(7)) &&
			f.blob(data, rd[8:], base64.StdEncoding.Decode)
	case dns.TypeNSEC:
		return f.name(tok(0)) && f.bitmap(data, rd[1:])
	case dns.TypeNSEC3:
		if len(rd) < 5 || !f.num(tok(0), 0xff, 1) || !f.num(tok(1), 0xff, 1) || !f.num(tok(2), 0xffff, 2) {
			return false
		}
		salt := tok(3)
		if string(salt) == "-" {
			f.out = append(f.out, 0)
		} else {
			if len(salt) > 2*255 {
				return false
			}
			at := len(f.out)
			f.out = append(f.out, 0)
			if !f.blob(data, rd[3:4], hex.Decode) {
				return false
			}
			f.out[at] = byte(len(f.out) - at - 1)
		}
		// miekg/dns writes hash length 20 whatever the text holds: only
		// SHA-1's 20 octets are read here.
		at := len(f.out)
		f.out = append(f.out, 20)
		if !f.blob(data, rd[4:5], base32Decode) || len(f.out)-at-1 != 20 {
			return false
		}
		return f.bitmap(data, rd[5:])
	default:
		return false
	}
	return true
}

// ipv4 appends a dotted quad; anything unusual (leading zeros, which
// net.ParseIP refuses, or IPv4-mapped forms) is left to miekg/dns.
func (f *fastReader) ipv4(t []byte) bool {
	var a [4]byte
	for i := range a {
		j := 0
		for j < len(t) && j < 3 && t[j] >= '0' && t[j] <= '9' {
			j++
		}
		if j == 0 || (j > 1 && t[0] == '0') {
			return false
		}
		d, ok := decimal(t[:j], 255)
		if !ok {
			return false
		}
		a[i] = byte(d)
		t = t[j:]
		if i < 3 {
			if len(t) == 0 || t[0] != '.' {
				return false
			}
			t = t[1:]
		}
	}
	if len(t) != 0 {
		return false
	}
	f.out = append(f.out, a[:]...)
	return true
}

// fields encodes RDATA laid out as fields say, one token each.
func (f *fastReader) fields(fields []wire.Field, tok func(int) []byte) bool {
	for i, k := range fields {
		t := tok(i)
		switch k {
		case wire.FieldName, wire.FieldNameUncompressed:
			if !f.name(t) {
				return false
			}
		case wire.FieldPeriod:
			v, ok := parseTTL(string(t))
			if !ok {
				return false
			}
			f.out = binary.BigEndian.AppendUint32(f.out, v)
		default:
			n := k.Size()
			if !f.num(t, 1<<(8*n)-1, n) {
				return false
			}
		}
	}
	return true
}

func (f *fastReader) name(t []byte) bool {
	abs, ok := f.absolute(t)
	if !ok {
		return false
	}
	f.out, ok = appendName(f.out, abs)
	return ok
}

// num appends a decimal number of size octets.
func (f *fastReader) num(t []byte, max uint64, size int) bool {
	v, ok := decimal(t, max)
	if !ok {
		return false
	}
	switch size {
	case 1:
		f.out = append(f.out, byte(v))
	case 2:
		f.out = binary.BigEndian.AppendUint16(f.out, uint16(v))
	default:
		f.out = binary.BigEndian.AppendUint32(f.out, uint32(v))
	}
	return true
}

// time appends an RRSIG time: YYYYMMDDHHmmSS (RFC 4034 §3.2) or seconds.
func (f *fastReader) time(t []byte) bool {
	if v, ok := sigTime(t); ok {
		f.out = binary.BigEndian.AppendUint32(f.out, v)
		return true
	}
	if v, err := dns.StringToTime(string(t)); err == nil {
		f.out = binary.BigEndian.AppendUint32(f.out, v)
		return true
	}
	return f.num(t, 0xffffffff, 4)
}

// sigTime converts YYYYMMDDHHmmSS with every field in its usual range
// as dns.StringToTime does (time.Parse, then serial arithmetic modulo
// 2^32, RFC 4034 §3.1.5) but without the cost of time.Parse, which was a
// tenth of loading a signed zone. Anything else is left to StringToTime.
func sigTime(t []byte) (uint32, bool) {
	if len(t) != 14 {
		return 0, false
	}
	var v [14]int64
	for i, c := range t {
		if c < '0' || c > '9' {
			return 0, false
		}
		v[i] = int64(c - '0')
	}
	year := v[0]*1000 + v[1]*100 + v[2]*10 + v[3]
	month, day := v[4]*10+v[5], v[6]*10+v[7]
	hour, minute, sec := v[8]*10+v[9], v[10]*10+v[11], v[12]*10+v[13]
	if month < 1 || month > 12 || day < 1 || day > 28 || hour > 23 || minute > 59 || sec > 59 {
		return 0, false
	}
	// Days from 1970-01-01 to the date, proleptic Gregorian (the
	// "days from civil" algorithm).
	y := year
	if month <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := (month + 9) % 12
	doy := (153*mp+2)/5 + day - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	days := era*146097 + doe - 719468
	unix := days*86400 + hour*3600 + minute*60 + sec
	const year68 = 1 << 31
	mod := unix/year68 - 1
	if mod < 0 {
		mod = 0
	}
	return uint32(unix - mod*year68), true
}

type decoder func(dst, src []byte) (int, error)

var base32Hex = base32.HexEncoding.WithPadding(base32.NoPadding)

func base32Decode(dst, src []byte) (int, error) {
	for _, c := range src {
		if c >= 'a' && c <= 'z' {
			return 0, errSlow // upper-case copies are not worth it
		}
	}
	return base32Hex.Decode(dst, src)
}

// blob decodes the concatenation of tokens and appends it.
func (f *fastReader) blob(data []byte, toks []token, dec decoder) bool {
	f.scratch = f.scratch[:0]
	for _, t := range toks {
		f.scratch = append(f.scratch, f.tok(data, t)...)
	}
	at := len(f.out)
	need := len(f.scratch) // every encoding here is at least as long as its data
	if cap(f.out)-at < need {
		return false
	}
	n, err := dec(f.out[at:at+need], f.scratch)
	if err != nil {
		return false
	}
	f.out = f.out[:at+n]
	return true
}

// bitmap appends an NSEC/NSEC3 type bit map (RFC 4034 §4.1.2) of types
// given in increasing order.
func (f *fastReader) bitmap(data []byte, toks []token) bool {
	f.types = f.types[:0]
	for _, t := range toks {
		v, ok := typeCode(f.tok(data, t))
		if !ok || (len(f.types) > 0 && v < f.types[len(f.types)-1]) {
			return false
		}
		f.types = append(f.types, v)
	}
	for i := 0; i < len(f.types); {
		win := f.types[i] >> 8
		var bits [32]byte
		n := 0
		for ; i < len(f.types) && f.types[i]>>8 == win; i++ {
			lo := f.types[i] & 0xff
			bits[lo/8] |= 0x80 >> (lo % 8)
			n = int(lo/8) + 1
		}
		f.out = append(f.out, byte(win), byte(n))
		f.out = append(f.out, bits[:n]...)
	}
	return true
}

// fallback has miekg/dns parse one record of a type the fast reader does
// not encode: the record's text from its type on, behind its absolute
// owner, TTL and class. A sentinel record follows it: miekg/dns's
// readers of some types, given too few fields, read on into the next
// line, and then the whole file must be read by miekg/dns to find out
// what that does there.
func (f *fastReader) fallback(data []byte, typeAt int, ttl uint32, line int) error {
	var b strings.Builder
	b.WriteString("$ORIGIN ")
	b.Write(f.origin)
	b.WriteString("\n")
	b.Write(f.ownerT)
	b.WriteString(" ")
	b.WriteString(uitoa(ttl))
	b.WriteString(" IN ")
	b.Write(data[typeAt:])
	b.WriteString(sentinel)
	zp := dns.NewZoneParser(strings.NewReader(b.String()), "", "")
	rr, ok := zp.Next()
	if !ok {
		return errSlow
	}
	s, ok := zp.Next()
	if a, isA := s.(*dns.A); !ok || !isA || a.A.String() != "127.0.0.1" || a.Hdr.Name != rr.Header().Name {
		return errSlow
	}
	if _, more := zp.Next(); more || zp.Err() != nil {
		return errSlow
	}
	before := len(f.c.errs)
	f.c.add(rr, f.c.files[f.file], line)
	if len(f.c.errs) > before {
		return errSlow
	}
	return nil
}

// sentinel is the line fallback puts after a record.
const sentinel = "\n A 127.0.0.1\n"

func uitoa(v uint32) string {
	var b [10]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}
