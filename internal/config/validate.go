package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnssec"
)

// Limits enforced by Validate.
const (
	// minUDPPayload is the classic DNS message size every resolver accepts.
	minUDPPayload = 512
	// minJournalSize keeps a journal-max-size typo ("64" for "64MiB")
	// from making every difference too large to keep.
	minJournalSize = 4 << 10
	// maxUDPPayload is the largest value the 16-bit EDNS field can carry.
	maxUDPPayload = 65535
)

// logLevelChoices lists the accepted log-level values for messages.
const logLevelChoices = "debug, info, warn, error"

// Validate checks the configuration and returns every problem found, joined
// with errors.Join, each formatted "file:line: what" (the line is omitted
// when unknown, e.g. for values set by flags).
func (c *Config) Validate() error {
	if c == nil {
		return errors.New("config: nil configuration")
	}
	v := validator{c: c}
	s := &c.Server

	if len(s.Listen) == 0 {
		v.addf("server.listen", "server.listen: at least one address is required")
	}
	v.serverAddrs = v.listen("server.listen", s.Listen)
	if s.Workers < 0 {
		v.addf("server.workers", "server.workers: must be >= 0 (0 = one per CPU), got %d", s.Workers)
	}
	if s.UDPPayload < minUDPPayload || s.UDPPayload > maxUDPPayload {
		v.addf("server.udp-payload", "server.udp-payload: must be between %d and %d, got %d", minUDPPayload, maxUDPPayload, s.UDPPayload)
	}
	if s.ResponseCache < 0 || s.ResponseCache > maxResponseCache {
		v.addf("server.response-cache", "server.response-cache: must be between 0 and %d, got %d", maxResponseCache, s.ResponseCache)
	}
	if s.TCPIdleTimeout.Duration <= 0 {
		v.addf("server.tcp-idle-timeout", "server.tcp-idle-timeout: must be positive, got %s", s.TCPIdleTimeout.Duration)
	}
	if s.TCPIOTimeout.Duration <= 0 {
		v.addf("server.tcp-io-timeout", "server.tcp-io-timeout: must be positive, got %s", s.TCPIOTimeout.Duration)
	}
	if s.TCPMaxConnections < 1 {
		v.addf("server.tcp-max-connections", "server.tcp-max-connections: must be >= 1, got %d", s.TCPMaxConnections)
	}
	if s.TCPMaxPerClient < 1 {
		v.addf("server.tcp-max-connections-per-client", "server.tcp-max-connections-per-client: must be >= 1, got %d", s.TCPMaxPerClient)
	}
	if s.TCPMaxPipelined < 1 {
		v.addf("server.tcp-max-pipelined", "server.tcp-max-pipelined: must be >= 1, got %d", s.TCPMaxPipelined)
	}
	if s.Group != "" && s.User == "" {
		v.addf("server.group", "server.group: %q set without server.user (the user to drop to)", s.Group)
	}
	if s.LogFormat != "text" && s.LogFormat != "json" {
		v.addf("server.log-format", "server.log-format: invalid format %q (want text or json)", s.LogFormat)
	}
	if s.QueryLog < 0 {
		v.addf("server.query-log", "server.query-log: must be >= 0 (one answer in N logged; 0: none), got %d", s.QueryLog)
	}
	if !validLogLevel(s.LogLevel) {
		v.addf("server.log-level", "server.log-level: invalid level %q (want one of %s)", s.LogLevel, logLevelChoices)
	}

	if s.DataDir == "" {
		v.addf("server.data-dir", "server.data-dir: must not be empty")
	}
	// A unix socket's path fits sockaddr_un's sun_path: 108 octets on
	// Linux with the terminating NUL, 104 on the BSDs.
	if len(s.Control) > 103 {
		v.addf("server.control", "server.control: %q is %d octets long, more than a unix socket path takes (103)", s.Control, len(s.Control))
	}
	if n, err := parseSize(s.JournalMaxSize); err != nil {
		v.addf("server.journal-max-size", "server.journal-max-size: %v", err)
	} else if n < minJournalSize {
		v.addf("server.journal-max-size", "server.journal-max-size: %q is less than 4KiB", s.JournalMaxSize)
	}

	if _, err := c.Identity.NSIDBytes(); err != nil {
		v.addf("identity.nsid", "identity.%v", err)
	}

	origins := make(map[string]int, len(c.Zones))
	v.zones = c.IndexZones(nil)
	for i := range c.Zones {
		z := &c.Zones[i]
		at, name := zoneAt{line: z.Line, index: i}, zoneName(i, z)
		if z.Origin == "" {
			v.addZone(at, "%s: missing origin", name)
		} else if _, ok := dns.IsDomainName(z.Origin); !ok {
			v.addZone(at, "%s: invalid origin name", name)
		} else {
			canon := canonicalOrigin(z.Origin)
			if first, dup := origins[canon]; dup {
				v.addZone(at, "%s: duplicate origin (first defined %s)", name, c.zoneWhere(first))
			} else {
				origins[canon] = i
			}
		}
		v.validateZone(at, name, z, v.zones.members[canonicalOrigin(z.Origin)], v.zones.Zone)
	}
	if c.Resolver != nil {
		v.validateResolver(c.Resolver)
	}
	if m := c.Metrics; m != nil && m.Listen != "" {
		if _, err := netip.ParseAddrPort(m.Listen); err != nil {
			v.addf("metrics.listen", "metrics.listen: invalid address %q (want ip:port, e.g. 127.0.0.1:9153): %v", m.Listen, err)
		}
	}
	if c.RRL != nil {
		v.validateRRL(c.RRL)
	}
	v.validateCookies(&c.Cookies)
	if d := c.Dnstap; d != nil {
		switch {
		case d.File != "" && d.Socket != "":
			v.addf("dnstap.socket", "dnstap: file and socket are both set (want one of them)")
		case d.File == "" && d.Socket == "":
			v.addf("dnstap", "dnstap: neither file nor socket is set (want one of them)")
		}
		if d.Versions < 0 || d.Versions > maxDnstapVersions {
			v.addf("dnstap.versions", "dnstap.versions: must be between 0 (truncate) and %d, got %d", maxDnstapVersions, d.Versions)
		}
	}
	v.validateTransfer()
	return errors.Join(v.errs...)
}

