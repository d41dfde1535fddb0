package zone

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/miekg/dns"
)

// Record is a parsed record with where it came from, so load-time checks
// can name file:line.
type Record struct {
	RR   dns.RR
	File string
	Line int
}

// lineReader counts lines as the zone parser consumes bytes, so that each
// record returned by dns.ZoneParser can be given the line it ended on
// (the parser itself does not expose positions of good records). It also
// keeps what a parser restarted after a syntax error needs to read the
// rest of the file as the first would have (see parser.run).
type lineReader struct {
	r     *bufio.Reader
	c     io.Closer
	name  string
	line  int
	last  byte
	track *tracker
	// parent is the file whose $INCLUDE opened this one.
	parent *lineReader
	// eof is set once the file is read to its end, failed on a read
	// error: a file the parser stopped in is not closed until the
	// parser restarted after the error has read it (see Close).
	eof    bool
	failed error

	// The directives seen so far, to correct $GENERATE's TTL: miekg/dns
	// gives generated records its built-in default of 3600 instead of the
	// $TTL in force (RFC 2308 §4), unless the template names a TTL.
	cur      []byte // the line being read, while it may be a directive
	ttl      uint32 // the last $TTL
	hasTTL   bool
	genLine  int // a $GENERATE line without its own TTL
	genTTL   uint32
	genValid bool

	// The parser's state, for a restart: the $ORIGIN in force, the
	// default TTL when no $TTL set it (the last record's, RFC 1035 §5.1),
	// the last owner; and where the lexer stands in a record: inside
	// parentheses, a quoted string, a comment, after a backslash.
	origin    string
	recTTL    uint32
	hasRecTTL bool
	owner     string
	depth     int
	quoted    bool
	comment   bool
	escaped   bool
	// openQuote is the line where a quoted string ran on past the
	// newline, for the error it causes later.
	openQuote int
	// recLine is the line the current record started on.
	recLine int
}

// tracker remembers which file the parser read from last, which is the
// file of the record it just returned ($INCLUDE switches files), and the
// origin of the file an $INCLUDE is about to open.
type tracker struct {
	cur        *lineReader
	nextOrigin string
	// included are the files $INCLUDE opened, closed at the end of the
	// parse whether or not they were read to their end.
	included []*lineReader
}

func (l *lineReader) ReadByte() (byte, error) {
	b, err := l.r.ReadByte()
	if err == io.EOF {
		l.eof = true
	} else if err != nil {
		l.failed = err
	}
	if err == nil {
		// Whether b starts a line: only there does '$' start a
		// directive; elsewhere (a TXT string, say) it is data.
		first := l.last == '\n' || l.last == 0
		if l.last == '\n' {
			l.line++
			l.cur = l.cur[:0]
			if l.depth == 0 {
				l.recLine = l.line
			}
		}
		l.last = b
		l.track.cur = l
		if lexical[b] || l.comment || l.quoted || l.escaped {
			l.lex(b)
		}
		if len(l.cur) < 512 && (len(l.cur) > 0 || b == '$' && first && l.depth == 0) {
			l.cur = append(l.cur, b)
			if b == '\n' {
				l.directive()
			}
		}
	}
	return b, err
}

// lexical marks the bytes lex acts on outside comments, quotes and
// escapes; for the rest (most bytes of a zone) it is not called. Parsing
// the root zone with miekg/dns: 0.93-1.03 s of CPU for 21 parses against
// 0.92-0.99 s before the restart state was kept (1.13-1.21 s with lex
// called for every byte).
var lexical = [256]bool{'\n': true, '\\': true, '"': true, ';': true, '(': true, ')': true}

// lex follows the lexer's state through b: parentheses, quotes (which
// end at a newline here, as BIND ends them), comments and escapes.
func (l *lineReader) lex(b byte) {
	switch {
	case b == '\n':
		if l.quoted && l.openQuote == 0 {
			l.openQuote = l.line
		}
		l.quoted, l.comment, l.escaped = false, false, false
	case l.comment:
	case l.escaped:
		l.escaped = false
	case b == '\\':
		l.escaped = true
	case l.quoted:
		l.quoted = b != '"'
	case b == '"':
		l.quoted = true
	case b == ';':
		l.comment = true
	case b == '(':
		l.depth++
	case b == ')' && l.depth > 0:
		l.depth--
	}
}

