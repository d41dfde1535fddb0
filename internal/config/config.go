// Package config loads and validates Tern's TOML configuration file.
//
// Parsing is strict: unknown keys, type mismatches and syntax errors are
// reported with file:line:col positions, and Validate reports every semantic
// problem at once so an operator can fix a file in one pass.
package config

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/pelletier/go-toml/v2"
)

// Default values, exported through Default so that callers and docs agree.
const (
	defaultListen            = "127.0.0.1:5300"
	defaultUDPPayload        = 1232
	defaultResponseCache     = 8192
	maxResponseCache         = 1 << 17
	defaultTCPIdleTimeout    = 10 * time.Second
	defaultTCPMaxConnections = 1024
	defaultTCPMaxPerClient   = 128
	defaultTCPMaxPipelined   = 64
	defaultTCPIOTimeout      = 500 * time.Millisecond
	defaultLogLevel          = "info"
	defaultDataDir           = "/var/lib/tern"
	defaultControl           = "/run/tern/control.sock"
	defaultJournalMaxSize    = "64MiB"
	defaultVersion           = "Tern"
	defaultDnstapVersions    = 3
	maxDnstapVersions        = 1000
	// fallbackID is used for id.server. when the host name cannot be
	// determined, so the CHAOS identity is never silently empty.
	fallbackID = "tern"
)

// Config is the complete server configuration.
type Config struct {
	Server   Server   `toml:"server"`
	Identity Identity `toml:"identity"`
	// Resolver is the [resolver] table; nil when there is none (no
	// resolver runs).
	Resolver *Resolver `toml:"resolver"`
	// Metrics is the [metrics] table; nil when there is none (no
	// metrics listener).
	Metrics *Metrics `toml:"metrics"`
	// RRL is the [rrl] table; nil when there is none (no response rate
	// limiting).
	RRL *RRL `toml:"rrl"`
	// Dnstap is the [dnstap] table; nil when there is none (no dnstap
	// output).
	Dnstap *Dnstap `toml:"dnstap"`
	// Cookies is the [cookies] table, its defaults without one.
	Cookies Cookies `toml:"cookies"`
	// Zones holds the [[zone]] tables in file order.
	Zones []Zone `toml:"zone"`
	// Keys, Remotes and ACLs are the [[key]], [[remote]] and [[acl]]
	// tables: TSIG keys, other servers by name, and who may transfer,
	// notify or update which zone. Zones and ACLs refer to them by name.
	Keys    []Key    `toml:"key"`
	Remotes []Remote `toml:"remote"`
	ACLs    []ACL    `toml:"acl"`
	// Path is the file the configuration was loaded from ("" for defaults
	// or flags). It prefixes every validation message.
	Path string `toml:"-"`

	// lines maps dotted key paths ("server.listen", "server.listen[1]") to
	// the line they appear on, so Validate can point at the offending line.
	// It is nil for configurations not produced by Parse.
	lines map[string]int
}

// Metrics holds the [metrics] table: the HTTP listener of the
// Prometheus metrics and the status page.
type Metrics struct {
	// Listen is the listener's address, ip:port; "" (or no table): off.
	Listen string `toml:"listen"`
}

// Dnstap holds the [dnstap] table: where the dnstap records of the
// answered queries go, exactly one of a file and a unix socket.
type Dnstap struct {
	// File is written from its start at each start of the server, an
	// existing one first renamed aside (FILE.0, Versions kept). File
	// and Socket, when relative, are resolved against the configuration
	// file's directory.
	File string `toml:"file"`
	// Versions is how many earlier files are kept (FILE.0 the newest),
	// 0..1000; 0: the file is truncated. Default 3.
	Versions int `toml:"versions"`
	// Socket is a dnstap collector's unix socket (fstrm_capture).
	Socket string `toml:"socket"`
}