// validateZone checks zone z's own settings, at and name placing and
// naming it in messages; members is the number of zones naming it as
// their catalog, lookup finds a zone by canonical origin (nil: none).
func (v *validator) validateZone(at zoneAt, name string, z *Zone, members int, lookup func(origin string) *Zone) {
	v.validateCatalog(at, name, z, members, lookup)
	if z.JournalMaxSize != "" {
		if n, err := parseSize(z.JournalMaxSize); err != nil {
			v.addZone(at, "%s: journal-max-size: %v", name, err)
		} else if n < minJournalSize {
			v.addZone(at, "%s: journal-max-size: %q is less than 4KiB", name, z.JournalMaxSize)
		}
	}
	if _, err := dnssec.ParseSerialPolicy(z.SerialPolicy); err != nil {
		v.addZone(at, "%s: %v", name, err)
	}
	if z.ZonefileSync.Duration < 0 {
		v.addZone(at, "%s: zonefile-sync %s is negative", name, z.ZonefileSync.Duration)
	}
	if sg := z.Signing; sg != nil {
		if sg.KeyDir == "" {
			v.addZone(at, "%s: signing: missing key-dir", name)
		}
		switch strings.ToLower(sg.Algorithm) {
		case "", "ecdsap256sha256", "ed25519":
		default:
			v.addZone(at, "%s: signing: algorithm %q (want ecdsap256sha256 or ed25519)", name, sg.Algorithm)
		}
		if _, err := dnssec.ParseSerialPolicy(sg.SerialPolicy); err != nil {
			v.addZone(at, "%s: signing: %v", name, err)
		}
		if sg.OptOut && !sg.NSEC3 {
			v.addZone(at, "%s: signing: opt-out needs nsec3", name)
		}
		for _, d := range []struct {
			key string
			val Duration
		}{{"zsk-lifetime", sg.ZSKLifetime}, {"ksk-lifetime", sg.KSKLifetime}, {"signature-validity", sg.SignatureValidity},
			{"signature-refresh", sg.SignatureRefresh}, {"propagation-delay", sg.PropagationDelay}, {"parent-delay", sg.ParentDelay}} {
			if d.val.Duration < 0 {
				v.addZone(at, "%s: signing: %s is negative", name, d.key)
			}
		}
		if sg.SignatureValidity.Duration > 0 && sg.SignatureRefresh.Duration >= sg.SignatureValidity.Duration {
			v.addZone(at, "%s: signing: signature-refresh must be shorter than signature-validity", name)
		}
	}
}