// skipRecord drops the rest of the record the lexer stopped in, up to
// the newline that ends it outside parentheses (or the end of the file).
func (l *lineReader) skipRecord() {
	for l.last != '\n' || l.depth > 0 {
		if _, err := l.ReadByte(); err != nil {
			break
		}
	}
	l.depth, l.openQuote = 0, 0
}

// directive notes $TTL, $ORIGIN and $INCLUDE, and $GENERATE lines
// without a TTL.
func (l *lineReader) directive() {
	f := strings.Fields(string(l.cur))
	if i := slicesIndex(f, ";"); i >= 0 {
		f = f[:i]
	}
	switch {
	case len(f) >= 2 && strings.EqualFold(f[0], "$TTL"):
		if ttl, ok := parseTTL(f[1]); ok {
			l.ttl, l.hasTTL = ttl, true
		}
	case len(f) >= 2 && strings.EqualFold(f[0], "$ORIGIN"):
		l.origin = absolute(f[1], l.origin)
	case len(f) >= 2 && strings.EqualFold(f[0], "$INCLUDE"):
		// $INCLUDE file [origin]: the file starts at that origin, or at
		// the including file's.
		l.track.nextOrigin = l.origin
		if len(f) >= 3 {
			l.track.nextOrigin = absolute(f[2], l.origin)
		}
	case len(f) >= 4 && strings.EqualFold(f[0], "$GENERATE"):
		// $GENERATE range lhs [ttl] [class] type rhs
		if _, explicit := parseTTL(f[3]); !explicit && l.hasTTL {
			l.genLine, l.genTTL, l.genValid = l.line, l.ttl, true
		}
	}
}

// absolute makes a name in a directive absolute, as miekg/dns does.
func absolute(name, origin string) string {
	switch {
	case name == "@":
		return origin
	case dns.IsFqdn(name):
		return name
	case origin == ".":
		return name + "."
	}
	return name + "." + origin
}

func slicesIndex(f []string, s string) int {
	for i, x := range f {
		if strings.HasPrefix(x, s) {
			return i
		}
	}
	return -1
}

func (l *lineReader) Read(p []byte) (int, error) {
	// The parser only uses ReadByte when it is offered; Read exists to
	// satisfy io.Reader and counts the same way.
	return readBytes(l, p)
}

// readBytes fills p from r byte by byte.
func readBytes(r io.ByteReader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		b, err := r.ReadByte()
		if err != nil {
			if n > 0 {
				return n, nil
			}
			return 0, err
		}
		p[n] = b
		n++
	}
	return n, nil
}

func (l *lineReader) Close() error {
	if l.c != nil && (l.eof || l.failed != nil) {
		c := l.c
		l.c = nil
		return c.Close()
	}
	return nil
}

func (l *lineReader) Stat() (fs.FileInfo, error) { return nil, errors.New("no stat") }

// includeFS opens $INCLUDEd files from the whole file system with line
// counting. Paths reach it absolute (the parser joins them to the
// including file's directory) with the leading slash trimmed.
type includeFS struct{ track *tracker }

func (f includeFS) Open(name string) (fs.File, error) {
	file, err := os.Open("/" + name)
	if err != nil {
		return nil, err
	}
	// miekg/dns gives an included file the including one's default
	// TTL, not its owner.
	parent := f.track.cur
	l := &lineReader{r: bufio.NewReader(file), c: file, name: "/" + name, line: 1, track: f.track,
		parent: parent, origin: f.track.nextOrigin}
	if parent != nil {
		l.ttl, l.hasTTL, l.recTTL, l.hasRecTTL = parent.ttl, parent.hasTTL, parent.recTTL, parent.hasRecTTL
	}
	f.track.included = append(f.track.included, l)
	return l, nil
}

// ParseFile reads a zone file in RFC 1035 master format ($ORIGIN, $TTL,
// $INCLUDE, $GENERATE) with miekg/dns's parser. origin may lack its
// trailing dot.
func ParseFile(path, origin string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("zone %s: %w", dns.Fqdn(origin), err)
	}
	defer f.Close()
	return Parse(f, path, origin)
}

