package resolve

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"net/netip"
	"os"

	"github.com/miekg/dns"
)

// rootHints is IANA's named.root (https://www.internic.net/domain/named.root),
// as Debian's dns-root-data ships it.
//
//go:embed root.hints
var rootHints []byte

// Server is a name server of a zone: its name and the addresses known for
// it (none when it must be resolved first).
type Server struct {
	Name  string
	Addrs []netip.Addr
	// Why says where the addresses came from (root hint, glue from a
	// zone), for the trace.
	Why string
}

// RootHints returns the embedded IANA root hints.
func RootHints() []Server {
	s, err := ParseHints(bytes.NewReader(rootHints), "root.hints (embedded)")
	if err != nil {
		// The embedded file is checked by TestRootHints.
		return nil
	}
	return s
}

// LoadHints reads root hints from a file in zone-file form (root.hints,
// named.root): NS records of the root and the A and AAAA records of
// their names.
func LoadHints(path string) ([]Server, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseHints(f, path)
}

// ParseHints reads root hints in zone-file form from r; file names it in
// errors, which carry file:line.
func ParseHints(r io.Reader, file string) ([]Server, error) {
	zp := dns.NewZoneParser(r, ".", file)
	var servers []Server
	index := map[string]int{}
	var addrs []dns.RR
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		switch rr := rr.(type) {
		case *dns.NS:
			if rr.Hdr.Name != "." {
				return nil, fmt.Errorf("%s: NS record of %s: root hints hold the root's NS records only", file, rr.Hdr.Name)
			}
			name := dns.CanonicalName(rr.Ns)
			if _, dup := index[name]; !dup {
				index[name] = len(servers)
				servers = append(servers, Server{Name: name, Why: "root hint"})
			}
		case *dns.A, *dns.AAAA:
			addrs = append(addrs, rr)
		}
	}
	if err := zp.Err(); err != nil {
		return nil, err
	}
	for _, rr := range addrs {
		i, ok := index[dns.CanonicalName(rr.Header().Name)]
		if !ok {
			continue // an address of a name that is not a root server
		}
		if a, ok := rrAddr(rr); ok {
			servers[i].Addrs = append(servers[i].Addrs, a)
		}
	}
	n := 0
	for _, s := range servers {
		if len(s.Addrs) > 0 {
			servers[n] = s
			n++
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no root server with an address (want NS records of . and A/AAAA records of their names)", file)
	}
	return servers[:n], nil
}

// rrAddr returns the address of an A or AAAA record.
func rrAddr(rr dns.RR) (netip.Addr, bool) {
	switch rr := rr.(type) {
	case *dns.A:
		a, ok := netip.AddrFromSlice(rr.A.To4())
		return a, ok
	case *dns.AAAA:
		a, ok := netip.AddrFromSlice(rr.AAAA.To16())
		return a, ok
	}
	return netip.Addr{}, false
}
