package signed_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/cache"
	"github.com/tern-dns/tern/internal/dnstest/hierarchy"
	"github.com/tern-dns/tern/internal/dnstest/signed"
	"github.com/tern-dns/tern/internal/resolve"
	"github.com/tern-dns/tern/internal/upstream"
	"github.com/tern-dns/tern/internal/wire"
)

// The address plan's block for this package is 127.0.0.200-229: the
// hierarchy from 200, the real root zone (root_test.go) on 227, Tern's
// served resolver on 228, Unbound on 229.
const first = 200

var (
	servedAddr  = netip.AddrFrom4([4]byte{127, 0, 0, 228})
	unboundAddr = netip.AddrFrom4([4]byte{127, 0, 0, 229})
)

// noEDE marks a response without an Extended DNS Error.
const noEDE = -1

// validationCase is a question to a validating resolver over the signed
// hierarchy and what its response must say on the wire.
type validationCase struct {
	what  string
	name  string
	qtype uint16
	// cd sets the Checking Disabled bit in the query.
	cd    bool
	rcode int
	ad    bool
	ede   int
	// answer is the number of answer records (RRSIGs aside) of a
	// NOERROR response.
	answer int
}

// cases cover issue 12's list: each good configuration and each broken
// zone of zones.go, asked with DO.
var cases = []validationCase{
	{"ECDSA P-256 answer", "www.good.nsec.", dns.TypeA, false, dns.RcodeSuccess, true, noEDE, 1},
	{"NSEC NXDOMAIN", "nx.good.nsec.", dns.TypeA, false, dns.RcodeNameError, true, noEDE, 0},
	{"NSEC NODATA", "www.good.nsec.", dns.TypeAAAA, false, dns.RcodeSuccess, true, noEDE, 0},
	{"NSEC wildcard answer with its proof", "x.wild.good.nsec.", dns.TypeA, false, dns.RcodeSuccess, true, noEDE, 1},
	{"RSA/SHA-256 answer", "www.rsa.nsec.", dns.TypeA, false, dns.RcodeSuccess, true, noEDE, 1},
	{"NSEC3 NXDOMAIN", "nx.rsa.nsec.", dns.TypeA, false, dns.RcodeNameError, true, noEDE, 0},
	{"NSEC3 wildcard answer with its proof", "x.wild.rsa.nsec.", dns.TypeA, false, dns.RcodeSuccess, true, noEDE, 1},
	{"Ed25519 answer below an opt-out TLD", "www.ed.nsec3.", dns.TypeA, false, dns.RcodeSuccess, true, noEDE, 1},
	{"NSEC3 opt-out TLD NXDOMAIN", "nx.nsec3.", dns.TypeA, false, dns.RcodeNameError, false, noEDE, 0},
	{"ECDSA P-384 answer, NSEC3", "www.p384.nsec3.", dns.TypeA, false, dns.RcodeSuccess, true, noEDE, 1},
	{"ECDSA P-384 NSEC3 NODATA", "www.p384.nsec3.", dns.TypeAAAA, false, dns.RcodeSuccess, true, noEDE, 0},
	{"RSA/SHA-512 answer", "www.rsa512.nsec.", dns.TypeA, false, dns.RcodeSuccess, true, noEDE, 1},
	{"DS of an unsupported digest type alone: insecure", "www.gost.nsec.", dns.TypeA, false, dns.RcodeSuccess, false, noEDE, 1},
	{"unsigned delegation, NSEC proof of no DS", "www.unsigned.nsec.", dns.TypeA, false, dns.RcodeSuccess, false, noEDE, 1},
	{"unsigned delegation, opt-out NSEC3", "www.optout.nsec3.", dns.TypeA, false, dns.RcodeSuccess, false, noEDE, 1},
	{"unsupported algorithm: insecure", "www.unsupported.nsec.", dns.TypeA, false, dns.RcodeSuccess, false, noEDE, 1},
	{"bad signature", "www.badsig.nsec.", dns.TypeA, false, dns.RcodeServerFailure, false, wire.EDEDNSSECBogus, 0},
	{"bad signature, CD: the data unvalidated", "www.badsig.nsec.", dns.TypeA, true, dns.RcodeSuccess, false, noEDE, 1},
	{"expired signatures", "www.expired.nsec.", dns.TypeA, false, dns.RcodeServerFailure, false, wire.EDESignatureExpired, 0},
	{"signatures not yet valid", "www.future.nsec.", dns.TypeA, false, dns.RcodeServerFailure, false, wire.EDESignatureNotYetValid, 0},
	{"RRSIG missing", "www.nosig.nsec.", dns.TypeA, false, dns.RcodeServerFailure, false, wire.EDERRSIGsMissing, 0},
	{"DS matching no DNSKEY", "www.wrongds.nsec.", dns.TypeA, false, dns.RcodeServerFailure, false, wire.EDEDNSKEYMissing, 0},
	{"DNSKEY without the Zone Key bit", "www.nozonebit.nsec.", dns.TypeA, false, dns.RcodeServerFailure, false, wire.EDENoZoneKeyBitSet, 0},
	{"NXDOMAIN without NSEC", "nx.nonsec.nsec.", dns.TypeA, false, dns.RcodeServerFailure, false, wire.EDENSECMissing, 0},
	{"wildcard answer without its proof", "x.wild.nonsec.nsec.", dns.TypeA, false, dns.RcodeServerFailure, false, wire.EDENSECMissing, 0},
	{"positive answer of the zone without NSEC", "www.nonsec.nsec.", dns.TypeA, false, dns.RcodeSuccess, true, noEDE, 1},
	{"NSEC3 records with the wrong salt", "nx.badnsec3.nsec.", dns.TypeA, false, dns.RcodeServerFailure, false, wire.EDENSECMissing, 0},
	{"NSEC3 500 iterations NXDOMAIN", "nx.iter500.nsec.", dns.TypeA, false, dns.RcodeServerFailure, false, wire.EDEUnsupportedNSEC3Iterations, 0},
	{"NSEC3 500 iterations, positive answer", "www.iter500.nsec.", dns.TypeA, false, dns.RcodeSuccess, true, noEDE, 1},
	{"KSK with a colliding key tag", "www.collide.nsec.", dns.TypeA, false, dns.RcodeSuccess, true, noEDE, 1},
	{"DNSKEY RRset with two keys of one tag", "collide.nsec.", dns.TypeDNSKEY, false, dns.RcodeSuccess, true, noEDE, 2},
}

