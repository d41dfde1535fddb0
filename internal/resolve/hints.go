package resolve

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"math"
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
	// Port is the port the server is asked on; 0 means Options.Port.
	Port uint16
	// Recursive marks a forwarder: asked with RD=1, its answers trusted
	// without AA, no referral expected from it.
	Recursive bool
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
	var rrs []dns.RR
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		if ns, ok := rr.(*dns.NS); ok && ns.Hdr.Name != "." {
			return nil, fmt.Errorf("%s: NS record of %s: root hints hold the root's NS records only", file, ns.Hdr.Name)
		}
		rrs = append(rrs, rr)
	}
	if err := zp.Err(); err != nil {
		return nil, err
	}
	servers, _ := rootServers(rrs, rrs, "root hint")
	if len(servers) == 0 {
		return nil, fmt.Errorf("%s: no root server with an address (want NS records of . and A/AAAA records of their names)", file)
	}
	return servers, nil
}

// rootServers returns the root servers named by the NS records of the
// root in ns, with their addresses from the A and AAAA records in addrs
// (those of other names ignored), the servers without an address left
// out, and the smallest TTL of the records used.
func rootServers(ns, addrs []dns.RR, why string) ([]Server, uint32) {
	var servers []Server
	index := map[string]int{}
	ttl := uint32(math.MaxUint32)
	for _, rr := range ns {
		ns, ok := rr.(*dns.NS)
		if !ok || ns.Hdr.Name != "." {
			continue
		}
		name := canonical(ns.Ns)
		if _, dup := index[name]; !dup {
			index[name] = len(servers)
			servers = append(servers, Server{Name: name, Why: why})
		}
		ttl = min(ttl, ns.Hdr.Ttl)
	}
	for _, rr := range addrs {
		i, ok := index[canonical(rr.Header().Name)]
		if a, isAddr := rrAddr(rr); ok && isAddr {
			servers[i].Addrs = append(servers[i].Addrs, a)
			ttl = min(ttl, rr.Header().Ttl)
		}
	}
	n := 0
	for _, s := range servers {
		if len(s.Addrs) > 0 {
			servers[n] = s
			n++
		}
	}
	return servers[:n], ttl
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

// NotIANARoot returns the first of the root hints servers that is not one
// of the IANA root servers, as "NAME ADDRESS", or "" when every one is: a
// name under root-servers.net. at public addresses only (a copy of
// named.root, old or new, such as Debian's /usr/share/dns/root.hints).
// The embedded root trust anchors validate only that root; a private root
// (a test hierarchy, an internal namespace) needs its own.
func NotIANARoot(servers []Server) string {
	for _, s := range servers {
		for _, a := range s.Addrs {
			a = a.Unmap()
			if !subDomain("root-servers.net.", s.Name) || !a.IsGlobalUnicast() || a.IsPrivate() {
				return s.Name + " " + a.String()
			}
		}
	}
	return ""
}
