package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2/unstable"
)

// keyKind is the kind of value a configuration key takes.
type keyKind int

const (
	kindString   keyKind = iota
	kindInt              // an integer
	kindBool             // true or false
	kindDuration         // a string time.ParseDuration accepts
	kindStrings          // an array of strings
	kindTable            // a table: [name] or name = { ... }
	kindTables           // an array of tables: [[name]]
)

// key describes one configuration key, as the toml tags of Config define
// it, so that the checks and the messages follow the struct without a
// second list of keys to keep in step.
type key struct {
	name string // the TOML key ("tcp-idle-timeout")
	kind keyKind
	want string // what the key takes, for messages: "an integer"
	keys []*key // a table's keys, or an array of tables' element keys
}

// durationType is the one struct type that is a scalar in TOML.
var durationType = reflect.TypeFor[Duration]()

// schema returns the keys of the configuration file, from Config's toml
// tags. A field's want tag, when present, replaces the generic description
// of what it takes.
func schema() *key {
	return &key{kind: kindTable, keys: tableKeys(reflect.TypeFor[Config]())}
}

// tableKeys lists the keys of the struct type t, in field order.
func tableKeys(t reflect.Type) []*key {
	var keys []*key
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		k := &key{name: name}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft == durationType:
			k.kind, k.want = kindDuration, `a duration string such as "10s"`
		case ft.Kind() == reflect.String:
			k.kind, k.want = kindString, "a string"
		case ft.Kind() == reflect.Int:
			k.kind, k.want = kindInt, "an integer"
		case ft.Kind() == reflect.Bool:
			k.kind, k.want = kindBool, "true or false"
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String:
			k.kind, k.want = kindStrings, "a list of strings"
		case ft.Kind() == reflect.Struct:
			k.kind, k.want, k.keys = kindTable, "a table", tableKeys(ft)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			k.kind, k.want, k.keys = kindTables, "[["+name+"]] tables", tableKeys(ft.Elem())
		default:
			// A field of a kind added without a case here would be
			// accepted unchecked; the tests walk every field to catch it.
			continue
		}
		if w := f.Tag.Get("want"); w != "" {
			k.want = w
		}
		keys = append(keys, k)
	}
	return keys
}

// child returns the key of table t named name, or nil.
func (t *key) child(name string) *key {
	for _, k := range t.keys {
		if k.name == name {
			return k
		}
	}
	return nil
}

// checker walks a parsed TOML document against the schema and collects
// every unknown key and every value of the wrong type, each with its line,
// so that one run reports all of them (go-toml's decoder stops at the
// first type error, and reports unknown keys only when there is none).
type checker struct {
	path   string
	root   *key
	nl     []int
	errs   []error
	arrays map[string]bool // arrays of tables seen so far, by path
}

// checkKeys returns every unknown key and wrongly typed value in data,
// joined, or nil. data must be valid TOML.
func checkKeys(path string, data []byte) error {
	c := checker{path: path, root: schema(), nl: newlines(data), arrays: make(map[string]bool)}
	var p unstable.Parser
	p.Reset(data)
	table, prefix := c.root, "" // nil table: inside an unknown one, already reported
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table, prefix = c.header(e)
		case unstable.KeyValue:
			if table != nil {
				c.keyValue(e, table, prefix)
			}
		}
	}
	return errors.Join(c.errs...)
}

// header resolves a [table] or [[table]] header to the table its keys go
// into, and its dotted path; nil when the header is wrong (and reported).
func (c *checker) header(e *unstable.Node) (*key, string) {
	t, path := c.root, ""
	for it := e.Key(); it.Next(); {
		k, line := c.lookup(t, path, it.Node())
		if k == nil {
			return nil, ""
		}
		path = join(path, k.name)
		last := it.IsLast()
		switch {
		case k.kind == kindTables && last && e.Kind == unstable.ArrayTable:
			c.arrays[path] = true
		case k.kind == kindTables && !last && c.arrays[path]:
			// [zone.signing] belongs to the last [[zone]] (TOML §Array of Tables).
		case k.kind == kindTables && !last:
			c.addf(line, "[%s] comes before any [[%s]] it could belong to", headerPath(e), path)
			return nil, ""
		case k.kind == kindTable && (!last || e.Kind == unstable.Table):
		case e.Kind == unstable.ArrayTable && last:
			c.addf(line, "%s: want %s, got [[%s]] tables", path, k.want, path)
			return nil, ""
		default:
			c.addf(line, "%s: want %s, got a table", path, k.want)
			return nil, ""
		}
		t = k
	}
	return t, path
}

// lookup returns the key of table t (at path) that the key part names,
// and its line; nil, after reporting it, when t has no such key.
func (c *checker) lookup(t *key, path string, part *unstable.Node) (*key, int) {
	name, line := string(part.Data), c.line(part, 0)
	k := t.child(name)
	if k == nil {
		c.unknown(line, t, path, name)
	}
	return k, line
}

// headerPath is the dotted key of a table header, as written.
func headerPath(e *unstable.Node) string {
	var parts []string
	for it := e.Key(); it.Next(); {
		parts = append(parts, string(it.Node().Data))
	}
	return strings.Join(parts, ".")
}

// keyValue checks one key = value of table t (whose path is prefix),
// following dotted keys into subtables.
func (c *checker) keyValue(e *unstable.Node, t *key, prefix string) {
	path := prefix
	for it := e.Key(); it.Next(); {
		k, line := c.lookup(t, path, it.Node())
		if k == nil {
			return
		}
		path = join(path, k.name)
		if it.IsLast() {
			c.value(k, path, line, e.Value())
			return
		}
		if k.kind != kindTable {
			c.addf(line, "%s: want %s, got a table", path, k.want)
			return
		}
		t = k
	}
}

