package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tern-dns/tern/internal/dnstest/signed"
)

// traceFirst is the first address of this file's signed hierarchy (its
// block of the address plan: 127.0.0.230-239).
const traceFirst = 230

// TestResolveTraceChain: tern resolve --validate --trace prints the chain
// of trust as the validator built it, over the signed hierarchy: for a
// secure name each zone cut's DS set, the DS matched to its DNSKEY, the
// DNSKEY set's RRSIG verified, the answer's RRSIG verified and the
// result; for an insecure delegation the NSEC that proves no DS; for a
// bogus signature the RRSIG that does not verify and the EDE. The lines
// asserted are the decisions, not the timings.
func TestResolveTraceChain(t *testing.T) {
	tr := signed.Start(t, traceFirst)
	for _, tc := range []struct {
		name string
		code int
		want []string
	}{
		{"www.good.nsec", 0, []string{
			";; dnssec answer: validating www.good.nsec. A",
			";; dnssec .: trust anchor: DS ",
			";; dnssec .: DNSKEY set: ",
			"matches DNSKEY",
			";; dnssec .: RRSIG . DNSKEY by . key ",
			";; dnssec .: keys secure: ",
			";; dnssec nsec.: zone cut; DS set from .: ",
			";; dnssec .: RRSIG nsec. DS by . key ",
			";; dnssec nsec.: RRSIG nsec. DNSKEY by nsec. key ",
			";; dnssec good.nsec.: zone cut; DS set from nsec.: ",
			"alg ECDSAP256SHA256 digest SHA256: matches DNSKEY ",
			";; dnssec good.nsec.: www.good.nsec. A: checked with the keys of good.nsec.",
			";; dnssec good.nsec.: RRSIG www.good.nsec. A by good.nsec. key ",
			";; dnssec answer: www.good.nsec. A: secure",
			";; dnssec answer: result for www.good.nsec. A: secure (",
			";; security: secure (AD)",
		}},
		{"www.unsigned.nsec", 0, []string{
			";; dnssec unsigned.nsec.: no DS; proof from nsec.: unsigned.nsec.",
			";; dnssec nsec.: RRSIG unsigned.nsec. NSEC by nsec. key ",
			";; dnssec unsigned.nsec.: no DS proved (its NSEC/NSEC3 shows NS without SOA): insecure, unsigned delegation from nsec.",
			";; dnssec answer: result for www.unsigned.nsec. A: insecure: unsigned.nsec.: unsigned delegation from nsec.",
		}},
		{"www.badsig.nsec", 1, []string{
			";; dnssec badsig.nsec.: keys secure: ",
			": does not verify",
			";; dnssec answer: result for www.badsig.nsec. A: bogus, EDE 6 (DNSSEC Bogus): www.badsig.nsec. A: signature by key ",
			";; security: bogus, EDE 6",
		}},
		{"www.expired.nsec", 1, []string{
			";; dnssec expired.nsec.: RRSIG expired.nsec. DNSKEY by expired.nsec. key ",
			": outside its validity window at ",
			";; dnssec answer: result for www.expired.nsec. A: bogus, EDE 7 (Signature Expired)",
		}},
		{"www.wrongds.nsec", 1, []string{
			": matches no DNSKEY",
			";; dnssec wrongds.nsec.: keys bogus, EDE 9 (DNSKEY Missing)",
		}},
	} {
		args := []string{"resolve", tc.name, "--root-hints", tr.HintsFile, "--port", fmt.Sprint(tr.Port), "--validate", "--trust-anchor", tr.AnchorFile, "--trace"}
		code, out, errs := runT(args...)
		if code != tc.code {
			t.Errorf("%s: code %d, want %d; stderr %s", tc.name, code, tc.code, errs)
		}
		// The validator's lines appear in the order they were decided:
		// each wanted line after the one before it.
		rest := out
		for _, w := range tc.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("%s: no %q (in order) in the trace", tc.name, w)
				continue
			}
			rest = rest[i+len(w):]
		}
		if t.Failed() || testing.Verbose() {
			t.Logf("%s:\n%s", tc.name, out)
		}
	}
}
