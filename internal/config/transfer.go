package config

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/acl"
)

// TSIGAlgorithms are the [[key]] algorithms accepted (RFC 8945 §6; hmac-md5
// is not: miekg/dns no longer implements it, and RFC 8945 §6 says it must
// not be used for new keys). The first is the one recommended.
var TSIGAlgorithms = []string{"hmac-sha256", "hmac-sha384", "hmac-sha512", "hmac-sha224", "hmac-sha1"}

// defaultRemotePort is the port of a remote address given without one.
const defaultRemotePort = 53

// validateTransfer checks the [[key]], [[remote]] and [[acl]] tables and
// the zones' references to them: every name a table or zone refers to
// must be defined, every value valid.
func (v *validator) validateTransfer() {
	c := v.c
	keys := v.names("key", len(c.Keys), func(i int) string { return c.Keys[i].Name })
	for i, k := range c.Keys {
		at := "key[" + strconv.Itoa(i) + "]"
		name := tableName("key", i, k.Name)
		if k.Name != "" {
			if _, ok := dns.IsDomainName(k.Name); !ok {
				v.addf(at+".name", "%s: invalid name (a key name is a domain name)", name)
			}
		}
		switch {
		case k.Algorithm == "":
			v.addf(at, "%s: missing algorithm (want one of %s)", name, strings.Join(TSIGAlgorithms, ", "))
		case !validAlgorithm(k.Algorithm):
			v.addf(at+".algorithm", "%s: algorithm %q (want one of %s)", name, k.Algorithm, strings.Join(TSIGAlgorithms, ", "))
		}
		if k.Secret == "" {
			v.addf(at, "%s: missing secret (base64, e.g. from 'openssl rand -base64 32')", name)
		} else if _, err := base64.StdEncoding.DecodeString(k.Secret); err != nil {
			v.addf(at+".secret", "%s: secret is not base64: %v", name, err)
		}
	}
	remotes := v.names("remote", len(c.Remotes), func(i int) string { return c.Remotes[i].Name })
	for i, r := range c.Remotes {
		at := "remote[" + strconv.Itoa(i) + "]"
		name := tableName("remote", i, r.Name)
		if len(r.Address) == 0 {
			v.addf(at, "%s: missing address (want a list of \"ip:port\" or \"ip\" strings)", name)
		}
		for j, a := range r.Address {
			if _, err := ParseRemoteAddress(a); err != nil {
				v.addf(at+".address["+strconv.Itoa(j)+"]", "%s: %v", name, err)
			}
		}
		if r.Key != "" && !keys[r.Key] {
			v.addf(at+".key", "%s: key %q is not defined (no [[key]] has that name)", name, r.Key)
		}
	}
	acls := v.names("acl", len(c.ACLs), func(i int) string { return c.ACLs[i].Name })
	for i, a := range c.ACLs {
		at := "acl[" + strconv.Itoa(i) + "]"
		name := tableName("acl", i, a.Name)
		v.refs(at+".remote", name, "remote", a.Remote, remotes)
		v.refs(at+".key", name, "key", a.Key, keys)
		for j, s := range a.Address {
			if _, err := parsePrefix(s); err != nil {
				v.addf(at+".address["+strconv.Itoa(j)+"]", "%s: address %q: want an address or a prefix (e.g. 192.0.2.0/24): %v", name, s, err)
			}
		}
		if len(a.Action) == 0 {
			v.addf(at, "%s: missing action (want a list of transfer, notify, update, query)", name)
		}
		for j, s := range a.Action {
			if _, ok := acl.ParseAction(s); !ok {
				v.addf(at+".action["+strconv.Itoa(j)+"]", "%s: action %q (want transfer, notify, update or query)", name, s)
			}
		}
		if len(a.Key) > 0 && slices.Contains(a.Action, "query") {
			// A query's TSIG is verified only once its zone is found:
			// query rules match addresses alone.
			v.addf(at+".key", "%s: a query ACL matches client addresses only, not keys: remove key, or put query in an [[acl]] of its own", name)
		}
	}
	for i := range c.Zones {
		v.zoneRefs(i, zoneName(i, &c.Zones[i]), &c.Zones[i], acls, remotes)
	}
}

// zoneRefs checks that the ACLs and remotes zone i (z, named name)
// names are defined: acls and remotes are the names defined.
func (v *validator) zoneRefs(i int, name string, z *Zone, acls, remotes map[string]bool) {
	at := "zone[" + strconv.Itoa(i) + "]"
	v.refs(at+".acl", name, "acl", z.ACL, acls)
	v.refs(at+".notify", name, "remote", z.Notify, remotes)
	v.refs(at+".primary", name, "remote", z.Primary, remotes)
}

