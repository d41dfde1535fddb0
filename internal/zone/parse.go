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

// Position is "file:line", as error messages print it.
func (r Record) Position() string { return fmt.Sprintf("%s:%d", r.File, r.Line) }

// lineReader counts lines as the zone parser consumes bytes, so that each
// record returned by dns.ZoneParser can be given the line it ended on
// (the parser itself does not expose positions of good records).
type lineReader struct {
	r     *bufio.Reader
	c     io.Closer
	name  string
	line  int
	last  byte
	track *tracker

	// The directives seen so far, to correct $GENERATE's TTL: miekg/dns
	// gives generated records its built-in default of 3600 instead of the
	// $TTL in force (RFC 2308 §4), unless the template names a TTL.
	cur      []byte // the line being read, while it may be a directive
	ttl      uint32 // the last $TTL
	hasTTL   bool
	genLine  int // a $GENERATE line without its own TTL
	genTTL   uint32
	genValid bool
}

// tracker remembers which file the parser read from last, which is the
// file of the record it just returned ($INCLUDE switches files).
type tracker struct{ cur *lineReader }

func (l *lineReader) ReadByte() (byte, error) {
	b, err := l.r.ReadByte()
	if err == nil {
		if l.last == '\n' {
			l.line++
			l.cur = l.cur[:0]
		}
		l.last = b
		l.track.cur = l
		if len(l.cur) < 512 && (len(l.cur) > 0 || b == '$') {
			l.cur = append(l.cur, b)
			if b == '\n' {
				l.directive()
			}
		}
	}
	return b, err
}

// directive notes $TTL values and $GENERATE lines without a TTL.
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
	case len(f) >= 4 && strings.EqualFold(f[0], "$GENERATE"):
		// $GENERATE range lhs [ttl] [class] type rhs
		if _, explicit := parseTTL(f[3]); !explicit && l.hasTTL {
			l.genLine, l.genTTL, l.genValid = l.line, l.ttl, true
		}
	}
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
	n := 0
	for n < len(p) {
		b, err := l.ReadByte()
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
	if l.c != nil {
		return l.c.Close()
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
	return &lineReader{r: bufio.NewReader(file), c: file, name: "/" + name, line: 1, track: f.track}, nil
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
// relative $INCLUDE paths.
func Parse(r io.Reader, name, origin string) ([]Record, error) {
	var recs []Record
	err := ParseFunc(r, name, origin, func(rr dns.RR, file string, line int) {
		recs = append(recs, Record{RR: rr, File: file, Line: line})
	})
	return recs, err
}

// ParseFunc is Parse calling fn with each record as it is read, so that
// nothing holds the whole parsed zone.
func ParseFunc(r io.Reader, name, origin string, fn func(rr dns.RR, file string, line int)) error {
	origin = dns.CanonicalName(dns.Fqdn(origin))
	if _, ok := dns.IsDomainName(origin); !ok {
		return fmt.Errorf("zone %s: invalid origin", origin)
	}
	tr := &tracker{}
	top := &lineReader{r: bufio.NewReader(r), name: name, line: 1, track: tr}
	abs := name
	if a, err := filepath.Abs(name); err == nil {
		abs = a
	}
	zp := dns.NewZoneParser(top, origin, abs)
	zp.SetIncludeAllowed(true)
	zp.SetIncludeFS(includeFS{track: tr})
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		cur := tr.cur
		if cur == nil {
			cur = top
		}
		line := cur.line
		file := cur.name
		if cur == top {
			file = name
		}
		if cur.genValid && cur.genLine == line {
			rr.Header().Ttl = cur.genTTL
		}
		fn(rr, file, line)
	}
	if err := zp.Err(); err != nil {
		return positionError(err, abs, name)
	}
	return nil
}

// positionError rewrites miekg's "FILE: dns: WHAT: "TOKEN" at line: L:C" as
// "FILE:L:C: WHAT: "TOKEN"", the way compilers print positions, with the
// absolute path of the top file replaced by the name the user gave.
func positionError(err error, abs, name string) error {
	msg := err.Error()
	file := name
	if i := strings.Index(msg, "dns: "); i >= 0 {
		if i >= 2 {
			file = msg[:i-2]
		}
		msg = msg[i+len("dns: "):]
	}
	if file == abs {
		file = name
	}
	if i := strings.LastIndex(msg, " at line: "); i >= 0 {
		return fmt.Errorf("%s:%s: %s", file, msg[i+len(" at line: "):], msg[:i])
	}
	return fmt.Errorf("%s: %s", file, msg)
}

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