// value checks the value v given to key k (at path, on line).
func (c *checker) value(k *key, path string, line int, v *unstable.Node) {
	ok := false
	switch k.kind {
	case kindString:
		ok = v.Kind == unstable.String
	case kindInt:
		ok = v.Kind == unstable.Integer
	case kindBool:
		ok = v.Kind == unstable.Bool
	case kindDuration:
		if v.Kind == unstable.String {
			if _, err := time.ParseDuration(string(v.Data)); err != nil {
				c.addf(line, "%s: %v", path, &durationError{text: string(v.Data), err: err})
			}
			return
		}
	case kindStrings:
		if v.Kind != unstable.Array {
			break
		}
		i := 0
		for it := v.Children(); it.Next(); {
			el := it.Node()
			if el.Kind == unstable.Comment {
				continue
			}
			i++
			if el.Kind != unstable.String {
				c.addf(c.line(el, line), "%s: want %s, got a list holding %s (item %d)", path, k.want, kindOf(el), i)
				return
			}
		}
		return
	case kindTable:
		if v.Kind != unstable.InlineTable {
			break
		}
		c.inlineTable(v, k, path)
		return
	case kindTables:
		if v.Kind != unstable.Array {
			break
		}
		for it := v.Children(); it.Next(); {
			el := it.Node()
			switch el.Kind {
			case unstable.Comment:
			case unstable.InlineTable:
				c.inlineTable(el, k, path)
			default:
				c.addf(c.line(el, line), "%s: want %s, got a list holding %s", path, k.want, kindOf(el))
				return
			}
		}
		c.arrays[path] = true
		return
	}
	if !ok {
		c.addf(line, "%s: want %s, got %s", path, k.want, kindOf(v))
	}
}

// inlineTable checks the key-values of an inline table given to table k.
func (c *checker) inlineTable(v *unstable.Node, k *key, path string) {
	for it := v.Children(); it.Next(); {
		if kv := it.Node(); kv.Kind == unstable.KeyValue {
			c.keyValue(kv, k, path)
		}
	}
}

// kindOf describes a TOML value for messages: "a string", "a list".
func kindOf(v *unstable.Node) string {
	switch v.Kind {
	case unstable.String:
		return "a string"
	case unstable.Integer:
		return "an integer"
	case unstable.Float:
		return "a float"
	case unstable.Bool:
		return "a boolean"
	case unstable.Array:
		return "a list"
	case unstable.InlineTable:
		return "a table"
	case unstable.LocalDate:
		return "a date"
	case unstable.LocalTime:
		return "a time"
	case unstable.LocalDateTime, unstable.DateTime:
		return "a date-time"
	}
	return "a " + strings.ToLower(v.Kind.String())
}

// removedKeys are keys earlier versions accepted, with why they went, so
// that an old config gets told what to do rather than "unknown key".
// (server.tcp-max-pipelined was one, while it bounded nothing; it bounds
// the deferred answers of a connection now.)
var removedKeys = map[string]string{}

// unknown reports key name of table t (at path) as unknown, with the known
// key it most likely meant, or as removed, with why.
func (c *checker) unknown(line int, t *key, path, name string) {
	if why, ok := removedKeys[join(path, name)]; ok {
		c.addf(line, "%s was removed: %s; delete the line", join(path, name), why)
		return
	}
	msg := "unknown key " + join(path, name)
	if s := c.suggest(t, path, name); s != "" {
		msg += " (did you mean " + s + "?)"
	}
	c.addf(line, "%s", msg)
}

// suggest returns the path of the known key closest to name: one of table
// t's keys a small edit away ("nsdi" for "nsid"), else a key of that name
// or close to it in another table ("listen" at the top for
// "server.listen"); "" when nothing is close.
func (c *checker) suggest(t *key, path, name string) string {
	if k := closest(t.keys, name); k != nil {
		return join(path, k.name)
	}
	best, bestDist := "", -1
	var walk func(t *key, path string)
	walk = func(t *key, path string) {
		for _, k := range t.keys {
			p := join(path, k.name)
			if d := distance(name, k.name); d <= maxDistance(name) && (bestDist < 0 || d < bestDist) {
				best, bestDist = p, d
			}
			walk(k, p)
		}
	}
	walk(c.root, "")
	return best
}

// closest returns the key among keys nearest to name within maxDistance.
func closest(keys []*key, name string) *key {
	var best *key
	bestDist := maxDistance(name) + 1
	for _, k := range keys {
		if d := distance(name, k.name); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// maxDistance is how many edits still count as a near miss of name: one
// per three characters, at least one, so that short keys do not match
// everything ("id" is not a typo of "nsid").
func maxDistance(name string) int {
	return max(1, len(name)/3)
}

// distance is the optimal string alignment distance between a and b,
// case-insensitively: insertions, deletions, substitutions and swaps of
// adjacent characters ("nsdi" -> "nsid") each count one.
func distance(a, b string) int {
	a, b = strings.ToLower(a), strings.ToLower(b)
	// d[i][j] is the distance between a[:i] and b[:j]; three rows suffice.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// join appends name to the dotted path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// line is the line of node n; arrays and some other nodes carry no
// position, and then the line of their key, fallback, is used.
func (c *checker) line(n *unstable.Node, fallback int) int {
	if n.Raw.Length == 0 {
		return fallback
	}
	return lineOf(c.nl, int(n.Raw.Offset))
}

func (c *checker) addf(line int, format string, args ...any) {
	where := c.path
	if line > 0 {
		where += fmt.Sprintf(":%d", line)
	}
	c.errs = append(c.errs, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...)))
}