// validateCatalog checks zone z's catalog settings (RFC 9432): a
// member names a catalog produced here; a catalog produced here has no
// file and no primary and is no member itself; one consumed is a
// secondary. A zone with no file and no primary is a catalog produced
// here, if a member names it or it says catalog-role = "generate".
// members and lookup are validateZone's.
func (v *validator) validateCatalog(at zoneAt, name string, z *Zone, members int, lookup func(origin string) *Zone) {
	if z.Catalog == canonicalOrigin(z.Origin) {
		members-- // the zone naming itself, an error reported below
	}
	switch z.CatalogRole {
	case "", CatalogGenerate, CatalogInterpret:
	default:
		v.addZone(at, "%s: catalog-role %q (want %q or %q)", name, z.CatalogRole, CatalogGenerate, CatalogInterpret)
	}
	generate := z.CatalogRole == CatalogGenerate || (z.CatalogRole == "" && members > 0)
	switch {
	case z.CatalogRole == CatalogInterpret && !z.Secondary():
		v.addZone(at, "%s: catalog-role = %q needs primary (the catalog is transferred from it)", name, CatalogInterpret)
	case z.CatalogRole == CatalogInterpret && members > 0:
		v.addZone(at, "%s: a catalog consumed (catalog-role = %q) is not one zones here can name in catalog", name, CatalogInterpret)
	case generate && (z.File != "" || z.Secondary()):
		v.addZone(at, "%s: a catalog zone Tern produces has no file and no primary (its content is made from its members)", name)
	case !generate && z.File == "" && !z.Secondary():
		v.addZone(at, "%s: missing file", name)
	}
	if z.CatalogGrace != nil && z.CatalogRole != CatalogInterpret {
		v.addZone(at, "%s: catalog-grace is for a catalog consumed (catalog-role = %q)", name, CatalogInterpret)
	}
	if z.CatalogGrace != nil && z.CatalogGrace.Duration < 0 {
		v.addZone(at, "%s: catalog-grace %s is negative", name, z.CatalogGrace.Duration)
	}
	if z.CatalogMaxMembers != nil && z.CatalogRole != CatalogInterpret {
		v.addZone(at, "%s: catalog-max-members is for a catalog consumed (catalog-role = %q)", name, CatalogInterpret)
	}
	if z.CatalogMaxMembers != nil && *z.CatalogMaxMembers < 1 {
		v.addZone(at, "%s: catalog-max-members %d is less than 1", name, *z.CatalogMaxMembers)
	}
	if z.Catalog == "" {
		return
	}
	if z.Catalog == canonicalOrigin(z.Origin) {
		v.addZone(at, "%s: catalog %q is the zone itself", name, z.Catalog)
		return
	}
	cat := lookup(z.Catalog)
	switch {
	case cat == nil:
		v.addZone(at, "%s: catalog %q is not a [[zone]] of the configuration", name, z.Catalog)
	case cat.Catalog != "":
		v.addZone(at, "%s: catalog %q is itself a member of catalog %q (a catalog zone is no member)", name, z.Catalog, cat.Catalog)
	case generate:
		v.addZone(at, "%s: a catalog zone is no member of another (catalog %q)", name, z.Catalog)
	}
}

