package dnstest

import (
	"strings"
	"testing"

	"github.com/tern-dns/tern/internal/zone"
)

// ExampleZone is the small zone the tests of the serving side (server,
// cookie, rrl) answer from: an apex with its SOA and NS, the name
// server's address and www. Tests needing more append records in the
// zone's own origin.
const ExampleZone = `$ORIGIN example.test.
$TTL 300
@ SOA ns1 host 1 2 3 4 60
@ NS ns1
ns1 A 192.0.2.1
www A 192.0.2.80
`

// Zone compiles text, in zone file syntax, as the zone origin; t fails
// on an error.
func Zone(t testing.TB, origin, text string) *zone.Zone {
	t.Helper()
	z, err := zone.Read(strings.NewReader(text), "test.zone", origin)
	if err != nil {
		t.Fatal(err)
	}
	return z
}