// Parse reads zone data from r; name is used for messages and to resolve
// relative $INCLUDE paths. A syntax error does not stop it: it returns
// the records it could read and every error of the input (up to a
// bound), joined, each as "file:line:column: what".
func Parse(r io.Reader, name, origin string) ([]Record, error) {
	var recs []Record
	var errs []error
	err := parse(r, name, origin, func(rr dns.RR, file string, line int) {
		recs = append(recs, Record{RR: rr, File: file, Line: line})
	}, func(file string, line int, msg string) {
		errs = append(errs, fmt.Errorf("%s:%d:%s", file, line, msg))
	})
	if err != nil {
		return nil, err
	}
	return recs, errors.Join(errs...)
}

// parse reads zone data with miekg/dns's parser, calling fn with each
// record and bad with each syntax error (msg is "column: what"); the
// error it returns is about the input as a whole.
func parse(r io.Reader, name, origin string, fn func(rr dns.RR, file string, line int), bad func(file string, line int, msg string)) error {
	origin = dns.CanonicalName(dns.Fqdn(origin))
	if _, ok := dns.IsDomainName(origin); !ok {
		return fmt.Errorf("zone %s: invalid origin", origin)
	}
	p := &parser{tr: &tracker{}, name: name, abs: name, fn: fn, bad: bad}
	if a, err := filepath.Abs(name); err == nil {
		p.abs = a
	}
	p.top = &lineReader{r: bufio.NewReader(r), name: name, line: 1, track: p.tr, origin: origin}
	p.run(p.top)
	// An included file the parse stopped in before its end (too many
	// errors, a read error) is still open (see lineReader.Close), and
	// nothing will read it now.
	for _, l := range p.tr.included {
		if l.c != nil {
			l.c.Close()
			l.c = nil
		}
	}
	if p.errors > maxErrors {
		bad(name, p.top.line, fmt.Sprintf(" too many errors (more than %d): stopped here", maxErrors))
	}
	return nil
}

// parser reads a zone file and the files it includes, going on after a
// syntax error as Knot's and NSD's readers do: miekg/dns's parser stops
// at the first, so a new one is started after the bad record, given the
// state the file had there ($ORIGIN, $TTL, the last owner).
type parser struct {
	tr        *tracker
	top       *lineReader
	name, abs string // the top file as given, and as an absolute path
	fn        func(rr dns.RR, file string, line int)
	bad       func(file string, line int, msg string)
	errors    int
}

// run parses r from where it stands to its end.
func (p *parser) run(r *lineReader) {
	for p.errors <= maxErrors {
		pre, dummy := r.resumption()
		file := r.name
		if r == p.top {
			file = p.abs
		}
		var in io.Reader = r
		if pre != "" {
			in = &prefixed{pre: pre, r: r}
		}
		zp := dns.NewZoneParser(in, r.origin, file)
		if !r.hasTTL && r.hasRecTTL {
			zp.SetDefaultTTL(r.recTTL)
		}
		zp.SetIncludeAllowed(true)
		zp.SetIncludeFS(includeFS{track: p.tr})
		for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
			if dummy {
				dummy = false
				continue
			}
			p.record(rr)
		}
		err := zp.Err()
		if err == nil {
			return
		}
		failed := p.tr.cur
		if failed == nil {
			failed = r
		}
		p.errors++
		p.report(err, failed)
		// The parser stopped inside failed's current record: skip the
		// rest of it, then finish each file between failed and r (the
		// files whose $INCLUDE lines led to it), innermost first.
		if failed.failed != nil {
			p.errors = maxErrors + 1 // a read error: nothing more to read
			return
		}
		failed.skipRecord()
		for x := failed; x != r && x != nil; x = x.parent {
			p.run(x)
			x.Close()
		}
	}
}

// record hands one record on, with its file and line, and notes the state
// a restart needs.
func (p *parser) record(rr dns.RR) {
	cur := p.tr.cur
	if cur == nil {
		cur = p.top
	}
	line := cur.line
	file := cur.name
	h := rr.Header()
	cur.openQuote = 0
	if cur.genValid && cur.genLine == line {
		h.Ttl = cur.genTTL
	} else {
		cur.owner = h.Name
	}
	if !cur.hasTTL {
		cur.recTTL, cur.hasRecTTL = h.Ttl, true
	}
	p.fn(rr, file, line)
}

