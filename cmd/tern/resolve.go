package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/upstream"
)

// runResolve is 'tern resolve NAME [TYPE]': one iterative resolution from
// the root, printed as dig prints an answer (with --dnssec as dig
// +dnssec does); with --trace every upstream query first. It exits 0 with an answer (NXDOMAIN and NODATA included),
// 1 on SERVFAIL and 2 on bad arguments.
func runResolve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tern resolve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tern resolve NAME [TYPE] [--trace] [--root-hints FILE] [--no-minimise] [-4|-6] [--0x20] [--dnssec] [--validate [--trust-anchor FILE]] [--forward ZONE=ADDR,...] [--stub ZONE=ADDR,...]")
		fs.PrintDefaults()
	}
	trace := fs.Bool("trace", false, "print every upstream query: server asked, why, what came back, glue, time; with --validate the chain of trust as it is built (DS, DNSKEY, each RRSIG checked, proofs, result)")
	hintsFile := fs.String("root-hints", "", "root hints in zone-file form (default: the embedded IANA hints)")
	port := fs.Uint("port", 53, "port the authorities are asked on (for local test hierarchies)")
	timeout := fs.Duration("timeout", resolve.DefaultLimits.Timeout, "time allowed for the whole resolution")
	noMinimise := fs.Bool("no-minimise", false, "ask every server the full name (no QNAME minimisation, RFC 9156)")
	caseRandom := fs.Bool("0x20", false, "send names in random case, accept only answers that repeat it (0x20)")
	showDNSSEC := fs.Bool("dnssec", false, "print the RRSIG, NSEC and NSEC3 records kept with the answer (dig +dnssec)")
	validate := fs.Bool("validate", false, "validate the answer with DNSSEC (RFC 4035): prints the security state, and refuses bogus data")
	anchorFile := fs.String("trust-anchor", "", "trust anchors, DS or DNSKEY records in zone-file form (default: the embedded root anchors)")
	only4 := fs.Bool("4", false, "ask servers at IPv4 addresses only")
	only6 := fs.Bool("6", false, "ask servers at IPv6 addresses only")
	var forward, stub zonesFlag
	fs.Var(&forward, "forward", "a forward zone, `ZONE=ADDR[:PORT],...`: its names asked of these resolvers with RD=1 (repeatable)")
	fs.Var(&stub, "stub", "a stub zone, `ZONE=ADDR[:PORT],...`: its names iterated from these authorities (repeatable)")
	// Flags may come after the name and type, as with dig.
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) < 1 || len(pos) > 2 || *port == 0 || *port > 65535 || (*only4 && *only6) {
		fs.Usage()
		return 2
	}
	name := dns.Fqdn(pos[0])
	if _, ok := dns.IsDomainName(name); !ok {
		fmt.Fprintf(stderr, "tern resolve: %q is not a domain name\n", pos[0])
		return 2
	}
	qtype := dns.TypeA
	if len(pos) == 2 {
		t, ok := dns.StringToType[strings.ToUpper(pos[1])]
		if !ok {
			fmt.Fprintf(stderr, "tern resolve: unknown type %q\n", pos[1])
			return 2
		}
		qtype = t
	}
	var hints []resolve.Server
	if *hintsFile != "" {
		var err error
		if hints, err = resolve.LoadHints(*hintsFile); err != nil {
			fmt.Fprintf(stderr, "tern resolve: %v\n", err)
			return 1
		}
	}
	opt := resolve.Options{Hints: hints, Port: uint16(*port), Limits: resolve.Limits{Timeout: *timeout}, NoMinimise: *noMinimise,
		Forward: forward, Stub: stub, NoIPv6: *only4, NoIPv4: *only6, CaseRandom: *caseRandom,
		// A cache for the run, as the served resolver has one: what one
		// step learns (an NS name's addresses) serves the next, so that
		// a CNAME chain across zones does not resolve the same name
		// server again for each link.
		Cache: cache.New(cache.Options{Size: 16 << 20})}
	if *validate {
		if opt.Anchors, err = trustAnchors(*anchorFile); err != nil {
			fmt.Fprintf(stderr, "tern resolve: trust anchor: %v\n", err)
			return 1
		}
		opt.Validate = true
	}
	if *trace {
		opt.Trace = func(s resolve.Step) { printStep(stdout, s) }
	}
	start := time.Now()
	res, err := resolve.New(&upstream.Client{}, opt).Resolve(ctx, name, qtype)
	took := time.Since(start)

	status := dns.RcodeToString[res.Rcode]
	if res.Security == cache.Bogus {
		status = dns.RcodeToString[dns.RcodeServerFailure]
	}
	fmt.Fprintf(stdout, ";; ->>HEADER<<- opcode: QUERY, status: %s\n", status)
	var e *resolve.Error
	if errors.As(err, &e) {
		code, text := e.EDE()
		fmt.Fprintf(stdout, ";; EDE: %d: %s\n;; %s\n", code, text, e)
	}
	if *validate {
		fmt.Fprintf(stdout, ";; security: %s\n", security(res))
	}
	fmt.Fprintf(stdout, "\n;; QUESTION SECTION:\n;%s\t\tIN\t%s\n", name, dns.Type(qtype))
	answer, authority := res.Answer, res.Authority
	if !*showDNSSEC {
		// As dig without +dnssec shows them (RFC 4035 §3.2.1).
		answer, authority = res.WithoutDNSSEC(qtype)
	}
	if res.Security == cache.Bogus {
		// As a validating resolver answers (RFC 4035 §5.5): no data.
		answer, authority = nil, nil
	}
	for _, sec := range []struct {
		name string
		rrs  []dns.RR
	}{{"ANSWER", answer}, {"AUTHORITY", authority}} {
		if len(sec.rrs) == 0 {
			continue
		}
		fmt.Fprintf(stdout, "\n;; %s SECTION:\n", sec.name)
		for _, rr := range sec.rrs {
			fmt.Fprintln(stdout, rr)
		}
	}
	fmt.Fprintf(stdout, "\n;; Resolution time: %d msec, %d upstream queries\n", took.Milliseconds(), res.Queries)
	if err != nil || res.Security == cache.Bogus {
		return 1
	}
	return 0
}

