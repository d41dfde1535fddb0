package main

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The resolver benchmark's local DNS hierarchy (benchtool resgen):
//
//	.                      root process, on the block's first address
//	alpha. bravo. ...      TLD process (also servers., which names the root servers)
//	domNNNN.<tld>.         SLD process: the second-level zones, the hosting
//	dnsN.<tld>.            providers' zones and the wildcard zone
//	wild.<tld>.
//
// Each level is its own `tern serve`, so that a server asked for a name
// below its zones refers instead of answering from a zone it happens to
// hold too: the resolvers must walk root -> TLD -> SLD as on the internet.
// Half of the second-level zones have in-bailiwick name servers with glue;
// the other half use a hosting provider's servers (ns1.dnsN.<tld>.), names
// in another zone that the resolver must resolve first. One host in ten is
// a CNAME to the www of another zone. Every TTL is a day, so that nothing
// expires during a run.
//
// Addresses (all loopback, port 53, as the resolvers ask):
//
//	base+0        root
//	base+1..4     TLD servers
//	base+5..20    SLD servers (two per zone, spread over the sixteen)
//	base+21       the wildcard zone's server
const (
	resTTL      = 86400
	resTLDAddrs = 4
	resSLDAddrs = 16
	// resAddrs is how many addresses from the base the hierarchy uses.
	resAddrs     = 1 + resTLDAddrs + resSLDAddrs + 1
	resProviders = 8
	resWildZone  = "wild.alpha."
)

var resTLDs = []string{"alpha.", "bravo.", "charlie.", "delta."}

// resHierarchy is the generated hierarchy's shape.
type resHierarchy struct {
	base  netip.Addr
	zones int // second-level zones
	hosts int // hosts per second-level zone
}

func (h resHierarchy) addr(i int) string {
	a := h.base
	for ; i > 0; i-- {
		a = a.Next()
	}
	return a.String()
}

func (h resHierarchy) rootAddr() string     { return h.addr(0) }
func (h resHierarchy) tldAddr(k int) string { return h.addr(1 + k%resTLDAddrs) }
func (h resHierarchy) sldAddr(k int) string { return h.addr(1 + resTLDAddrs + k%resSLDAddrs) }
func (h resHierarchy) wildAddr() string     { return h.addr(resAddrs - 1) }

func sldName(i int) string { return fmt.Sprintf("dom%04d.%s", i, resTLDs[i%len(resTLDs)]) }

func providerName(p int) string { return fmt.Sprintf("dns%d.%s", p, resTLDs[(p+1)%len(resTLDs)]) }

// hostLabel is the j-th host of a zone: a few common names, then hNN.
func hostLabel(j int) string {
	common := []string{"www", "mail", "api", "cdn", "shop", "blog"}
	if j < len(common) {
		return common[j]
	}
	return fmt.Sprintf("h%d", j)
}

// question is one resolver query: a host of a zone and a type. Hosts j%4==3
// are asked for AAAA, the others for A (every host has both).
func (h resHierarchy) question(q int) string {
	zone, j := q/h.hosts, q%h.hosts
	t := "A"
	if j%4 == 3 {
		t = "AAAA"
	}
	return hostLabel(j) + "." + sldName(zone) + " " + t
}

// zoneHead is a zone's SOA and NS records.
func zoneHead(origin string, ns ...string) []string {
	mbox := "hostmaster." + origin
	if origin == "." {
		mbox = "hostmaster.root.servers."
	}
	l := []string{
		"$ORIGIN " + origin,
		fmt.Sprintf("$TTL %d", resTTL),
		"@ IN SOA " + ns[0] + " " + mbox + " 2026120301 7200 3600 1209600 3600",
	}
	for _, n := range ns {
		l = append(l, "@ IN NS "+n)
	}
	return l
}

// authority is one `tern serve` of the hierarchy: its addresses and zones.
type authority struct {
	name  string
	addrs []string
	zones [][2]string // origin, file
}

