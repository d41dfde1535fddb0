package zone_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/zone"
)

// TestSmallZoneBytes: a compiled small zone (SOA, NS, two addresses, as
// a hosting provider has a hundred thousand of) keeps at most
// smallZoneBytes of heap: the arena chunks its names and wire form were
// written into are trimmed to what they hold (trimArenas; 1,617 bytes
// a zone without, 1,272 with; 1,242 once Zone fit 320 bytes). The live heap after a collection is
// exact, not a timing.
func TestSmallZoneBytes(t *testing.T) {
	const n, smallZoneBytes = 2000, 1450
	texts := make([]string, n)
	for i := range texts {
		texts[i] = fmt.Sprintf("$ORIGIN z%d.test.\n$TTL 3600\n@ SOA ns1 host 1 7200 3600 1209600 300\n@ NS ns1\nns1 A 192.0.2.1\nwww A 10.0.%d.%d\n", i, (i>>8)&255, i&255)
	}
	zs := make([]*zone.Zone, n)
	before := dnstest.LiveHeap()
	for i := range zs {
		z, err := zone.Read(strings.NewReader(texts[i]), "zone", fmt.Sprintf("z%d.test.", i))
		if err != nil {
			t.Fatal(err)
		}
		zs[i] = z
	}
	per := (dnstest.LiveHeap() - before) / n
	runtime.KeepAlive(zs)
	if per > smallZoneBytes {
		t.Errorf("%d bytes of heap per small zone, want at most %d", per, smallZoneBytes)
	}
	if testing.Verbose() {
		t.Logf("%d bytes per small zone", per)
	}
}
