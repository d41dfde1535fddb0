package difftest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/miekg/dns"
)

// Zone is a test zone: its origin, its file, and its records as parsed.
type Zone struct {
	Origin string
	// File is the zone file as written, possibly with $INCLUDE and
	// $GENERATE; Tern loads it directly.
	File    string
	Records []dns.RR
}

// LoadZone parses the zone file at path with origin. $GENERATE lines that
// give no TTL get the current $TTL first (see expandGenerateTTL), and
// $INCLUDE is allowed.
func LoadZone(path, origin string) (*Zone, error) {
	src, err := expandGenerateTTL(path)
	if err != nil {
		return nil, err
	}
	zp := dns.NewZoneParser(strings.NewReader(src), dns.Fqdn(origin), path)
	zp.SetIncludeAllowed(true)
	z := &Zone{Origin: dns.CanonicalName(origin), File: path}
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		z.Records = append(z.Records, rr)
	}
	if err := zp.Err(); err != nil {
		return nil, fmt.Errorf("parse zone %s from %s: %w", origin, path, err)
	}
	return z, nil
}

// expandGenerateTTL returns the text of the zone file at path with the
// current $TTL written into every $GENERATE line that has none.
//
// BIND, which defines $GENERATE, says of its optional ttl field: "If not
// specified, this is inherited using the normal TTL inheritance rules",
// that is from $TTL (RFC 2308 section 4). miekg/dns v1.1.73 instead gives
// generated records its 3600 s default. Knot and NSD cannot read
// $GENERATE at all, so they are served an expanded copy; making the TTL
// explicit here keeps that copy right, so a Tern that inherits the miekg
// behaviour shows up as a TTL difference. Only the top-level file is
// rewritten; included files are read by the parser as they are.
func expandGenerateTTL(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read zone file: %w", err)
	}
	defer f.Close()
	var out strings.Builder
	ttl := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(strings.SplitN(line, ";", 2)[0])
		switch {
		case len(fields) >= 2 && strings.EqualFold(fields[0], "$TTL"):
			ttl = fields[1]
		case len(fields) >= 5 && strings.EqualFold(fields[0], "$GENERATE") && ttl != "":
			// $GENERATE range lhs [ttl] [class] type rhs
			if _, ok := dns.StringToType[strings.ToUpper(fields[3])]; ok || strings.EqualFold(fields[3], "IN") {
				line = strings.Join(append(fields[:3:3], append([]string{ttl}, fields[3:]...)...), " ")
			}
		}
		out.WriteString(line)
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read zone file %s: %w", path, err)
	}
	return out.String(), nil
}

// WriteFlat writes z's records, one a line with no directives, to a file
// in dir and returns its path. Knot and NSD are given this copy because
// neither implements $GENERATE.
func (z *Zone) WriteFlat(dir string) (string, error) {
	var b strings.Builder
	for _, rr := range z.Records {
		if u, ok := rr.(*dns.RFC3597); ok {
			// miekg/dns renders the class of an unknown-type record as
			// CLASS1, which Knot rejects; write the RFC 3597 section 5
			// generic form with the mnemonic class instead.
			h := u.Header()
			fmt.Fprintf(&b, "%s\t%d\t%s\tTYPE%d\t\\# %d %s\n", h.Name, h.Ttl,
				dns.Class(h.Class), h.Rrtype, len(u.Rdata)/2, u.Rdata)
			continue
		}
		b.WriteString(rr.String())
		b.WriteByte('\n')
	}
	path := filepath.Join(dir, fileStem(z.Origin)+".flat.zone")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return "", fmt.Errorf("write flattened zone %s: %w", z.Origin, err)
	}
	return path, nil
}

// fileStem names files for a zone: its origin without the final dot, or
// "root" for the root zone.
func fileStem(origin string) string {
	if origin == "." {
		return "root"
	}
	return strings.TrimSuffix(origin, ".")
}

// RootZone loads testdata/root.zone, which is served on its own because
// it would answer every name the other test zones leave REFUSED.
func RootZone(dir string) (*Zone, error) {
	path, err := filepath.Abs(filepath.Join(dir, "root.zone"))
	if err != nil {
		return nil, fmt.Errorf("zone path: %w", err)
	}
	return LoadZone(path, ".")
}

// TestZones lists the zones under dir (normally testdata) that every
// server loads.
func TestZones(dir string) ([]*Zone, error) {
	var zones []*Zone
	for _, z := range []struct{ origin, file string }{
		{"example.test.", "example.test.zone"},
		{"child.example.test.", "child.example.test.zone"},
		{"gen.test.", "gen.test.zone"},
		{"big.test.", "big.test.zone"},
	} {
		path, err := filepath.Abs(filepath.Join(dir, z.file))
		if err != nil {
			return nil, fmt.Errorf("zone path: %w", err)
		}
		zone, err := LoadZone(path, z.origin)
		if err != nil {
			return nil, err
		}
		zones = append(zones, zone)
	}
	return zones, nil
}