// writeArgs writes the authority's tern serve arguments, one a line, for
// run.sh to read with mapfile.
func (a authority) writeArgs(dir string) error {
	var l []string
	for _, ad := range a.addrs {
		l = append(l, "--listen", ad+":53")
	}
	for _, z := range a.zones {
		l = append(l, "--zone", z[0]+"="+z[1])
	}
	return writeLines(filepath.Join(dir, "auth-"+a.name+".args"), l)
}

// runResGen writes the resolver benchmark's data into -out: the zone files
// of the hierarchy (zones/), one argument file per authority process
// (auth-root.args, auth-tld.args, auth-sld.args), root.hints, and the query
// files res-hits.txt (-hits distinct questions), res-mix.txt (-mix
// questions drawn Zipf-distributed, exponent -s, over all zones x hosts
// questions) and res-cold.txt (-cold names under the wildcard zone; run.sh
// writes a fresh one for every run with `benchtool coldq`). It also writes
// auth-probes.txt: per authority, an address and a name it answers with AA.
func runResGen(args []string) error {
	fs := flag.NewFlagSet("resgen", flag.ExitOnError)
	out := fs.String("out", "", "output directory")
	base := fs.String("base", "127.0.0.40", "first loopback address of the hierarchy (it takes 22)")
	zones := fs.Int("zones", 1000, "second-level zones")
	hosts := fs.Int("hosts", 100, "hosts per second-level zone")
	hits := fs.Int("hits", 10000, "questions in the cache-hit query file")
	mix := fs.Int("mix", 500000, "questions in the Zipf mix query file")
	s := fs.Float64("s", 1.0, "Zipf exponent of the mix")
	cold := fs.Int("cold", 100000, "names in the first cold query file")
	sign := fs.Bool("sign", false, "sign every zone (ECDSA P-256, NSEC) and write the root's DS to root.key, the validating resolvers' trust anchor")
	fs.Parse(args)
	if *out == "" {
		return fmt.Errorf("-out is required")
	}
	b, err := netip.ParseAddr(*base)
	if err != nil || !b.Is4() || !b.IsLoopback() {
		return fmt.Errorf("-base %q: want an IPv4 loopback address", *base)
	}
	last := b
	for i := 1; i < resAddrs; i++ {
		last = last.Next()
	}
	if !last.IsLoopback() {
		return fmt.Errorf("-base %s: the hierarchy's %d addresses leave 127.0.0.0/8", b, resAddrs)
	}
	if *zones < 1 || *hosts < 1 || *hits < 1 || *mix < 1 || *cold < 1 || *s <= 0 {
		return fmt.Errorf("-zones, -hosts, -hits, -mix, -cold and -s must be positive")
	}
	if *hits > *zones**hosts {
		return fmt.Errorf("-hits %d: only %d distinct questions", *hits, *zones**hosts)
	}
	h := resHierarchy{base: b, zones: *zones, hosts: *hosts}
	abs, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	zdir := filepath.Join(abs, "zones")
	if err := os.MkdirAll(zdir, 0o755); err != nil {
		return err
	}
	auths, err := h.writeZones(zdir)
	if err != nil {
		return err
	}
	if *sign {
		if err := signHierarchy(auths, anchorPath(abs), time.Now()); err != nil {
			return err
		}
	}
	var probes []string
	for _, a := range auths {
		if err := a.writeArgs(abs); err != nil {
			return err
		}
		probes = append(probes, a.name+" "+a.addrs[0]+":53 "+a.zones[0][0])
	}
	if err := writeLines(filepath.Join(abs, "auth-probes.txt"), probes); err != nil {
		return err
	}
	if err := writeLines(filepath.Join(abs, "root.hints"), []string{
		fmt.Sprintf(".                 3600000 IN NS a.root.servers."),
		fmt.Sprintf("a.root.servers.   3600000 IN A  %s", h.rootAddr()),
	}); err != nil {
		return err
	}
	return h.writeQueries(abs, *hits, *mix, *s, *cold)
}