// Server holds the [server] table: listeners, transport limits and logging.
//
// The toml tags of Config and the tables in it are the list of keys that
// Parse accepts; a want tag says what a key takes in messages when the
// Go type alone does not say enough.
type Server struct {
	// Listen lists the addresses served on UDP and TCP, e.g. "127.0.0.1:53"
	// or "[::1]:53". A port is required. Default ["127.0.0.1:5300"].
	Listen []string `toml:"listen" want:"a list of \"host:port\" strings"`
	// Workers is the number of UDP workers per listener; 0 means one per CPU.
	Workers int `toml:"workers"`
	// UDPPayload is the EDNS payload size advertised and used (512..65535).
	// Default 1232, the DNS flag day 2020 value that avoids IP fragmentation.
	UDPPayload int `toml:"udp-payload"`
	// ResponseCache is how many UDP responses each worker remembers for
	// questions that repeat (0: none); each takes 1.5 KiB once used.
	// Default 8192 (12 MiB per worker), at most 131072 (192 MiB).
	ResponseCache int `toml:"response-cache"`
	// TCPIdleTimeout closes TCP connections idle for this long. Default 10s.
	TCPIdleTimeout Duration `toml:"tcp-idle-timeout"`
	// TCPMaxConnections bounds concurrent TCP connections; at the limit
	// a new one closes the connection idle the longest, or is closed
	// when none is idle. Default 1024.
	TCPMaxConnections int `toml:"tcp-max-connections"`
	// TCPMaxPerClient bounds the TCP connections of one client (IPv4
	// address, IPv6 /64). Default 128.
	TCPMaxPerClient int `toml:"tcp-max-connections-per-client"`
	// TCPMaxPipelined bounds the deferred answers (resolutions, zone
	// transfers) outstanding on one TCP connection. Default 64.
	TCPMaxPipelined int `toml:"tcp-max-pipelined"`
	// TCPIOTimeout bounds the time a TCP message takes to arrive once its
	// first byte has, and each write of answers. Default 500ms, Knot's
	// tcp-io-timeout.
	TCPIOTimeout Duration `toml:"tcp-io-timeout"`
	// LogLevel is one of debug, info, warn, error. Default info.
	LogLevel string `toml:"log-level"`
	// LogFormat is how log lines are written: "text" (slog's key=value
	// lines, the default) or "json" (one JSON object a line, for log
	// collectors).
	LogFormat string `toml:"log-format"`
	// QueryLog logs one authoritative answer in QueryLog of each
	// worker's, a line each (client, qname, qtype, rcode, transport,
	// size): 100 logs 1% of them. 0, the default: none.
	QueryLog int `toml:"query-log"`
	// DataDir holds what the server writes for itself: the zones'
	// journals (and, later, transferred zones). Default $STATE_DIRECTORY
	// (systemd's StateDirectory=), else /var/lib/tern; a relative path is
	// resolved against the configuration file's directory.
	DataDir string `toml:"data-dir"`
	// JournalMaxSize bounds each zone's journal of differences (IXFR),
	// as a size string: "64MiB". Default 64MiB.
	JournalMaxSize string `toml:"journal-max-size" want:"a size string such as \"64MiB\""`
	// Control is the control socket's path (tern ctl talks to it); ""
	// turns it off. Default $RUNTIME_DIRECTORY/control.sock (systemd's
	// RuntimeDirectory=), else /run/tern/control.sock; a relative path
	// is resolved against the configuration file's directory.
	Control string `toml:"control"`
	// User and Group, when set, are who tern serve runs as once its
	// sockets are bound (as root, for port 53): it makes data-dir and
	// the control socket theirs, then drops to them. Group defaults to
	// User's primary group.
	User  string `toml:"user"`
	Group string `toml:"group"`
}

// Identity holds the [identity] table: how the server identifies itself via
// CHAOS-class TXT queries and the EDNS NSID option.
type Identity struct {
	// Enabled turns on answers to CHAOS TXT id.server., hostname.bind.,
	// version.bind. and version.server. Nil means the default, true.
	Enabled *bool `toml:"chaos"`
	// ID answers id.server. and hostname.bind. Default: os.Hostname().
	ID string `toml:"id"`
	// Version answers version.server. and version.bind. Default "Tern";
	// "" hides the version (such queries are REFUSED).
	Version string `toml:"version"`
	// NSID is the RFC 5001 NSID payload as text; "" disables NSID. A "0x"
	// prefix means the rest is hex-encoded bytes.
	NSID string `toml:"nsid"`
}

