package config

import (
	"bytes"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// indexLines records in lines the line of every key in data, keyed by dotted
// path ("server.listen"); array elements get "path[i]" entries and array
// tables get "name[i]" prefixes. It returns the lines of the zone entries in
// order. data must already have decoded successfully; on a parse error the
// index is simply incomplete, which only costs precision in messages.
func indexLines(data []byte, lines map[string]int) []int {
	var (
		p       unstable.Parser
		prefix  string
		counts  = make(map[string]int)
		zones   []int
		nl      = newlines(data)
		lineAt  = func(r unstable.Range) int { return lineOf(nl, int(r.Offset)) }
		keyPath = func(n *unstable.Node) (string, int) {
			var parts []string
			line := 0
			it := n.Key()
			for it.Next() {
				k := it.Node()
				if line == 0 {
					line = lineAt(k.Raw)
				}
				parts = append(parts, string(k.Data))
			}
			return strings.Join(parts, "."), line
		}
	)
	p.Reset(data)
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table:
			key, line := keyPath(e)
			prefix = key
			setLine(lines, key, line)
		case unstable.ArrayTable:
			key, line := keyPath(e)
			i := counts[key]
			counts[key] = i + 1
			prefix = key + "[" + strconv.Itoa(i) + "]"
			setLine(lines, prefix, line)
			if key == "zone" {
				zones = append(zones, line)
			}
		case unstable.KeyValue:
			key, line := keyPath(e)
			if prefix != "" {
				key = prefix + "." + key
			}
			setLine(lines, key, line)
			v := e.Value()
			if v == nil || v.Kind != unstable.Array {
				continue
			}
			it := v.Children()
			for i := 0; it.Next(); i++ {
				el := it.Node()
				l := lineAt(el.Raw)
				setLine(lines, key+"["+strconv.Itoa(i)+"]", l)
				if key == "zone" {
					zones = append(zones, l)
				}
			}
		}
	}
	return zones
}

// setLine keeps the first line seen for a key: redefinitions are decode
// errors anyway, and the first occurrence is what an operator looks for.
func setLine(lines map[string]int, key string, line int) {
	if _, ok := lines[key]; !ok && line > 0 {
		lines[key] = line
	}
}

// newlines returns the offsets of every '\n' in data, so that lineOf is a
// binary search instead of a rescan: configs with thousands of zones have
// tens of thousands of keys.
func newlines(data []byte) []int {
	var nl []int
	for off := 0; ; {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return nl
		}
		nl = append(nl, off+i)
		off += i + 1
	}
}

// lineOf returns the 1-based line containing byte offset off, given the
// newline offsets nl of the document.
func lineOf(nl []int, off int) int {
	n, _ := slices.BinarySearch(nl, off)
	return n + 1
}