// listen checks the addresses of a listen key (server.listen,
// resolver.listen) and returns them, each with its index.
func (v *validator) listen(key string, list []string) map[netip.AddrPort]int {
	seen := make(map[netip.AddrPort]int, len(list))
	for i, addr := range list {
		at := key + "[" + strconv.Itoa(i) + "]"
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			v.addf(at, "%s: invalid address %q (want ip:port, e.g. 127.0.0.1:53 or [::1]:53): %v", key, addr, err)
			continue
		}
		if first, dup := seen[ap]; dup {
			if list[first] == addr {
				v.addf(at, "%s: duplicate address %q", key, addr)
			} else {
				v.addf(at, "%s: duplicate address %q (same as %q)", key, addr, list[first])
			}
			continue
		}
		seen[ap] = i
	}
	return seen
}

// validLogLevel reports whether level is one of logLevelChoices.
func validLogLevel(level string) bool {
	switch level {
	case "debug", "info", "warn", "error":
		return true
	}
	return false
}

// zoneWhere describes where zone i was defined, for duplicate messages.
func (c *Config) zoneWhere(i int) string {
	if l := c.Zones[i].Line; l > 0 {
		return "at line " + strconv.Itoa(l)
	}
	return "as zone #" + strconv.Itoa(i+1)
}

// zoneAt locates a zone entry for messages.
type zoneAt struct {
	line  int
	index int
}

// validator accumulates problems with their file positions.
type validator struct {
	c    *Config
	errs []error
	// serverAddrs are server.listen's addresses, which resolver.listen
	// must not repeat.
	serverAddrs map[netip.AddrPort]int
	// zones indexes c's zones (Validate) or those of c and the zones
	// added to it (CheckAdd).
	zones *ZoneIndex
}

// ZoneIndex indexes a list of zones, a configuration's and the zones
// added to it at run time: the first zone of each canonical origin, and
// the number of zones naming each as their catalog. Made once, so that
// checking N zones' catalogs costs N lookups, not N² comparisons
// (100,000 zones took 40 s to start), and an added zone's few.
type ZoneIndex struct {
	// c is the configuration; at holds the zones' indexes in c.Zones
	// followed by the added zones (an added zone's index is only ever
	// past c's, which is all its messages need), n the next index;
	// added finds an added zone.
	c       *Config
	at      map[string]int
	members map[string]int
	n       int
	added   func(origin string) *Zone
}

// IndexZones indexes c's zones, for CheckAdd; the zones added to c at
// run time that it does not name are indexed after them (Add). c must
// have passed Validate; lookup finds an added zone by canonical origin,
// for the messages about a zone that an added one names as its catalog.
func (c *Config) IndexZones(lookup func(origin string) *Zone) *ZoneIndex {
	x := &ZoneIndex{c: c, at: make(map[string]int, len(c.Zones)), members: make(map[string]int), added: lookup}
	for j := range c.Zones {
		x.Add(&c.Zones[j])
	}
	return x
}

// Add indexes z, a zone added after those indexed.
func (x *ZoneIndex) Add(z *Zone) {
	if o := canonicalOrigin(z.Origin); o != "" {
		if _, dup := x.at[o]; !dup {
			x.at[o] = x.n
		}
	}
	x.n++
	if z.Catalog != "" {
		x.members[z.Catalog]++
	}
}

// Remove takes z, an added zone indexed, out of the index; a zone of
// the configuration stays.
func (x *ZoneIndex) Remove(z *Zone) {
	o := canonicalOrigin(z.Origin)
	if j, ok := x.at[o]; !ok || j < len(x.c.Zones) {
		return
	}
	delete(x.at, o)
	if z.Catalog != "" {
		if x.members[z.Catalog]--; x.members[z.Catalog] <= 0 {
			delete(x.members, z.Catalog)
		}
	}
}

