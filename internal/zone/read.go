package zone

// Reading a zone: the entry points, which try the fast reader (fast.go)
// and fall back to miekg/dns's parser (parse.go), feeding the compiler.

import (
	"fmt"
	"io"
	"os"

	"github.com/miekg/dns"
)

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
	type result struct {
		err    error
		syntax []syntaxError
	}
	perr := make(chan result, 1)
	go func() {
		b := make(batch, 0, batchSize)
		var syntax []syntaxError
		bad := func(file string, line int, msg string) { syntax = append(syntax, syntaxError{file, line, msg}) }
		err := parse(r, name, origin, func(rr dns.RR, file string, line int) {
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
		}, bad)
		if len(b) > 0 {
			full <- b
		}
		close(full)
		perr <- result{err, syntax}
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
	res := <-perr
	if res.err != nil {
		return nil, res.err
	}
	for _, e := range res.syntax {
		c.syntaxError(e.file, e.line, e.msg)
	}
	return c.finish()
}

// syntaxError is a syntax error the parser reported, kept until the
// compiler can take it.
type syntaxError struct {
	file string
	line int
	msg  string
}

// LoadRecords reads a zone file with the parser Load falls back to
// (miekg/dns's, not the fast reader, which builds no records) and checks it
// by the same rules, but returns its records rather than a compiled zone:
// the signers ('tern zone sign', the server's automatic signing) work on
// records. A zone Load refuses is refused here too, with the same
// file:line messages (a *Error), and the records Load would leave out
// (outside the zone) are left out, so that every command reads a zone
// file alike. The warnings are Load's.
func LoadRecords(path, origin string) ([]Record, []Warning, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("zone %s: %w", dns.Fqdn(origin), err)
	}
	defer f.Close()
	c, err := newCompiler(origin, 0)
	if err != nil {
		return nil, nil, err
	}
	var kept []Record
	err = parse(f, path, origin, func(rr dns.RR, file string, line int) {
		if c.add(rr, file, line) {
			kept = append(kept, Record{RR: rr, File: file, Line: line})
		}
	}, c.syntaxError)
	if err != nil {
		return nil, nil, err
	}
	z, err := c.finish()
	if err != nil {
		return nil, Warnings(nil, err), err
	}
	return kept, z.Warnings, nil
}
