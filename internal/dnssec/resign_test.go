package dnssec

import (
	"context"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestResign checks that incremental signing re-signs exactly the RRsets
// that changed (and the chain records around them) and reuses the rest.
func TestResign(t *testing.T) {
	ctx := context.Background()
	keys := testKeys(t, dns.ED25519)
	for _, nsec3 := range []bool{false, true} {
		opts := Options{NSEC3: nsec3, Validity: 14 * day, Refresh: 5 * day}
		zone := parseZone(t, testZone, "example.com.")
		full, st0, err := SignZoneStats(ctx, zone, "example.com.", keys, opts, testNow)
		if err != nil {
			t.Fatal(err)
		}

		// Nothing changed: nothing signed, output identical.
		same, st, err := Resign(ctx, full, zone, "example.com.", keys, opts, testNow.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if st.Signed != 0 || st.Reused != st0.Signed || len(same) != len(full) {
			t.Errorf("nsec3=%v unchanged: %+v (full run %+v)", nsec3, st, st0)
		}
		for i := range same {
			if same[i].String() != full[i].String() {
				t.Fatalf("unchanged re-sign differs at %d:\n%s\n%s", i, same[i], full[i])
			}
		}

		// One RRset's data changed: only it is re-signed (same types, so
		// the chain is unchanged).
		changed := parseZone(t, testZone+"mail 3600 A 192.0.2.99\n", "example.com.")
		out, st, err := Resign(ctx, full, changed, "example.com.", keys, opts, testNow.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if st.Signed != 1 {
			t.Errorf("nsec3=%v one RRset changed: signed %d, want 1", nsec3, st.Signed)
		}
		verifyInGo(t, out, testNow.Add(time.Hour))

		// A TTL change counts as a change.
		ttl := parseZone(t, testZone, "example.com.")
		for _, rr := range ttl {
			if rr.Header().Name == "mail.example.com." {
				rr.Header().Ttl = 60
			}
		}
		if _, st, _ = Resign(ctx, full, ttl, "example.com.", keys, opts, testNow); st.Signed != 1 {
			t.Errorf("nsec3=%v TTL change: signed %d, want 1", nsec3, st.Signed)
		}

		// A new name: its RRset, its own chain record and the chain
		// record(s) pointing to it are signed; nothing else.
		added := parseZone(t, testZone+"new 3600 A 192.0.2.77\n", "example.com.")
		out, st, err = Resign(ctx, full, added, "example.com.", keys, opts, testNow.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if st.Signed < 3 || st.Signed > 4 {
			t.Errorf("nsec3=%v new name: signed %d, want 3 (RRset, new and previous chain record)", nsec3, st.Signed)
		}
		verifyInGo(t, out, testNow.Add(time.Hour))

		// Past the refresh point every signature is renewed.
		later := testNow.Add(10 * day)
		out, st, err = Resign(ctx, full, zone, "example.com.", keys, opts, later)
		if err != nil {
			t.Fatal(err)
		}
		if st.Reused != 0 || st.Signed != st0.Signed {
			t.Errorf("nsec3=%v after refresh point: %+v", nsec3, st)
		}
		verifyInGo(t, out, later)

		// A different ZSK: everything but the DNSKEY RRset... which
		// changed too, so everything is signed again.
		other := testKeys(t, dns.ED25519)
		swapped := []*Key{keys[0], other[1]}
		_, st, err = Resign(ctx, full, zone, "example.com.", swapped, opts, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if st.Reused != 0 {
			t.Errorf("nsec3=%v new ZSK: reused %d signatures", nsec3, st.Reused)
		}
	}
}
