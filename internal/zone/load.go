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
}

// tracker remembers which file the parser read from last, which is the
// file of the record it just returned ($INCLUDE switches files).
type tracker struct{ cur *lineReader }

func (l *lineReader) ReadByte() (byte, error) {
	b, err := l.r.ReadByte()
	if err == nil {
		if l.last == '\n' {
			l.line++
		}
		l.last = b
		l.track.cur = l
	}
	return b, err
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