// report passes on miekg's "FILE: dns: WHAT: "TOKEN" at line: L:C" as
// what it is, at the line the reader counted (a restarted parser counts
// from the restart) and miekg's column.
func (p *parser) report(err error, at *lineReader) {
	msg := err.Error()
	if i := strings.Index(msg, "dns: "); i >= 0 {
		msg = msg[i+len("dns: "):]
	}
	col := ""
	if i := strings.LastIndex(msg, " at line: "); i >= 0 {
		if _, c, ok := strings.Cut(msg[i+len(" at line: "):], ":"); ok {
			col = c + ":"
		}
		msg = msg[:i]
	}
	if at.openQuote != 0 && at.openQuote < at.line {
		// The lexer read on past the end of the line for the closing
		// quote and fails somewhere later: the quote is the error.
		p.bad(at.name, at.openQuote, fmt.Sprintf(" unbalanced quotes: the string runs on to line %d", at.line))
		return
	}
	if at.depth > 0 && at.recLine != 0 && at.recLine < at.line {
		// Inside parentheses miekg/dns's position is where its lexer
		// stood, a line or more past the token: the record's first line
		// is where to look.
		p.bad(at.name, at.recLine, " "+explain(msg))
		return
	}
	p.bad(at.name, at.line, col+" "+explain(msg))
}

// explain names what is wrong where miekg/dns's message names only what
// it tried last: a token where a type belongs that is not one is
// reported as "not a TTL", an address that is not one as "bad A A".
func explain(msg string) string {
	if tok, ok := strings.CutPrefix(msg, "not a TTL: "); ok {
		if t := strings.Trim(tok, `"`); t != "" && (t[0] < '0' || t[0] > '9') {
			return "unknown type " + tok
		}
		return tok + " is not a TTL, a class or a type"
	}
	for _, m := range [...]struct{ miekg, ours string }{
		{"bad A A: ", "bad IPv4 address "},
		{"bad AAAA AAAA: ", "bad IPv6 address "},
		{"bad MX Pref: ", "bad MX preference "},
		{"bad MX Mx: ", "bad MX exchange: "},
		{"garbage after rdata: ", "extra text after the record: "},
	} {
		if tok, ok := strings.CutPrefix(msg, m.miekg); ok {
			msg = m.ours + tok
		}
	}
	if what, ok := strings.CutSuffix(msg, `: "\n"`); ok {
		return what + ": missing at the end of the line"
	}
	return msg
}

// resumption is the text that puts a new parser where the last one
// stood in r: the $TTL in force, and a placeholder record with the last
// owner (dummy: the caller drops the record it gives), so that a line
// without an owner continues it. miekg/dns reads a record without a TTL
// only once it has a default, hence no placeholder before one.
func (r *lineReader) resumption() (pre string, dummy bool) {
	if r.hasTTL {
		pre = "$TTL " + uitoa(r.ttl) + "\n"
	}
	if r.owner != "" && (r.hasTTL || r.hasRecTTL) {
		pre += r.owner + " TYPE65534 \\# 0\n"
		dummy = true
	}
	return pre, dummy
}

// prefixed reads pre, then r: the resumption text before the rest of a
// file, without counting it as the file's lines.
type prefixed struct {
	pre string
	r   *lineReader
}

func (p *prefixed) ReadByte() (byte, error) {
	if p.pre != "" {
		b := p.pre[0]
		p.pre = p.pre[1:]
		return b, nil
	}
	return p.r.ReadByte()
}

func (p *prefixed) Read(b []byte) (int, error) { return readBytes(p, b) }

// parseTTL reads a TTL as zone files write it: seconds, or BIND-style
// units ("1h30m", "2d"), as miekg/dns accepts them.
func parseTTL(s string) (uint32, bool) {
	var total, n uint64
	digits := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			n = n*10 + uint64(c-'0')
			digits = true
		case digits:
			var mul uint64
			switch c | 0x20 {
			case 's':
				mul = 1
			case 'm':
				mul = 60
			case 'h':
				mul = 3600
			case 'd':
				mul = 86400
			case 'w':
				mul = 604800
			default:
				return 0, false
			}
			total += n * mul
			n, digits = 0, false
		default:
			return 0, false
		}
		if total+n > 1<<32-1 {
			return 0, false
		}
	}
	if len(s) == 0 {
		return 0, false
	}
	return uint32(total + n), true
}

// RRs returns the records without their positions, as the signers take them.
func RRs(recs []Record) []dns.RR {
	rrs := make([]dns.RR, len(recs))
	for i := range recs {
		rrs[i] = recs[i].RR
	}
	return rrs
}
