package perf

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/miekg/dns"
)

// Query is one line of a dnsperf-style query file: a name and a query type.
// The class is always IN, as in dnsperf.
type Query struct {
	Name string // domain name in presentation format, fully qualified
	Type uint16 // RR type code
}

// maxLineLen bounds a query-file line; a legal name plus type fits easily,
// and the bound keeps a hostile file from growing the scanner buffer.
const maxLineLen = 4096

// ParseQueryFile reads dnsperf's query-file format: one "name TYPE" per line,
// blank lines and lines starting with ';' ignored. Names are validated and
// made fully qualified here so that encoding later cannot fail. Errors name
// the offending line number.
func ParseQueryFile(r io.Reader) ([]Query, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), maxLineLen)
	var qs []Query
	lineNo := 0
	for sc.Scan() {
		lineNo++
		q, ok, err := ParseQueryLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		if ok {
			qs = append(qs, q)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", lineNo+1, err)
	}
	return qs, nil
}

// ParseQueryLine parses one query-file line. ok is false for blank and
// comment lines.
func ParseQueryLine(line string) (q Query, ok bool, err error) {
	fields := strings.Fields(line)
	if len(fields) == 0 || strings.HasPrefix(fields[0], ";") {
		return Query{}, false, nil
	}
	if len(fields) != 2 {
		return Query{}, false, fmt.Errorf("want \"name TYPE\", got %d fields in %q", len(fields), line)
	}
	// Validate by encoding once (the send path relies on this), before
	// Fqdn, which would turn a stray trailing backslash into an escaped dot.
	if _, err := appendName(make([]byte, 0, 256), fields[0]); err != nil {
		return Query{}, false, fmt.Errorf("bad name %q: %w", fields[0], err)
	}
	name := dns.Fqdn(fields[0])
	t, err := parseType(fields[1])
	if err != nil {
		return Query{}, false, err
	}
	return Query{Name: name, Type: t}, true, nil
}

// parseType accepts mnemonics known to miekg/dns and RFC 3597 TYPEnnn.
func parseType(s string) (uint16, error) {
	u := strings.ToUpper(s)
	if t, ok := dns.StringToType[u]; ok {
		return t, nil
	}
	if rest, ok := strings.CutPrefix(u, "TYPE"); ok {
		n, err := strconv.ParseUint(rest, 10, 16)
		if err == nil {
			return uint16(n), nil
		}
	}
	return 0, fmt.Errorf("unknown query type %q", s)
}