// Zone is one [[zone]] table: an origin served from a zone file.
type Zone struct {
	// Origin is the zone apex, normalized by Parse to a lowercase FQDN.
	Origin string `toml:"origin"`
	// File is the zone file; Parse resolves relative paths against the
	// directory of the configuration file, or, for a secondary zone,
	// against server.data-dir, where it defaults to ORIGIN + "zone"
	// (the transferred copy, written by Tern).
	File string `toml:"file"`
	// Signing, when present, makes the server sign the zone itself and
	// keep it signed: keys, rollovers and signature refresh.
	Signing *Signing `toml:"signing"`
	// Notify names the remotes sent a NOTIFY (RFC 1996) when the zone's
	// serial changes.
	Notify []string `toml:"notify" want:"a list of remote names"`
	// ACL names the [[acl]] rules for the zone: without one, transfers
	// are refused and NOTIFYs ignored.
	ACL []string `toml:"acl" want:"a list of acl names"`
	// JournalMaxSize overrides server.journal-max-size for this zone.
	JournalMaxSize string `toml:"journal-max-size" want:"a size string such as \"64MiB\""`
	// SerialPolicy is how a dynamic update (RFC 2136) sets the serial
	// of the version it makes, when it does not set one itself:
	// "increment" (the default), "unixtime" or "dateserial" (Knot's
	// serial-policy). A signed zone's served serial follows
	// [zone.signing]'s.
	SerialPolicy string `toml:"serial-policy"`
	// ZonefileSync is how long after a dynamic update the zone file is
	// rewritten with the zone's content (Knot's zonefile-sync); until
	// then the change is kept in the zone's journal, which a restart
	// replays over the file. Default 0: right after each update.
	ZonefileSync Duration `toml:"zonefile-sync"`
	// Primary names the remotes a secondary zone is fetched from (by
	// AXFR, then IXFR), tried in order.
	Primary []string `toml:"primary" want:"a list of remote names"`
	// Catalog names the catalog zone (RFC 9432) that lists this zone:
	// a [[zone]] of the same file that Tern produces (one with no file
	// and no primary).
	Catalog string `toml:"catalog"`
	// CatalogRole is "generate" for a catalog zone Tern produces from
	// the zones naming it in catalog (implied when one does), or
	// "interpret" for a secondary zone that is a catalog to consume:
	// its member zones are served as secondaries of its primaries,
	// with its ACLs (Knot's catalog-role).
	CatalogRole string `toml:"catalog-role"`
	// CatalogGrace is how long a consumed catalog's member zone that
	// left it keeps its stored copy (file, timers, journal) before it is
	// deleted; it stops being served at once. Default 1h.
	CatalogGrace *Duration `toml:"catalog-grace"`
	// CatalogMaxMembers is the most members a consumed catalog may
	// list: a version listing more is not interpreted (the members stay
	// as they were). Default DefaultCatalogMaxMembers.
	CatalogMaxMembers *int `toml:"catalog-max-members"`
	// MemberOf is set by Tern, not by a key: the catalog consumed
	// that listed this zone (one added at run time as its member).
	MemberOf string `toml:"-"`
	// Line is the line of the [[zone]] table in the configuration file
	// (0 if unknown), for error messages.
	Line int `toml:"-"`
}

// Secondary reports whether the zone is fetched from primaries rather
// than read from a file of the operator's.
func (z *Zone) Secondary() bool { return len(z.Primary) > 0 }

// Generated reports whether the zone's content is made by Tern (a
// catalog zone it produces) rather than read or transferred: it has no
// file and no primary.
func (z *Zone) Generated() bool { return z.File == "" && !z.Secondary() }

// DefaultCatalogGrace is catalog-grace's default.
const DefaultCatalogGrace = time.Hour

// Grace is how long a member zone that left the consumed catalog z
// keeps its stored copy: catalog-grace, else DefaultCatalogGrace.
func (z *Zone) Grace() time.Duration {
	if z.CatalogGrace == nil {
		return DefaultCatalogGrace
	}
	return z.CatalogGrace.Duration
}

// DefaultCatalogMaxMembers is catalog-max-members' default: generous
// (a producer's catalog of ten thousand zones is served), yet a bound
// on the secondary zones a producer can make a consumer serve.
const DefaultCatalogMaxMembers = 10000

// MaxMembers is the most members the consumed catalog z may list:
// catalog-max-members, else DefaultCatalogMaxMembers.
func (z *Zone) MaxMembers() int {
	if z.CatalogMaxMembers == nil {
		return DefaultCatalogMaxMembers
	}
	return *z.CatalogMaxMembers
}

// Catalog roles (Zone.CatalogRole).
const (
	CatalogGenerate  = "generate"
	CatalogInterpret = "interpret"
)

