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
	for i, z := range c.Zones {
		at := zoneAt{line: z.Line, index: i}
		name := fmt.Sprintf("zone #%d", i+1)
		if z.Origin != "" {
			name = fmt.Sprintf("zone %q", z.Origin)
		}
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
		v.validateCatalog(at, name, i)
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

// validateCatalog checks zone i's catalog settings (RFC 9432): a
// member names a catalog produced here; a catalog produced here has no
// file and no primary and is no member itself; one consumed is a
// secondary. A zone with no file and no primary is a catalog produced
// here, if a member names it or it says catalog-role = "generate".
func (v *validator) validateCatalog(at zoneAt, name string, i int) {
	z := &v.c.Zones[i]
	v.indexZones()
	origin := canonicalOrigin(z.Origin)
	members := v.members[origin]
	if z.Catalog == origin {
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
	var cat *Zone
	if j, ok := v.zoneIndex[z.Catalog]; ok {
		cat = &v.c.Zones[j]
	}
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
	// zoneIndex is the index of the first [[zone]] of each canonical
	// origin, members the number of zones naming each as their catalog:
	// made once (indexZones), so that checking N zones' catalogs costs N
	// lookups, not N² comparisons (100,000 zones took 40 s to start).
	zoneIndex map[string]int
	members   map[string]int
}

// indexZones fills zoneIndex and members, once.
func (v *validator) indexZones() {
	if v.zoneIndex != nil {
		return
	}
	v.zoneIndex = make(map[string]int, len(v.c.Zones))
	v.members = make(map[string]int)
	for j := range v.c.Zones {
		if o := canonicalOrigin(v.c.Zones[j].Origin); o != "" {
			if _, dup := v.zoneIndex[o]; !dup {
				v.zoneIndex[o] = j
			}
		}
		if c := v.c.Zones[j].Catalog; c != "" {
			v.members[c]++
		}
	}
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