// security says what validation found: secure, insecure, or bogus with
// its EDE and why.
func security(res *resolve.Result) string {
	switch res.Security {
	case cache.Secure:
		return "secure (AD)"
	case cache.Insecure:
		return "insecure: " + res.Why
	case cache.Bogus:
		return fmt.Sprintf("bogus, EDE %d (%s): %s", res.EDE, dns.ExtendedErrorCodeToString[res.EDE], res.Why)
	}
	return "not validated"
}

// printStep prints one upstream query of a trace, indented by the depth of
// the NS-name resolution it belongs to.
func printStep(w io.Writer, s resolve.Step) {
	ind := strings.Repeat("  ", s.Depth)
	if c := s.Check; c != nil {
		// A decision of DNSSEC validation, as it was made.
		zone := c.Zone
		if zone == "" {
			zone = "answer"
		}
		fmt.Fprintf(w, ";; %sdnssec %s: %s\n", ind, zone, c.Text)
		return
	}
	why := s.Why
	if s.Recursive {
		why += "; RD=1"
	}
	if s.Minimisation != "" {
		why += "; " + s.Minimisation
	}
	fmt.Fprintf(w, ";; %s%s %s -> %s (%s) for zone %s [%s]: %s in %v\n", ind, s.Question.Name, dns.Type(s.Question.Qtype),
		s.ServerName, s.Server, s.Zone, why, s.Outcome, s.Took.Round(10*time.Microsecond))
	if len(s.Passed) > 0 {
		fmt.Fprintf(w, ";; %s   passed over: %s\n", ind, strings.Join(s.Passed, "; "))
	}
	if s.Selection != "" {
		fmt.Fprintf(w, ";; %s   chosen: %s; waited up to %v\n", ind, s.Selection, s.Timeout.Round(time.Millisecond))
	}
	if len(s.GlueUsed) > 0 {
		fmt.Fprintf(w, ";; %s   glue used: %s\n", ind, strings.Join(s.GlueUsed, ", "))
	}
	if len(s.GlueIgnored) > 0 {
		fmt.Fprintf(w, ";; %s   glue ignored (out of bailiwick): %s\n", ind, strings.Join(s.GlueIgnored, ", "))
	}
	if s.Dropped > 0 {
		fmt.Fprintf(w, ";; %s   %d records dropped (out of bailiwick)\n", ind, s.Dropped)
	}
}

// zonesFlag is a repeatable flag of forward or stub zones, each
// ZONE=ADDR[:PORT],... (port 53 when not given; IPv6 addresses with a
// port in brackets).
type zonesFlag []resolve.Zone

func (z *zonesFlag) String() string {
	var s []string
	for _, zone := range *z {
		s = append(s, fmt.Sprint(zone))
	}
	return strings.Join(s, " ")
}

func (z *zonesFlag) Set(v string) error {
	name, list, ok := strings.Cut(v, "=")
	if _, isName := dns.IsDomainName(name); !ok || !isName || list == "" {
		return fmt.Errorf("%q: want ZONE=ADDR[:PORT],...", v)
	}
	zone := resolve.Zone{Name: dns.Fqdn(name)}
	for _, a := range strings.Split(list, ",") {
		ap, err := netip.ParseAddrPort(a)
		if err != nil {
			addr, err2 := netip.ParseAddr(a)
			if err2 != nil {
				return fmt.Errorf("%q: %q is not an address or address:port", v, a)
			}
			ap = netip.AddrPortFrom(addr, 53)
		}
		zone.Servers = append(zone.Servers, ap)
	}
	*z = append(*z, zone)
	return nil
}