// writeZones writes every zone file and returns the three authorities.
func (h resHierarchy) writeZones(dir string) ([]authority, error) {
	root := authority{name: "root", addrs: []string{h.rootAddr()}}
	tld := authority{name: "tld"}
	for k := 0; k < resTLDAddrs; k++ {
		tld.addrs = append(tld.addrs, h.tldAddr(k))
	}
	sld := authority{name: "sld"}
	for k := 0; k < resSLDAddrs; k++ {
		sld.addrs = append(sld.addrs, h.sldAddr(k))
	}
	sld.addrs = append(sld.addrs, h.wildAddr())
	write := func(a *authority, origin string, lines []string) error {
		f := filepath.Join(dir, strings.TrimSuffix(origin, ".")+".zone")
		if origin == "." {
			f = filepath.Join(dir, "root.zone")
		}
		a.zones = append(a.zones, [2]string{origin, f})
		return writeLines(f, lines)
	}

	// The root: the TLDs and servers., with glue.
	rz := zoneHead(".", "a.root.servers.")
	rz = append(rz, "a.root.servers. IN A "+h.rootAddr(),
		"servers. IN NS ns1.servers.", "ns1.servers. IN A "+h.tldAddr(0))
	tldZones := map[string][]string{}
	for k, t := range resTLDs {
		ns1, ns2 := "ns1."+t, "ns2."+t
		rz = append(rz, t+" IN NS "+ns1, t+" IN NS "+ns2,
			ns1+" IN A "+h.tldAddr(k), ns2+" IN A "+h.tldAddr(k+1))
		tldZones[t] = append(zoneHead(t, ns1, ns2), ns1+" IN A "+h.tldAddr(k), ns2+" IN A "+h.tldAddr(k+1))
	}
	if err := write(&root, ".", rz); err != nil {
		return nil, err
	}
	sz := append(zoneHead("servers.", "ns1.servers."), "ns1 IN A "+h.tldAddr(0), "a.root IN A "+h.rootAddr())
	if err := write(&tld, "servers.", sz); err != nil {
		return nil, err
	}

	// Hosting providers: zones of their own, delegated with glue; their
	// name servers serve the odd-numbered second-level zones.
	for p := 0; p < resProviders; p++ {
		pn := providerName(p)
		t := pn[strings.IndexByte(pn, '.')+1:]
		a1, a2 := h.sldAddr(2*p), h.sldAddr(2*p+1)
		tldZones[t] = append(tldZones[t], pn+" IN NS ns1."+pn, pn+" IN NS ns2."+pn,
			"ns1."+pn+" IN A "+a1, "ns2."+pn+" IN A "+a2)
		if err := write(&sld, pn, append(zoneHead(pn, "ns1."+pn, "ns2."+pn),
			"ns1 IN A "+a1, "ns2 IN A "+a2, "www IN A 10.254.0."+fmt.Sprint(p+1))); err != nil {
			return nil, err
		}
	}

	// The wildcard zone for cold resolution: every name under it exists.
	w := resWildZone
	wt := w[strings.IndexByte(w, '.')+1:]
	tldZones[wt] = append(tldZones[wt], w+" IN NS ns1."+w, "ns1."+w+" IN A "+h.wildAddr())
	if err := write(&sld, w, append(zoneHead(w, "ns1."+w), "ns1 IN A "+h.wildAddr(), "* IN A 10.255.0.1")); err != nil {
		return nil, err
	}

	// The second-level zones.
	for i := 0; i < h.zones; i++ {
		z := sldName(i)
		t := resTLDs[i%len(resTLDs)]
		var ns []string
		if i%2 == 0 {
			ns = []string{"ns1." + z, "ns2." + z}
			tldZones[t] = append(tldZones[t], z+" IN NS "+ns[0], z+" IN NS "+ns[1],
				ns[0]+" IN A "+h.sldAddr(i), ns[1]+" IN A "+h.sldAddr(i+1))
		} else {
			p := providerName((i / 2) % resProviders)
			ns = []string{"ns1." + p, "ns2." + p}
			tldZones[t] = append(tldZones[t], z+" IN NS "+ns[0], z+" IN NS "+ns[1])
		}
		lines := zoneHead(z, ns...)
		if i%2 == 0 {
			lines = append(lines, "ns1 IN A "+h.sldAddr(i), "ns2 IN A "+h.sldAddr(i+1))
		}
		for j := 0; j < h.hosts; j++ {
			l := hostLabel(j)
			if j%10 == 9 {
				// a CNAME to another zone's www, as sites point at CDNs
				lines = append(lines, l+" IN CNAME www."+sldName((i*7+j)%h.zones))
				continue
			}
			n := i*h.hosts + j
			lines = append(lines,
				fmt.Sprintf("%s IN A 10.%d.%d.%d", l, (n>>16)&255, (n>>8)&255, n&255),
				fmt.Sprintf("%s IN AAAA 2001:db8:%x::%x", l, i, j))
		}
		if err := write(&sld, z, lines); err != nil {
			return nil, err
		}
	}
	for _, t := range resTLDs {
		if err := write(&tld, t, tldZones[t]); err != nil {
			return nil, err
		}
	}
	return []authority{root, tld, sld}, nil
}