// names checks the name keys of the tables of kind (each present and
// unique) and returns the set of names defined.
func (v *validator) names(kind string, n int, name func(i int) string) map[string]bool {
	first := make(map[string]int, n)
	for i := range n {
		s := name(i)
		at := kind + "[" + strconv.Itoa(i) + "]"
		if s == "" {
			v.addf(at, "%s #%d: missing name", kind, i+1)
			continue
		}
		if j, dup := first[s]; dup {
			where := "as " + kind + " #" + strconv.Itoa(j+1)
			if l := v.lineOfKey(kind + "[" + strconv.Itoa(j) + "]"); l > 0 {
				where = "at line " + strconv.Itoa(l)
			}
			v.addf(at+".name", "%s %q: duplicate name (first defined %s)", kind, s, where)
			continue
		}
		first[s] = i
	}
	defined := make(map[string]bool, len(first))
	for s := range first {
		defined[s] = true
	}
	return defined
}

// refs checks that every name in list, the value of the key at (in the
// table described by owner), is a table of kind that is defined.
func (v *validator) refs(at, owner, kind string, list []string, defined map[string]bool) {
	for j, s := range list {
		if !defined[s] {
			v.addf(at+"["+strconv.Itoa(j)+"]", "%s: %s %q is not defined (no [[%s]] has that name)", owner, kind, s, kind)
		}
	}
}

// tableName names table i of kind for messages: by its name, or by its
// number when it has none.
func tableName(kind string, i int, name string) string {
	if name == "" {
		return kind + " #" + strconv.Itoa(i+1)
	}
	return fmt.Sprintf("%s %q", kind, name)
}

// validAlgorithm reports whether alg is one of TSIGAlgorithms.
func validAlgorithm(alg string) bool {
	for _, a := range TSIGAlgorithms {
		if a == alg {
			return true
		}
	}
	return false
}

// ParseRemoteAddress parses a [[remote]] address: "ip:port", "[ipv6]:port",
// or an address alone, which means port 53.
func ParseRemoteAddress(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		if ap.Port() == 0 {
			return netip.AddrPort{}, fmt.Errorf("address %q: port 0", s)
		}
		return ap, nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.AddrPortFrom(a, defaultRemotePort), nil
	}
	return netip.AddrPort{}, fmt.Errorf("address %q: want \"ip:port\" or \"ip\" (e.g. 192.0.2.1:53, [2001:db8::1]:53)", s)
}

// ZoneACL returns the rules of zone z's acl list, resolved: each [[acl]]
// gives one rule per remote it names (the remote's addresses, and its key
// when it has one) and one more for its address and key lists when it
// has either, or when it names no remote. c must have passed Validate.
func (c *Config) ZoneACL(z *Zone) (acl.List, error) {
	var l acl.List
	for _, name := range z.ACL {
		rules, err := c.ruleList(name)
		if err != nil {
			return nil, fmt.Errorf("zone %s: %w", z.Origin, err)
		}
		l = append(l, rules...)
	}
	return l, nil
}

// ruleList returns the rules of the [[acl]] named name (see ZoneACL).
func (c *Config) ruleList(name string) (acl.List, error) {
	a := c.acl(name)
	if a == nil {
		return nil, fmt.Errorf("acl %q is not defined", name)
	}
	var actions acl.Action
	for _, s := range a.Action {
		act, ok := acl.ParseAction(s)
		if !ok {
			return nil, fmt.Errorf("acl %q: action %q", a.Name, s)
		}
		actions |= act
	}
	var l acl.List
	for _, rn := range a.Remote {
		r := c.Remote(rn)
		if r == nil {
			return nil, fmt.Errorf("acl %q: remote %q is not defined", a.Name, rn)
		}
		rule := acl.Rule{Name: a.Name + "/" + r.Name, Actions: actions}
		for _, s := range r.Address {
			ap, err := ParseRemoteAddress(s)
			if err != nil {
				return nil, fmt.Errorf("remote %q: %w", r.Name, err)
			}
			// Knot matches a remote by address alone, whatever
			// the port a request comes from.
			rule.Prefixes = append(rule.Prefixes, netip.PrefixFrom(ap.Addr().WithZone(""), ap.Addr().BitLen()))
		}
		if r.Key != "" {
			rule.Keys = []string{r.Key}
		}
		l = append(l, rule)
	}
	if len(a.Remote) > 0 && len(a.Address) == 0 && len(a.Key) == 0 {
		return l, nil
	}
	rule := acl.Rule{Name: a.Name, Actions: actions, Keys: a.Key}
	for _, s := range a.Address {
		p, err := parsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("acl %q: %w", a.Name, err)
		}
		rule.Prefixes = append(rule.Prefixes, p)
	}
	return append(l, rule), nil
}

func (c *Config) acl(name string) *ACL {
	for i := range c.ACLs {
		if c.ACLs[i].Name == name {
			return &c.ACLs[i]
		}
	}
	return nil
}

// Remote returns the [[remote]] named name, or nil.
func (c *Config) Remote(name string) *Remote {
	for i := range c.Remotes {
		if c.Remotes[i].Name == name {
			return &c.Remotes[i]
		}
	}
	return nil
}

// Key returns the [[key]] named name (lowercase, fully qualified), or nil.
func (c *Config) Key(name string) *Key {
	for i := range c.Keys {
		if c.Keys[i].Name == name {
			return &c.Keys[i]
		}
	}
	return nil
}