// Key is one [[key]] table: a TSIG key (RFC 8945).
type Key struct {
	// Name is the key's name, a domain name, as both sides write it in
	// the TSIG record; Parse makes it lowercase and fully qualified.
	Name string `toml:"name"`
	// Algorithm is hmac-sha256, hmac-sha384, hmac-sha512, hmac-sha224
	// or hmac-sha1.
	Algorithm string `toml:"algorithm"`
	// Secret is the shared secret, base64.
	Secret string `toml:"secret"`
}

// Remote is one [[remote]] table: another server, by name.
type Remote struct {
	// Name is how zones and ACLs refer to the remote.
	Name string `toml:"name"`
	// Address lists its addresses, "ip:port" or "ip" (port 53).
	Address []string `toml:"address" want:"a list of \"ip:port\" strings"`
	// Key, when set, names the [[key]] the remote signs with: what Tern
	// sends it is signed, and an ACL naming the remote wants requests
	// signed with it.
	Key string `toml:"key"`
}

// ACL is one [[acl]] table: a rule allowing requests that match it.
type ACL struct {
	// Name is how zones refer to the rule.
	Name string `toml:"name"`
	// Remote lists remotes whose addresses (and key, when they have
	// one) the rule allows.
	Remote []string `toml:"remote" want:"a list of remote names"`
	// Address lists allowed source addresses and prefixes
	// ("192.0.2.1", "192.0.2.0/24", "2001:db8::/32").
	Address []string `toml:"address" want:"a list of address or prefix strings"`
	// Key lists the [[key]]s of which one must sign the request; none:
	// the request must be unsigned.
	Key []string `toml:"key" want:"a list of key names"`
	// Action lists what the rule allows: transfer, notify, update,
	// query (a zone with query rules answers only the clients they
	// allow, by address; the resolver's allow may name such rules).
	Action []string `toml:"action" want:"a list of actions (transfer, notify, update, query)"`
}

// Signing is a zone's [zone.signing] table: the automatic signing policy.
// Durations left out take the defaults of dnssec.DefaultPolicy.
type Signing struct {
	// KeyDir holds the zone's keys, rollover state and last signed copy;
	// relative paths are resolved against the config file's directory.
	KeyDir string `toml:"key-dir"`
	// Algorithm is "ecdsap256sha256" (the default) or "ed25519".
	Algorithm string `toml:"algorithm"`
	// NSEC3 selects NSEC3 (RFC 5155, RFC 9276 parameters) over NSEC;
	// OptOut leaves unsigned delegations out of the NSEC3 chain.
	NSEC3  bool `toml:"nsec3"`
	OptOut bool `toml:"opt-out"`
	// Key lifetimes (0 or absent: the default), signature validity and
	// how long before expiry signatures are refreshed.
	ZSKLifetime       Duration `toml:"zsk-lifetime"`
	KSKLifetime       Duration `toml:"ksk-lifetime"`
	SignatureValidity Duration `toml:"signature-validity"`
	SignatureRefresh  Duration `toml:"signature-refresh"`
	// PropagationDelay and ParentDelay feed the rollover timing of RFC
	// 7583: the time for a change to reach every secondary, and for a
	// CDS to become a DS served by the parent.
	PropagationDelay Duration `toml:"propagation-delay"`
	ParentDelay      Duration `toml:"parent-delay"`
	// SerialPolicy is how each new signed version gets its SOA serial:
	// "increment" (the default) or "unixtime".
	SerialPolicy string `toml:"serial-policy"`
}

// Duration is a time.Duration written in TOML as a string such as "10s".
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration string ("1m30s").
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(string(text))
	if err != nil {
		return &durationError{text: string(text), err: err}
	}
	d.Duration = v
	return nil
}

// durationError is a bad Duration, reported the same way by the key
// checks and by UnmarshalText.
type durationError struct {
	text string
	err  error
}

func (e *durationError) Error() string {
	return fmt.Sprintf("invalid duration %q (want a string such as \"10s\"): %v", e.text, e.err)
}

func (e *durationError) Unwrap() error { return e.err }

// MarshalText renders the duration in the form UnmarshalText accepts.
func (d Duration) MarshalText() ([]byte, error) {
	return []byte(d.Duration.String()), nil
}

