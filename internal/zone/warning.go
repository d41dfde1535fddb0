package zone

// Warnings: problems the loader works around, as Knot, NSD and BIND do,
// instead of refusing the zone; and the error type that carries every
// problem of a zone that is refused.

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"github.com/tern-dns/tern/internal/wire"
)

// maxWarnings bounds how many warnings one load keeps; the rest are
// counted in a last one. A zone whose signatures have all expired would
// otherwise give one per signed RRset.
const maxWarnings = 100

// Warning is a problem the loader worked around: the zone loads and is
// served, and the operator should hear of it. File and Line locate it;
// a warning about the zone as a whole has File "".
type Warning struct {
	File string
	Line int
	Msg  string
}

// String is "file:line: message", as errors print positions.
func (w Warning) String() string {
	if w.File == "" {
		return w.Msg
	}
	return fmt.Sprintf("%s:%d: %s", w.File, w.Line, w.Msg)
}

// Error is a zone that was refused: every error found (each "file:line:
// what"), and the warnings found beside them, which 'tern check' prints
// too. Its text is the errors', one a line, as errors.Join writes them.
type Error struct {
	Errs     []error
	Warnings []Warning
}

// Error lists every problem found, one per line.
func (e *Error) Error() string { return errors.Join(e.Errs...).Error() }

// Unwrap returns the errors, for errors.Is and errors.As.
func (e *Error) Unwrap() []error { return e.Errs }

// Warnings returns the warnings of a load: z's when it loaded, else those
// carried by its *Error.
func Warnings(z *Zone, err error) []Warning {
	if z != nil {
		return z.Warnings
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Warnings
	}
	return nil
}

// LogWarnings writes each warning to log at level Warn, with the zone,
// file and line as attributes (a zone-wide warning has no file or line).
func LogWarnings(log *slog.Logger, origin string, ws []Warning) {
	for _, w := range ws {
		if w.File == "" {
			log.Warn(w.Msg, "zone", origin)
		} else {
			log.Warn(w.Msg, "zone", origin, "file", w.File, "line", w.Line)
		}
	}
}

// posWarning is a warning with its position, for sorting.
type posWarning struct {
	p   pos
	msg string
}

// warnf records a warning at p (nil: about the whole zone).
func (c *compiler) warnf(p *pos, format string, args ...any) {
	c.nwarn++
	if len(c.warns) >= maxWarnings {
		return
	}
	w := posWarning{msg: fmt.Sprintf(format, args...)}
	if p != nil {
		w.p = *p
	} else {
		w.p.file = noFile
	}
	c.warns = append(c.warns, w)
}

// warningsFull counts a warning that will not be kept, so that its
// caller can skip formatting it: a zone whose signatures have all
// expired has one per signed RRset.
func (c *compiler) warningsFull() bool {
	if len(c.warns) < maxWarnings {
		return false
	}
	c.nwarn++
	return true
}

// noFile marks a position that is the zone as a whole.
const noFile = ^uint16(0)

// warnings returns the warnings in file and line order.
func (c *compiler) warnings() []Warning {
	if len(c.warns) == 0 {
		return nil
	}
	sort.SliceStable(c.warns, func(i, j int) bool { return c.warns[i].p.before(c.warns[j].p) })
	out := make([]Warning, 0, len(c.warns)+1)
	for _, w := range c.warns {
		if w.p.file == noFile || int(w.p.file) >= len(c.files) {
			out = append(out, Warning{Msg: fmt.Sprintf("zone %s: %s", c.origin, w.msg)})
		} else {
			out = append(out, Warning{File: c.files[w.p.file], Line: int(w.p.line), Msg: w.msg})
		}
	}
	if c.nwarn > len(c.warns) {
		out = append(out, Warning{Msg: fmt.Sprintf("zone %s: %d more warnings", c.origin, c.nwarn-len(c.warns))})
	}
	return out
}

// before orders positions by file, then line; zone-wide ones first.
func (p pos) before(q pos) bool {
	if p.file != q.file {
		return p.file+1 < q.file+1 // noFile (all ones) wraps to 0: first
	}
	return p.line < q.line
}

// CompareVersions returns the warnings a reload deserves when new
// replaces old, two loads of the same zone: a serial that went down, and
// content that changed under an unchanged serial. Either way secondaries
// and caches that compare serials keep the old version (RFC 1034 §4.3.5,
// RFC 1982). The served-set package calls it on each reload; the content
// is compared only when the serials are equal.
func CompareVersions(old, new *Zone) []Warning {
	if old == nil || new == nil || old.SOA == nil || new.SOA == nil {
		return nil
	}
	var msg string
	// RFC 1982 §3.2 (2^31 apart is undefined: taken as lower).
	switch c := wire.SerialCompare(new.Serial, old.Serial); {
	case c < 0:
		msg = fmt.Sprintf("the SOA serial went down from %d to %d (RFC 1982): secondaries and caches keep the old version", old.Serial, new.Serial)
	case c == 0 && !sameContent(old, new):
		msg = fmt.Sprintf("the zone changed but its SOA serial %d did not: secondaries keep the old version (RFC 1034 §4.3.5)", new.Serial)
	default:
		return nil
	}
	if f := int(new.SOA.file); f < len(new.files) {
		return []Warning{{File: new.files[f], Line: int(new.SOA.line), Msg: msg}}
	}
	return []Warning{{Msg: fmt.Sprintf("zone %s: %s", NameString(new.Origin), msg)}}
}

// sameContent reports whether two compiled zones hold the same records.
func sameContent(a, b *Zone) bool {
	if a.Records != b.Records || a.Names != b.Names {
		return false
	}
	same := true
	b.Nodes(func(n *Node) {
		if same {
			m := a.Lookup(n.Name)
			same = m != nil && sameSets(m.RRsets, n.RRsets)
		}
	})
	if !same || (a.NSEC3 == nil) != (b.NSEC3 == nil) {
		return false
	}
	if a.NSEC3 != nil {
		if len(a.NSEC3.Nodes) != len(b.NSEC3.Nodes) {
			return false
		}
		for i, n := range b.NSEC3.Nodes {
			if m := a.NSEC3.Nodes[i]; string(m.Name) != string(n.Name) || !sameSets(m.RRsets, n.RRsets) {
				return false
			}
		}
	}
	return true
}

// sameSets compares two nodes' RRsets, signatures included.
func sameSets(a, b []RRset) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Type != y.Type || x.TTL != y.TTL || x.Count != y.Count || string(x.Wire) != string(y.Wire) {
			return false
		}
		xs, _ := x.Sigs()
		ys, _ := y.Sigs()
		if xs.TTL != ys.TTL || xs.Count != ys.Count || string(xs.Wire) != string(ys.Wire) {
			return false
		}
	}
	return true
}