// check returns how m differs from what c asks.
func (c validationCase) check(m *dns.Msg) []string {
	var errs []string
	if m.Rcode != c.rcode {
		errs = append(errs, fmt.Sprintf("rcode %s, want %s", dns.RcodeToString[m.Rcode], dns.RcodeToString[c.rcode]))
	}
	if m.AuthenticatedData != c.ad {
		errs = append(errs, fmt.Sprintf("AD %v, want %v", m.AuthenticatedData, c.ad))
	}
	if got := edeOf(m); got != c.ede {
		errs = append(errs, fmt.Sprintf("EDE %d, want %d", got, c.ede))
	}
	if n := answers(m); m.Rcode == dns.RcodeSuccess && n != c.answer {
		errs = append(errs, fmt.Sprintf("%d answer records, want %d", n, c.answer))
	}
	return errs
}

// edeOf is the INFO-CODE of m's first Extended DNS Error, or noEDE.
func edeOf(m *dns.Msg) int {
	if o := m.IsEdns0(); o != nil {
		for _, e := range o.Option {
			if e, ok := e.(*dns.EDNS0_EDE); ok {
				return int(e.InfoCode)
			}
		}
	}
	return noEDE
}

// answers counts m's answer records other than RRSIGs.
func answers(m *dns.Msg) int {
	n := 0
	for _, rr := range m.Answer {
		if rr.Header().Rrtype != dns.TypeRRSIG {
			n++
		}
	}
	return n
}

// ask sends c's question with EDNS, DO and c's CD bit.
func ask(addr string, c validationCase) (*dns.Msg, error) {
	m := new(dns.Msg).SetQuestion(c.name, c.qtype)
	m.SetEdns0(1232, true)
	m.CheckingDisabled = c.cd
	cl := &dns.Client{Timeout: 20 * time.Second}
	r, _, err := cl.Exchange(m, addr)
	if err == nil && r.Truncated {
		cl.Net = "tcp"
		r, _, err = cl.Exchange(m, addr)
	}
	return r, err
}

// startServed serves Tern's resolver with validation on, the
// hierarchy's root anchor and hints, as `tern serve` with [resolver]
// validation = true and trust-anchor does.
func startServed(t *testing.T, tr *signed.Tree) string {
	t.Helper()
	hints, err := resolve.LoadHints(tr.HintsFile)
	if err != nil {
		t.Fatal(err)
	}
	r := resolve.New(&upstream.Client{}, resolve.Options{Hints: hints, Port: tr.Port,
		Cache: cache.New(cache.Options{}), Validate: true, Anchors: tr.Anchors})
	return hierarchy.StartRecursor(t, netip.AddrPortFrom(servedAddr, tr.Port), r)
}

// startUnbound runs Unbound as a validating resolver over the
// hierarchy with the same trust anchor file: validator and iterator
// modules, no aggressive NSEC (each case stands alone), its failures
// logged. It returns the address to ask, or why it cannot run.
func startUnbound(t *testing.T, tr *signed.Tree) (addr, skip string) {
	return hierarchy.StartUnbound(t, unboundAddr, tr.Port, tr.HintsFile,
		`module-config: "validator iterator"`, fmt.Sprintf("trust-anchor-file: %q", tr.AnchorFile),
		"val-log-level: 2", "aggressive-nsec: no")
}