// Default returns the built-in configuration: listening on 127.0.0.1:5300,
// CHAOS identity on, and no zones.
func Default() *Config {
	id, err := os.Hostname()
	if err != nil || id == "" {
		id = fallbackID
	}
	// A fresh bool per call: the decoder writes through this pointer, so
	// sharing it between configs would leak settings across them.
	chaos := true
	return &Config{
		Server: Server{
			Listen:            []string{defaultListen},
			Workers:           0,
			UDPPayload:        defaultUDPPayload,
			ResponseCache:     defaultResponseCache,
			TCPIdleTimeout:    Duration{defaultTCPIdleTimeout},
			TCPMaxConnections: defaultTCPMaxConnections,
			TCPMaxPerClient:   defaultTCPMaxPerClient,
			TCPMaxPipelined:   defaultTCPMaxPipelined,
			TCPIOTimeout:      Duration{defaultTCPIOTimeout},
			LogLevel:          defaultLogLevel,
			LogFormat:         "text",
			DataDir:           defaultDataDirectory(),
			JournalMaxSize:    defaultJournalMaxSize,
			Control:           defaultControlSocket(),
		},
		Identity: Identity{
			Enabled: &chaos,
			ID:      id,
			Version: defaultVersion,
		},
		Cookies: defaultCookies(),
	}
}

// defaultDataDirectory is server.data-dir's default: the state directory
// systemd gives the service (StateDirectory=; the first of several), else
// /var/lib/tern.
func defaultDataDirectory() string {
	if d, _, _ := strings.Cut(os.Getenv("STATE_DIRECTORY"), ":"); d != "" {
		return d
	}
	return defaultDataDir
}

// defaultControlSocket is server.control's default: control.sock in the
// runtime directory systemd gives the service (RuntimeDirectory=; the
// first of several), else /run/tern/control.sock.
func defaultControlSocket() string {
	if d, _, _ := strings.Cut(os.Getenv("RUNTIME_DIRECTORY"), ":"); d != "" {
		return filepath.Join(d, "control.sock")
	}
	return defaultControl
}

// JournalMaxBytes is the bound of zone z's journal in octets: its own
// journal-max-size, else the server's (both checked by Validate).
func (c *Config) JournalMaxBytes(z *Zone) int64 {
	s := z.JournalMaxSize
	if s == "" {
		s = c.Server.JournalMaxSize
	}
	n, _ := parseSize(s)
	return n
}

// Load reads the file at path, parses it strictly, applies defaults for
// absent keys and validates the result.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	return Parse(path, data)
}

