package dnssec

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// genZone returns a zone of about n records with the mix of
// bench/sign/gen-zone.sh: hosts, MX, TXT, names under empty
// non-terminals, unsigned and signed delegations with glue.
func genZone(tb testing.TB, n int) []dns.RR {
	var b strings.Builder
	b.WriteString("$ORIGIN bench.test.\n$TTL 3600\n@ IN SOA ns1 hostmaster 2026010101 7200 3600 1209600 300\n@ NS ns1\n@ NS ns2\nns1 A 192.0.2.1\nns2 A 192.0.2.2\n")
	for c, i := 5, 0; c < n; {
		i++
		switch m := i % 20; {
		case m < 12:
			fmt.Fprintf(&b, "h%d A 10.%d.%d.%d\n", i, i/65536%256, i/256%256, i%256)
			c++
		case m < 14:
			fmt.Fprintf(&b, "h%d AAAA 2001:db8::%x\nh%d TXT \"v=spf1 -all %d\"\n", i, i%65536, i, i)
			c += 2
		case m < 16:
			fmt.Fprintf(&b, "m%d MX 10 h%d\n", i, i-1)
			c++
		case m < 18:
			fmt.Fprintf(&b, "a.e%d A 10.1.%d.%d\n", i, i/256%256, i%256)
			c++
		case m == 18:
			fmt.Fprintf(&b, "d%d NS ns.d%d\nns.d%d A 10.2.%d.%d\n", i, i, i, i/256%256, i%256)
			c += 2
		default:
			fmt.Fprintf(&b, "s%d NS ns.s%d\ns%d DS %d 13 2 %064x\nns.s%d A 10.3.%d.%d\n", i, i, i, i%65536, i, i, i/256%256, i%256)
			c += 3
		}
	}
	return parseZone(tb, b.String(), "bench.test.")
}

func benchKeys(b *testing.B, alg uint8) []*Key {
	keys, _, err := EnsureKeys(b.TempDir(), "bench.test.", alg, 3600, testNow)
	if err != nil {
		b.Fatal(err)
	}
	return keys
}

// BenchmarkSignZone signs a 10,000-record zone; records/s is the figure
// to compare with other signers.
func BenchmarkSignZone(b *testing.B) {
	rrs := genZone(b, 10000)
	for _, alg := range []uint8{dns.ECDSAP256SHA256, dns.ED25519} {
		keys := benchKeys(b, alg)
		for _, nsec3 := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/nsec3=%v", dns.AlgorithmToString[alg], nsec3), func(b *testing.B) {
				for b.Loop() {
					if _, err := SignZone(context.Background(), rrs, "bench.test.", keys, Options{NSEC3: nsec3}, testNow); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(rrs)*b.N)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

// BenchmarkResignUnchanged measures an incremental re-sign where nothing
// changed: no signature should be computed.
func BenchmarkResignUnchanged(b *testing.B) {
	rrs := genZone(b, 10000)
	keys := benchKeys(b, dns.ECDSAP256SHA256)
	prev, err := SignZone(context.Background(), rrs, "bench.test.", keys, Options{}, testNow)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, st, err := Resign(context.Background(), prev, rrs, "bench.test.", keys, Options{}, testNow); err != nil || st.Signed != 0 {
			b.Fatal(err, st)
		}
	}
}

// BenchmarkSameRecords measures the comparison by which ZoneSigner.Sign
// tells whether a re-signed 10,000-record zone is a new version, to set
// against BenchmarkResignUnchanged, the re-signing it follows.
func BenchmarkSameRecords(b *testing.B) {
	rrs := genZone(b, 10000)
	keys := benchKeys(b, dns.ECDSAP256SHA256)
	prev, err := SignZone(context.Background(), rrs, "bench.test.", keys, Options{}, testNow)
	if err != nil {
		b.Fatal(err)
	}
	again, _, err := Resign(context.Background(), prev, rrs, "bench.test.", keys, Options{}, testNow)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if !sameRecords(prev, again) {
			b.Fatal("an unchanged zone compared as changed")
		}
	}
}