// TestSignedHierarchy asks every case of Tern's served resolver and of
// Unbound over the same signed hierarchy with the same trust anchor:
// Tern's response must be the case's, and Unbound's the same in rcode,
// AD, EDE and answer count, except where unboundDifferences says why.
func TestSignedHierarchy(t *testing.T) {
	tr := signed.Start(t, first)
	served := startServed(t, tr)
	unbound, skip := startUnbound(t, tr)
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			m, err := ask(served, c)
			if err != nil {
				t.Fatalf("tern: %v", err)
			}
			for _, e := range c.check(m) {
				t.Errorf("tern: %s %s: %s", c.name, dns.Type(c.qtype), e)
			}
			if t.Failed() || testing.Verbose() {
				t.Logf("tern:\n%v", m)
			}
			if skip != "" {
				t.Skip(skip)
			}
			u, err := ask(unbound, c)
			if err != nil {
				t.Fatalf("unbound: %v", err)
			}
			diff := compare(u, m)
			known, listed := unboundDifferences[c.what]
			switch {
			case diff != "" && !listed:
				t.Errorf("Unbound and Tern differ: %s", diff)
			case listed && known.diff != diff:
				t.Errorf("Unbound and Tern differ otherwise than listed: %q, listed %q", diff, known.diff)
			case listed:
				seen[c.what] = true
			}
			if t.Failed() || testing.Verbose() {
				t.Logf("unbound:\n%v", u)
			}
		})
	}
	if skip == "" {
		for k := range unboundDifferences {
			if !seen[k] {
				t.Errorf("listed difference %q not seen", k)
			}
		}
	}
}

// compare says how Unbound's response u and Tern's m differ in rcode,
// AD, EDE code and answer records, or "".
func compare(u, m *dns.Msg) string {
	var d []string
	if u.Rcode != m.Rcode {
		d = append(d, fmt.Sprintf("rcode %s / %s", dns.RcodeToString[u.Rcode], dns.RcodeToString[m.Rcode]))
	}
	if u.AuthenticatedData != m.AuthenticatedData {
		d = append(d, fmt.Sprintf("AD %v / %v", u.AuthenticatedData, m.AuthenticatedData))
	}
	if a, b := edeOf(u), edeOf(m); a != b {
		d = append(d, fmt.Sprintf("EDE %d / %d", a, b))
	}
	if a, b := answerSet(u), answerSet(m); !slices.Equal(a, b) {
		d = append(d, fmt.Sprintf("answer %q / %q", a, b))
	}
	return strings.Join(d, "; ")
}

// answerSet is m's answer records other than RRSIGs, TTLs left out,
// sorted.
func answerSet(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		if rr.Header().Rrtype == dns.TypeRRSIG {
			continue
		}
		h := *rr.Header()
		h.Ttl = 0
		c := dns.Copy(rr)
		*c.Header() = h
		out = append(out, c.String())
	}
	slices.Sort(out)
	return out
}

// unboundDifference is a reviewed difference: the compare text it must
// match and the RFC text that makes Tern's answer right.
type unboundDifference struct {
	diff, why string
}

// unboundDifferences are the reviewed differences, by case.
var unboundDifferences = map[string]unboundDifference{
	"wildcard answer without its proof": {
		diff: "EDE 6 / 12",
		why: "RFC 8914 §4.13: NSEC Missing (12), 'the requested data was missing and a covering NSEC or NSEC3 " +
			"was not provided': a wildcard answer needs the NSEC covering the name asked (RFC 4035 §5.3.4), and " +
			"none came; Unbound 1.17 says DNSSEC Bogus (6), true but less precise.",
	},
	"NSEC3 records with the wrong salt": {
		diff: "EDE 6 / 12",
		why: "RFC 5155 §8.3: the closest encloser is found by hashing with the NSEC3 records' own parameters; " +
			"hashed so, no record matches or covers the names, so no covering NSEC3 was provided (RFC 8914 §4.13, " +
			"NSEC Missing). Unbound 1.17 says DNSSEC Bogus (6).",
	},
	"NSEC3 500 iterations NXDOMAIN": {
		diff: "rcode NXDOMAIN / SERVFAIL; EDE -1 / 27",
		why: "RFC 9276 §3.2: validating resolvers MAY return an insecure response or SERVFAIL for NSEC3 with " +
			"iterations above their limit, with EDE 27 (Unsupported NSEC3 Iterations Value, §6) either way; " +
			"Tern follows issue 12 (above 150 bogus, as Unbound's val-nsec3-keysize-iterations maximum), Unbound 1.17 " +
			"answers insecure and sends no EDE 27 (it predates RFC 9276's code).",
	},
}
