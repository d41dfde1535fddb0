package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest/signed"
	"github.com/tern-dns/tern/internal/wire"
)

// signedServeFirst is the first address of the signed hierarchy of this
// file's tests (127.0.0.234-237, in the block 127.0.0.230-239 that
// trace_test.go starts at); signedServeResolver the resolver's.
const (
	signedServeFirst    = 234
	signedServeResolver = "127.0.0.238"
)

// serveSigned runs tern serve over a signed hierarchy: a config with
// [resolver] root-hints at the hierarchy's root and extra lines, and the
// flags --resolver and --trust-anchor (the root's DS). It returns the
// resolver's address.
func serveSigned(t *testing.T, extra string) string {
	t.Helper()
	tr := signed.Start(t, signedServeFirst)
	if tr.Port != 53 {
		t.Skipf("the hierarchy is on port %d, not 53 (not root): a resolver asks authorities on 53", tr.Port)
	}
	// A copy: a writable anchor file is managed (RFC 5011) and rewritten.
	anchor, err := os.ReadFile(tr.AnchorFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := "[server]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n[resolver]\nlisten = [\"" + signedServeResolver + ":0\"]\nroot-hints = \"" + tr.HintsFile + "\"\nquery-loopback = true\n" + extra
	for name, text := range map[string]string{"tern.toml": cfg, "root.ds": string(anchor)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addr, _ := serveUntil(t, regexp.MustCompile(`resolving on (127\.0\.0\.238:\d+)`), "-c", filepath.Join(dir, "tern.toml"),
		"--resolver", signedServeResolver+":0", "--trust-anchor", filepath.Join(dir, "root.ds"))
	return addr
}

// askSigned asks the resolver at addr name's A records with DO and
// returns rcode, AD and the EDE code (-1 without one).
func askSigned(t *testing.T, addr, name string) (int, bool, int) {
	t.Helper()
	r := askValidating(t, addr, name, true, false)
	ede := -1
	for _, o := range r.IsEdns0().Option {
		if e, ok := o.(*dns.EDNS0_EDE); ok {
			ede = int(e.InfoCode)
		}
	}
	return r.Rcode, r.AuthenticatedData, ede
}

// signedCase is a question to the signed hierarchy and its answer.
type signedCase struct {
	name  string
	rcode int
	ad    bool
	ede   int
}

func checkSigned(t *testing.T, addr string, cases []signedCase) {
	t.Helper()
	for _, c := range cases {
		rcode, ad, ede := askSigned(t, addr, c.name)
		if rcode != c.rcode || ad != c.ad || ede != c.ede {
			t.Errorf("%s: rcode %s AD %v EDE %d, want %s AD %v EDE %d", c.name, dns.RcodeToString[rcode], ad, ede, dns.RcodeToString[c.rcode], c.ad, c.ede)
		}
	}
}

// TestServeTrustAnchorFlag: tern serve --resolver ADDR --trust-anchor
// FILE validates from FILE's anchors (the DS of the signed hierarchy's
// root, whose hints the config names; without the flag serve refuses to
// start: the embedded root anchors cannot validate another root): AD on
// a secure name, SERVFAIL with EDE 6 on a bad signature, no AD under an
// unsigned delegation.
func TestServeTrustAnchorFlag(t *testing.T) {
	addr := serveSigned(t, "")
	checkSigned(t, addr, []signedCase{
		{"www.good.nsec.", dns.RcodeSuccess, true, -1},
		{"www.badsig.nsec.", dns.RcodeServerFailure, false, int(wire.EDEDNSSECBogus)},
		{"www.unsigned.nsec.", dns.RcodeSuccess, false, -1},
	})
}

// TestServeNSEC3IterationLimits: [resolver] nsec3-max-iterations-bogus
// and max-nsec3-hash-computations-per-query reach the validator. An
// NXDOMAIN proved by NSEC3 with 500 iterations is bogus (SERVFAIL, EDE
// 27) with the defaults (150); with the bogus limit at 1000 it is
// insecure (NXDOMAIN, no AD, EDE 27 as RFC 9276 §3.2 asks: above
// nsec3-max-iterations, 50);
// with nsec3-max-iterations at 1000 too and enough hash computations it
// is secure. An NSEC3 zone of 0 iterations is secure throughout.
func TestServeNSEC3IterationLimits(t *testing.T) {
	for _, tc := range []struct {
		config string
		iter   signedCase
	}{
		{"", signedCase{"nx.iter500.nsec.", dns.RcodeServerFailure, false, int(wire.EDEUnsupportedNSEC3Iterations)}},
		{"nsec3-max-iterations-bogus = 1000\n", signedCase{"nx.iter500.nsec.", dns.RcodeNameError, false, int(wire.EDEUnsupportedNSEC3Iterations)}},
		{"nsec3-max-iterations = 1000\nnsec3-max-iterations-bogus = 1000\nmax-nsec3-hash-computations-per-query = 5000\n", signedCase{"nx.iter500.nsec.", dns.RcodeNameError, true, -1}},
	} {
		t.Run(tc.config, func(t *testing.T) {
			addr := serveSigned(t, tc.config)
			checkSigned(t, addr, []signedCase{tc.iter, {"nx.p384.nsec3.", dns.RcodeNameError, true, -1}})
		})
	}
}