// Has reports whether a zone of origin (canonical) is indexed.
func (x *ZoneIndex) Has(origin string) bool {
	_, ok := x.at[origin]
	return ok
}

// Zone returns the indexed zone of origin (canonical), nil for none.
func (x *ZoneIndex) Zone(origin string) *Zone {
	j, ok := x.at[origin]
	switch {
	case !ok:
		return nil
	case j < len(x.c.Zones):
		return &x.c.Zones[j]
	case x.added != nil:
		return x.added(origin)
	}
	return nil
}

// CheckAdd checks z, a zone to add at run time beside those x indexes
// (c's, which passed Validate, and those added before), and returns
// what Validate would find wrong with c's zones followed by z: the same
// messages, with the same file and line context, but looking only at z
// and what it can conflict with (the catalog it names, the ACLs and
// remotes it names), not at every zone. Whether a zone of z's origin is
// served already is the caller's to check (x.Has).
func (c *Config) CheckAdd(z *Zone, x *ZoneIndex) error {
	v := validator{c: c, zones: x}
	origin := canonicalOrigin(z.Origin)
	// The catalog z names comes before z: its checks, with z one of
	// its members, first.
	if z.Catalog != "" && z.Catalog != origin {
		if cat := x.Zone(z.Catalog); cat != nil {
			j := x.at[z.Catalog]
			v.validateCatalog(zoneAt{line: cat.Line, index: j}, zoneName(j, cat), cat, x.members[z.Catalog]+1, x.Zone)
		}
	}
	i := x.n
	at, name := zoneAt{line: z.Line, index: i}, zoneName(i, z)
	if z.Origin == "" {
		v.addZone(at, "%s: missing origin", name)
	} else if _, ok := dns.IsDomainName(z.Origin); !ok {
		v.addZone(at, "%s: invalid origin name", name)
	}
	members := x.members[origin]
	if z.Catalog == origin {
		members++ // z names itself: counted as Validate counts it
	}
	v.validateZone(at, name, z, members, x.Zone)
	acls := v.names("acl", len(c.ACLs), func(i int) string { return c.ACLs[i].Name })
	remotes := v.names("remote", len(c.Remotes), func(i int) string { return c.Remotes[i].Name })
	v.zoneRefs(i, name, z, acls, remotes)
	return errors.Join(v.errs...)
}

// zoneName names zone i in messages: by its origin, or by its number
// when it has none.
func zoneName(i int, z *Zone) string {
	if z.Origin == "" {
		return fmt.Sprintf("zone #%d", i+1)
	}
	return fmt.Sprintf("zone %q", z.Origin)
}

// addf records a problem at the line of key, or of its closest enclosing
// key, because inline tables only have positions for their outer key.
func (v *validator) addf(key, format string, args ...any) {
	v.add(v.lineOfKey(key), format, args...)
}

// addZone records a problem about a zone at its [[zone]] line.
func (v *validator) addZone(at zoneAt, format string, args ...any) {
	line := at.line
	if line == 0 {
		line = v.lineOfKey("zone[" + strconv.Itoa(at.index) + "]")
	}
	v.add(line, format, args...)
}

func (v *validator) add(line int, format string, args ...any) {
	where := displayPath(v.c.Path)
	if line > 0 {
		where += ":" + strconv.Itoa(line)
	}
	v.errs = append(v.errs, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...)))
}

func (v *validator) lineOfKey(key string) int {
	return lineOfKey(v.c.lines, key)
}

// lineOfKey looks key up in lines, falling back to ever shorter prefixes
// ("server.listen[1]" -> "server.listen" -> "server"); 0 means unknown.
func lineOfKey(lines map[string]int, key string) int {
	for key != "" {
		if l, ok := lines[key]; ok {
			return l
		}
		cut := strings.LastIndexAny(key, ".[")
		if cut < 0 {
			break
		}
		key = key[:cut]
	}
	return 0
}
