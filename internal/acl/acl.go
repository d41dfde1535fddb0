// Package acl decides who may do what to a zone: transfer it, send it a
// NOTIFY, update it, query it. A request is described by its source address, the
// TSIG key it was signed with (verified before the ACL is asked) and the
// action; a zone's rules allow it or not, with Knot DNS's ACL semantics:
// a rule matches when the address lies in one of its prefixes (any
// address when it lists none), the key is one of its keys (an unsigned
// request when it lists none) and the action is one of its actions.
// A request that no rule matches is denied: a zone without rules allows
// nothing.
//
// Queries are the exception: a zone (or the resolver) without a rule for
// Query answers everyone, as Knot and BIND do without allow-query, and
// rules for Query match addresses only (a query's TSIG key is not
// asked: a signed query is verified only after the zone is found).
// List.QueryTable compiles them into a Table, a prefix table the answer
// path checks without allocating.
package acl

import (
	"encoding/binary"
	"net/netip"
	"strings"
)

// Action is what a request wants to do with a zone; Actions are or-ed
// into a rule's set.
type Action uint8

const (
	// Transfer is an outgoing zone transfer, AXFR or IXFR (RFC 5936,
	// RFC 1995).
	Transfer Action = 1 << iota
	// Notify is an incoming NOTIFY (RFC 1996).
	Notify
	// Update is a dynamic update (RFC 2136).
	Update
	// Query is a query answered from a zone, or by the resolver.
	Query
)

// actionNames are the actions as the configuration names them.
var actionNames = []struct {
	name string
	a    Action
}{{"transfer", Transfer}, {"notify", Notify}, {"update", Update}, {"query", Query}}

// ParseAction returns the action named name ("transfer", "notify",
// "update", "query") and whether there is one.
func ParseAction(name string) (Action, bool) {
	for _, n := range actionNames {
		if n.name == name {
			return n.a, true
		}
	}
	return 0, false
}

// String names the actions of a, joined by "+".
func (a Action) String() string {
	var parts []string
	for _, n := range actionNames {
		if a&n.a != 0 {
			parts = append(parts, n.name)
		}
	}
	return strings.Join(parts, "+")
}

// Rule is one way to be allowed.
type Rule struct {
	// Name is the rule's name in the configuration, for logs.
	Name string
	// Prefixes are the source addresses allowed; none: every address.
	Prefixes []netip.Prefix
	// Keys are the TSIG key names (lowercase, fully qualified) one of
	// which must have signed the request; none: the request must be
	// unsigned.
	Keys []string
	// Actions are the actions allowed.
	Actions Action
}

// Matches reports whether a request from addr, signed with key ("" for
// unsigned), wanting action, is allowed by r.
func (r *Rule) Matches(addr netip.Addr, key string, action Action) bool {
	if r.Actions&action == 0 {
		return false
	}
	if len(r.Prefixes) > 0 {
		// An IPv4 client on a dual-stack socket, or a link-local one
		// with its zone, is matched as the address it is.
		addr = addr.Unmap().WithZone("")
		in := false
		for _, p := range r.Prefixes {
			if p.Contains(addr) {
				in = true
				break
			}
		}
		if !in {
			return false
		}
	}
	if len(r.Keys) == 0 {
		// Knot: a rule without keys is for unsigned requests only.
		return key == ""
	}
	for _, k := range r.Keys {
		if k == key {
			return true
		}
	}
	return false
}

// List is a zone's rules.
type List []Rule

// Allow returns the rule that allows a request from addr, signed with key
// ("" for unsigned), wanting action, or nil when none does: the request
// is then denied.
func (l List) Allow(addr netip.Addr, key string, action Action) *Rule {
	for i := range l {
		if l[i].Matches(addr, key, action) {
			return &l[i]
		}
	}
	return nil
}

// QueryTable compiles the prefixes of l's rules that allow Query into a
// Table, or returns nil when no rule allows Query (everyone may query).
// Rules for Query match addresses only: their keys are not asked. A
// rule without prefixes allows every address.
func (l List) QueryTable() *Table {
	var ps []netip.Prefix
	found, any := false, false
	for i := range l {
		if l[i].Actions&Query == 0 {
			continue
		}
		found = true
		if len(l[i].Prefixes) == 0 {
			any = true
		}
		ps = append(ps, l[i].Prefixes...)
	}
	if !found {
		return nil
	}
	t := NewTable(ps)
	t.any = any
	return t
}

// Table is a compiled set of address prefixes: Contains scans integers,
// without allocating, for the answer path.
type Table struct {
	any bool
	v4  []v4Prefix
	v6  []v6Prefix
}

type v4Prefix struct{ addr, mask uint32 }

type v6Prefix struct{ hi, lo, mhi, mlo uint64 }

// NewTable returns the table of prefixes ps. An IPv4-mapped IPv6 prefix
// is taken as the IPv4 prefix it maps.
func NewTable(ps []netip.Prefix) *Table {
	t := &Table{}
	for _, p := range ps {
		p = p.Masked()
		a, bits := p.Addr().WithZone(""), p.Bits()
		if a.Is4In6() && bits >= 96 {
			a, bits = a.Unmap(), bits-96
		}
		if a.Is4() {
			b := a.As4()
			m := uint32(0)
			if bits > 0 {
				m = ^uint32(0) << (32 - bits)
			}
			t.v4 = append(t.v4, v4Prefix{binary.BigEndian.Uint32(b[:]) & m, m})
			continue
		}
		b := a.As16()
		var mhi, mlo uint64
		switch {
		case bits >= 64:
			mhi = ^uint64(0)
			if bits > 64 {
				mlo = ^uint64(0) << (128 - bits)
			}
		case bits > 0:
			mhi = ^uint64(0) << (64 - bits)
		}
		t.v6 = append(t.v6, v6Prefix{binary.BigEndian.Uint64(b[:8]) & mhi, binary.BigEndian.Uint64(b[8:]) & mlo, mhi, mlo})
	}
	return t
}

// Contains reports whether addr lies in one of t's prefixes. An IPv4
// client on a dual-stack socket (IPv4-mapped) is matched as the IPv4
// address it is; the invalid address (no client known) matches only a
// table that allows every address.
func (t *Table) Contains(addr netip.Addr) bool {
	if t.any {
		return true
	}
	if addr.Is4In6() {
		addr = addr.Unmap()
	}
	if addr.Is4() {
		b := addr.As4()
		x := binary.BigEndian.Uint32(b[:])
		for _, p := range t.v4 {
			if x&p.mask == p.addr {
				return true
			}
		}
		return false
	}
	if !addr.Is6() {
		return false
	}
	b := addr.As16()
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	for _, p := range t.v6 {
		if hi&p.mhi == p.hi && lo&p.mlo == p.lo {
			return true
		}
	}
	return false
}