// Parse is Load on an in-memory document. path is used in error messages
// and as the base for relative zone file paths; it may be "".
func Parse(path string, data []byte) (*Config, error) {
	c := Default()
	c.Path = path
	// Passes, so that one run reports every mistake of the file: TOML
	// syntax first (nothing else can be read past a syntax error), then
	// every unknown key and wrongly typed value, named by key and line
	// (go-toml's decoder stops at the first type error and names Go struct
	// fields), then the decoding proper, which no longer fails but on what
	// the checks missed (DisallowUnknownFields stays as a guard should the
	// key check and the structs ever disagree), then the key lines for
	// Validate's messages.
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, decodeError(displayPath(path), err)
	}
	if err := checkKeys(displayPath(path), data); err != nil {
		return nil, err
	}
	if _, ok := doc["dnstap"]; ok {
		c.Dnstap = &Dnstap{Versions: defaultDnstapVersions} // an empty table too, for Validate to name
	}
	if _, ok := doc["resolver"]; ok {
		// Decoded on top of its defaults, as the rest is.
		c.Resolver = DefaultResolver()
	}
	if _, ok := doc["rrl"]; ok {
		c.RRL = defaultRRL()
	}
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	// Decoding on top of Default keeps defaults for absent keys while still
	// honouring explicit zero values such as version = "".
	if err := dec.Decode(c); err != nil {
		return nil, decodeError(displayPath(path), err)
	}
	if cap(c.Zones) > len(c.Zones) {
		// Decoding grew the list as append does, up to twice its
		// length; the running configuration keeps it, and the zone
		// manager points into it: 224 bytes a spare slot.
		c.Zones = slices.Clone(c.Zones)
	}
	c.lines = make(map[string]int)
	zoneLines := indexLines(data, c.lines)
	for i := range c.Zones {
		z := &c.Zones[i]
		if i < len(zoneLines) {
			z.Line = zoneLines[i]
		}
		if z.Origin != "" {
			z.Origin = canonicalOrigin(z.Origin)
		}
		if z.Catalog != "" {
			z.Catalog = canonicalOrigin(z.Catalog)
		}
		if sg := z.Signing; sg != nil && sg.KeyDir != "" && path != "" && !filepath.IsAbs(sg.KeyDir) {
			sg.KeyDir = filepath.Join(filepath.Dir(path), sg.KeyDir)
		}
		if z.File != "" && path != "" && !filepath.IsAbs(z.File) && !z.Secondary() {
			z.File = filepath.Join(filepath.Dir(path), z.File)
		}
	}
	if c.Server.DataDir != "" && path != "" && !filepath.IsAbs(c.Server.DataDir) {
		c.Server.DataDir = filepath.Join(filepath.Dir(path), c.Server.DataDir)
	}
	for i := range c.Zones {
		// A secondary's file is Tern's own state, kept with the journals.
		if z := &c.Zones[i]; z.Secondary() && c.Server.DataDir != "" {
			if z.File == "" && z.Origin != "" {
				z.File = z.Origin + "zone"
			}
			if z.File != "" && !filepath.IsAbs(z.File) {
				z.File = filepath.Join(c.Server.DataDir, z.File)
			}
		}
	}
	if c.Server.Control != "" && path != "" && !filepath.IsAbs(c.Server.Control) {
		c.Server.Control = filepath.Join(filepath.Dir(path), c.Server.Control)
	}
	if c.Resolver != nil {
		c.Resolver.resolvePaths(path)
	}
	if f := &c.Cookies.SecretFile; *f != "" && path != "" && !filepath.IsAbs(*f) {
		*f = filepath.Join(filepath.Dir(path), *f)
	}
	if d := c.Dnstap; d != nil && path != "" {
		for _, f := range []*string{&d.File, &d.Socket} {
			if *f != "" && !filepath.IsAbs(*f) {
				*f = filepath.Join(filepath.Dir(path), *f)
			}
		}
	}
	// Key names are domain names: "xfr", "XFR." and "xfr." are one key.
	for i := range c.Keys {
		if k := &c.Keys[i]; k.Name != "" {
			k.Name = canonicalOrigin(k.Name)
		}
	}
	for i := range c.Remotes {
		if r := &c.Remotes[i]; r.Key != "" {
			r.Key = canonicalOrigin(r.Key)
		}
	}
	for i := range c.ACLs {
		for j, k := range c.ACLs[i].Key {
			if k != "" {
				c.ACLs[i].Key[j] = canonicalOrigin(k)
			}
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeError turns go-toml's syntax and decoding errors into
// "path:line:col: message" errors.
func decodeError(path string, err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		if k := de.Key(); len(k) > 0 {
			msg = strings.Join(k, ".") + ": " + msg
		}
		return fmt.Errorf("%s:%d:%d: %s", path, line, col, msg)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// displayPath names the configuration in messages when it has no file.
func displayPath(path string) string {
	if path == "" {
		return "<config>"
	}
	return path
}

// canonicalOrigin lowercases a zone name and makes it fully qualified, so
// that "Example.COM" and "example.com." compare equal.
func canonicalOrigin(origin string) string {
	return dns.Fqdn(strings.ToLower(origin))
}

// ChaosEnabled reports whether CHAOS TXT identity queries are answered; it
// applies the default (true) when the key was never set or c is nil.
func (c *Config) ChaosEnabled() bool {
	return c == nil || c.Identity.Enabled == nil || *c.Identity.Enabled
}

// NSIDBytes returns the NSID option payload: nil when NSID is off, the hex
// decoding for "0x"-prefixed values, and the raw text otherwise.
func (id Identity) NSIDBytes() ([]byte, error) {
	if id.NSID == "" {
		return nil, nil
	}
	rest, isHex := strings.CutPrefix(id.NSID, "0x")
	if !isHex {
		rest, isHex = strings.CutPrefix(id.NSID, "0X")
	}
	if !isHex {
		return []byte(id.NSID), nil
	}
	if rest == "" {
		return nil, errors.New("nsid: empty hex value after 0x")
	}
	b, err := hex.DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("nsid: invalid hex %q: %w", id.NSID, err)
	}
	return b, nil
}
