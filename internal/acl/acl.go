// Package acl decides who may do what to a zone: transfer it, send it a
// NOTIFY, update it. A request is described by its source address, the
// TSIG key it was signed with (verified before the ACL is asked) and the
// action; a zone's rules allow it or not, with Knot DNS's ACL semantics:
// a rule matches when the address lies in one of its prefixes (any
// address when it lists none), the key is one of its keys (an unsigned
// request when it lists none) and the action is one of its actions.
// A request that no rule matches is denied: a zone without rules allows
// nothing.
package acl

import (
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
)

// actionNames are the actions as the configuration names them.
var actionNames = []struct {
	name string
	a    Action
}{{"transfer", Transfer}, {"notify", Notify}, {"update", Update}}

// ParseAction returns the action named name ("transfer", "notify",
// "update") and whether there is one.
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
