package auth

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/zone"
)

// unavailableResponder serves example.test. loaded, and placeholders for
// its child zone child.example.test. and for broken.test., as zonedb
// publishes configured zones whose files failed to load.
func unavailableResponder(t testing.TB) *Responder {
	t.Helper()
	parent, err := zone.Load("testdata/example.test.zone", "example.test.")
	if err != nil {
		t.Fatal(err)
	}
	zs := []*zone.Zone{parent}
	for _, origin := range []string{"child.example.test", "Broken.Test."} {
		p, err := zone.Placeholder(origin)
		if err != nil {
			t.Fatal(err)
		}
		zs = append(zs, p)
	}
	return New(zone.NewSet(zs...), Options{NSID: []byte("n")})
}

// TestUnavailableZone: every query for a name in a configured zone that
// could not be loaded is SERVFAIL without AA and without records (the
// OPT record when the query had one), over UDP and TCP, with and without
// DO, through Answer, the response cache and the batch path alike; the
// parent zone still answers the DS at the failed child's apex, and its
// own names.
func TestUnavailableZone(t *testing.T) {
	r := unavailableResponder(t)
	servfail := expect{rcode: dns.RcodeServerFailure}
	for _, tc := range []struct {
		name  string
		qtype uint16
		want  expect
	}{
		{"broken.test.", dns.TypeSOA, servfail},
		{"www.broken.test.", dns.TypeA, servfail},
		{"deep.below.BROKEN.test.", dns.TypeANY, servfail},
		{"child.example.test.", dns.TypeNS, servfail},
		{"www.child.example.test.", dns.TypeA, servfail},
		// RFC 4035 §3.1.4.1: the DS is the parent's, which is loaded.
		{"child.example.test.", dns.TypeDS, expect{aa: true, authority: []string{soaNeg}}},
		{"www.example.test.", dns.TypeA, expect{aa: true, answer: []string{"www.example.test. 3600 IN A 192.0.2.80"}}},
		{"other.test.", dns.TypeA, expect{rcode: dns.RcodeRefused}},
	} {
		for _, tcp := range []bool{false, true} {
			for _, edns := range []int{0, 1, 2} { // none, EDNS, EDNS+DO
				m := query(tc.name, tc.qtype)
				if edns > 0 {
					m.SetEdns0(1232, edns == 2)
				}
				t.Run(fmt.Sprintf("%s %s tcp=%v edns=%d", dns.TypeToString[tc.qtype], tc.name, tcp, edns), func(t *testing.T) {
					resp := ask(t, r, m, tcp)
					check(t, resp, tc.want)
					if (resp.IsEdns0() != nil) != (edns > 0) {
						t.Errorf("EDNS %d: OPT in response %v", edns, resp.IsEdns0() != nil)
					}
					if resp.RecursionAvailable {
						t.Error("RA set")
					}
					// RFC 8914: EDE 24 (Invalid Data), no EXTRA-TEXT,
					// on the SERVFAIL when the query had EDNS, as
					// Knot 3.2 answers it.
					var ede []*dns.EDNS0_EDE
					if o := resp.IsEdns0(); o != nil {
						for _, e := range o.Option {
							if e, ok := e.(*dns.EDNS0_EDE); ok {
								ede = append(ede, e)
							}
						}
					}
					wantEDE := 0
					if edns > 0 && tc.want.rcode == dns.RcodeServerFailure {
						wantEDE = 1
					}
					if len(ede) != wantEDE {
						t.Fatalf("EDE options %v, want %d", ede, wantEDE)
					}
					for _, e := range ede {
						if e.InfoCode != dns.ExtendedErrorCodeInvalidData || e.ExtraText != "" {
							t.Errorf("EDE %d %q, want 24 without EXTRA-TEXT", e.InfoCode, e.ExtraText)
						}
					}
				})
			}
		}
	}
}

// TestUnavailableZoneAheadAndCache: the batch path and the response cache
// give the same bytes as Answer for a placeholder zone, and answering it
// allocates nothing.
func TestUnavailableZoneAheadAndCache(t *testing.T) {
	r := unavailableResponder(t)
	m := query("www.broken.test.", dns.TypeA)
	m.SetEdns0(1232, true)
	pkt, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	var plain, batch Scratch
	batch.UseCache(NewCache(DefaultCacheSize))
	out1 := make([]byte, 0, BufferSize)
	out2 := make([]byte, 0, BufferSize)
	want := r.Answer(&plain, pkt, out1, false)
	// The OPT record ends with the EDE option: code 15, length 2, 24.
	if ede := []byte{0, 15, 0, 2, 0, 24}; !bytes.HasSuffix(want, ede) {
		t.Fatalf("Answer % x does not end with EDE % x", want, ede)
	}
	var a Ahead
	for round := 0; round < 3; round++ { // the third round is a cache hit
		r.Start(&batch, &a, pkt)
		for range Steps {
			r.Step(&batch, &a)
		}
		if got := r.AnswerAhead(&batch, &a, pkt, out2); !bytes.Equal(got, want) {
			t.Fatalf("round %d: ahead % x\nAnswer % x", round, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { r.Answer(&plain, pkt, out1, false) }); n != 0 {
		t.Errorf("%v allocations per SERVFAIL answer", n)
	}
}