// writeQueries writes res-hits.txt, res-mix.txt and res-cold.txt.
func (h resHierarchy) writeQueries(dir string, hits, mix int, s float64, cold int) error {
	n := h.zones * h.hosts
	// Popularity ranks: a fixed random permutation of the questions, so
	// that the popular names are spread over the zones.
	r := rng(11)
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := r.intn(i + 1)
		perm[i], perm[j] = perm[j], perm[i]
	}
	hq := make([]string, hits)
	for i := range hq {
		hq[i] = h.question(perm[i])
	}
	if err := writeLines(filepath.Join(dir, "res-hits.txt"), hq); err != nil {
		return err
	}
	mq := make([]string, mix)
	z := newZipf(n, s)
	zr := rng(12)
	for i := range mq {
		mq[i] = h.question(perm[z.draw(&zr)])
	}
	if err := writeLines(filepath.Join(dir, "res-mix.txt"), mq); err != nil {
		return err
	}
	return writeCold(filepath.Join(dir, "res-cold.txt"), cold, 13)
}

// writeCold writes n queries for distinct random names under the wildcard
// zone; seed picks the names, so that runs with different seeds share none.
func writeCold(path string, n int, seed uint64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rng(seed * 0x9e3779b97f4a7c15)
	for i := 0; i < n; i++ {
		// the index makes every name of the file distinct; the random part
		// makes files of different seeds distinct
		fmt.Fprintf(w, "c%x-%012x.%s A\n", i, r.next()&0xffffffffffff, resWildZone)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runColdQ writes a fresh cold query file: benchtool coldq -out F -n N -seed S.
func runColdQ(args []string) error {
	fs := flag.NewFlagSet("coldq", flag.ExitOnError)
	out := fs.String("out", "", "query file to write")
	n := fs.Int("n", 100000, "queries")
	seed := fs.Uint64("seed", 1, "seed (use a new one for every run)")
	fs.Parse(args)
	if *out == "" || *n < 1 {
		return fmt.Errorf("-out and a positive -n are required")
	}
	return writeCold(*out, *n, *seed)
}

// zipf draws ranks 0..n-1 with probability proportional to 1/(rank+1)^s,
// by binary search in the cumulative weights (math/rand's Zipf wants s > 1;
// real query traffic is close to s = 1).
type zipf struct{ cdf []float64 }

func newZipf(n int, s float64) zipf {
	cdf := make([]float64, n)
	sum := 0.0
	for i := range cdf {
		sum += math.Pow(float64(i+1), -s)
		cdf[i] = sum
	}
	for i := range cdf {
		cdf[i] /= sum
	}
	return zipf{cdf}
}

func (z zipf) draw(r *rng) int {
	u := float64(r.next()>>11) / (1 << 53)
	i := sort.SearchFloat64s(z.cdf, u)
	if i >= len(z.cdf) {
		i = len(z.cdf) - 1
	}
	return i
}
