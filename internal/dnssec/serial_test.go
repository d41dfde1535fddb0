package dnssec

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
)

// serialZone is testZone with the SOA serial serial and, when extra is not
// empty, one more line.
func serialZone(t *testing.T, serial uint32, extra string) []dns.RR {
	t.Helper()
	text := strings.Replace(testZone, " 2026010101 ", fmt.Sprintf(" %d ", serial), 1)
	return parseZone(t, text+extra, "example.com.")
}

// servedSerial returns the SOA serial of a signed zone.
func servedSerial(t *testing.T, signed []dns.RR) uint32 {
	t.Helper()
	for _, rr := range signed {
		if soa, ok := rr.(*dns.SOA); ok {
			return soa.Serial
		}
	}
	t.Fatal("no SOA in the signed zone")
	return 0
}

// TestSignSerial follows a server-signed zone through the versions Knot
// gives a new serial (serial-policy increment) and those it does not:
// every version whose content differs from the previous one's gets a
// greater serial, signed (the SOA RRSIG verifies), kept in the key state
// so that a restart does not go back.
func TestSignSerial(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p := testPolicy()
	newSigner := func() *ZoneSigner {
		t.Helper()
		zs, err := NewZoneSigner(dir, "example.com.", p, Options{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		return zs
	}
	zs := newSigner()
	now := testNow
	var last []dns.RR
	sign := func(what string, rrs []dns.RR, want uint32) Stats {
		t.Helper()
		out, _, st, err := zs.Sign(ctx, rrs, now)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := servedSerial(t, out); got != want {
			t.Errorf("%s: serial %d, want %d", what, got, want)
		}
		verifyInGo(t, out, now)
		kept := "none"
		if st, err := LoadState(dir, "example.com."); err != nil {
			t.Fatalf("%s: %v", what, err)
		} else if st != nil && st.Serial != nil {
			kept = fmt.Sprint(*st.Serial)
		}
		if kept != fmt.Sprint(want) {
			t.Errorf("%s: the state file keeps serial %s, want %d", what, kept, want)
		}
		last = out
		return st
	}

	// Knot 3.2.6 (serial-policy increment) logs "loaded, serial none ->
	// 1 -> 2" for a first signing of a zone file with serial 1: the
	// file's serial names the unsigned content.
	sign("first signing", serialZone(t, 1, ""), 2)
	var report strings.Builder
	if err := WriteKeyReport(&report, dir, "example.com.", now); err != nil || !strings.Contains(report.String(), "last served SOA serial 2\n") {
		t.Errorf("key report (%v):\n%s", err, report.String())
	}

	now = now.Add(time.Hour)
	if st := sign("nothing changed", serialZone(t, 1, ""), 2); st.Signed != 0 {
		t.Errorf("nothing changed: %d signatures made", st.Signed)
	}
	sign("an RRset changed under the same file serial", serialZone(t, 1, "mail 3600 TXT \"new\"\n"), 3)
	// Glue is not signed and is in no NSEC bitmap: only the content
	// comparison sees this change.
	sign("glue changed", serialZone(t, 1, "mail 3600 TXT \"new\"\nns.insecure A 192.0.2.111\n"), 4)
	content := serialZone(t, 1, "mail 3600 TXT \"new\"\nns.insecure A 192.0.2.111\n")

	// Signatures are refreshed before they expire: a new version.
	now = now.Add(p.SignatureValidity - p.SignatureRefresh + time.Minute)
	if st := sign("signature refresh", content, 5); st.Signed == 0 {
		t.Error("signature refresh: nothing signed")
	}

	// A restart with the last signed copy, read back from its text as
	// the server does: nothing changed, nothing is signed (the CDS
	// digest's hex, upper case in the text, included) and the serial
	// stays; without it, the content cannot be compared, and the serial
	// goes on from the state file rather than from the zone file's.
	zs = newSigner()
	var copyText strings.Builder
	for _, rr := range last {
		copyText.WriteString(rr.String() + "\n")
	}
	zs.SetPrevious(parseZone(t, copyText.String(), "example.com."))
	if st := sign("restart with the signed copy", content, 5); st.Signed != 0 {
		t.Errorf("restart with the signed copy: %d signatures made", st.Signed)
	}
	zs = newSigner()
	sign("restart without the signed copy", content, 6)

	// The file's serial goes up past the served one: the file's serial
	// plus one, as Knot ("loaded, serial 2 -> 5 -> 6").
	content = serialZone(t, 100, "mail 3600 TXT \"new\"\nns.insecure A 192.0.2.111\n")
	sign("file serial raised", content, 101)
	sign("file serial raised, reloaded", content, 101)
	// It goes down: the served content does not change, nor does the
	// serial; a change then goes on from the served serial (Knot would
	// go back to the file's serial plus one).
	sign("file serial lowered", serialZone(t, 50, "mail 3600 TXT \"new\"\nns.insecure A 192.0.2.111\n"), 101)
	sign("file serial lowered, content changed", serialZone(t, 50, ""), 102)
	// It goes up to the served one: the file's version is not the signed
	// one, so the serial goes past it.
	sign("file serial up to the served one", serialZone(t, 102, ""), 103)
}

// TestSignSerialRollover: every key event (a ZSK rollover's new DNSKEY
// published, then signing, then the old one removed) and signature
// refresh gets a new serial.
func TestSignSerialRollover(t *testing.T) {
	ctx := context.Background()
	p := testPolicy()
	zs, err := NewZoneSigner(t.TempDir(), "example.com.", p, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	content := serialZone(t, 7, "")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var prev []dns.RR
	keysets := 0
	for steps := 0; now.Before(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)); steps++ {
		if steps > 100 {
			t.Fatal("too many steps")
		}
		out, next, _, err := zs.Sign(ctx, content, now)
		if err != nil {
			t.Fatal(err)
		}
		if prev != nil {
			a, b := servedSerial(t, prev), servedSerial(t, out)
			if wire.SerialCompare(b, a) <= 0 {
				t.Errorf("at %s: serial %d after %d", now, b, a)
			}
			if dnskeys(prev) != dnskeys(out) {
				keysets++
			}
		}
		prev, now = out, next
	}
	if keysets < 2 {
		t.Errorf("%d DNSKEY RRset changes, want a rollover's two", keysets)
	}
}

// dnskeys returns the DNSKEY RRset of a signed zone as text.
func dnskeys(signed []dns.RR) string {
	var b strings.Builder
	for _, rr := range signed {
		if rr.Header().Rrtype == dns.TypeDNSKEY {
			b.WriteString(rr.String())
		}
	}
	return b.String()
}

// TestSignSerialUnixtime: serial-policy unixtime serves the time of
// signing, or the previous serial plus one when that is not greater.
func TestSignSerialUnixtime(t *testing.T) {
	ctx := context.Background()
	p := testPolicy()
	p.Serial = SerialUnixtime
	zs, err := NewZoneSigner(t.TempDir(), "example.com.", p, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	now := testNow
	unix := uint32(now.Unix())
	for _, step := range []struct {
		what  string
		after time.Duration
		file  uint32
		extra string
		want  uint32
	}{
		{"first signing", 0, 1, "", unix},
		{"nothing changed", 0, 1, "", unix},
		{"a change in the same second", 0, 1, "mail TXT \"1\"\n", unix + 1},
		{"nothing changed a minute on", time.Minute, 1, "mail TXT \"1\"\n", unix + 1},
		{"a change an hour on", time.Hour, 1, "mail TXT \"2\"\n", unix + 60 + 3600},
		// A date serial (YYYYMMDDnn) is past the Unix time of 2026.
		{"a date serial", time.Hour, 2026060100, "mail TXT \"2\"\n", 2026060101},
		{"a date serial, changed", time.Hour, 2026060100, "mail TXT \"3\"\n", 2026060102},
	} {
		now = now.Add(step.after)
		out, _, _, err := zs.Sign(ctx, serialZone(t, step.file, step.extra), now)
		if err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		if got := servedSerial(t, out); got != step.want {
			t.Errorf("%s: serial %d, want %d", step.what, got, step.want)
		}
		verifyInGo(t, out, now)
	}
}

// TestNextSerial checks the serial arithmetic (RFC 1982) of nextSerial.
func TestNextSerial(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		policy     SerialPolicy
		file, last uint32
		haveLast   bool
		want       uint32
	}{
		{SerialIncrement, 1, 0, false, 2},
		{SerialIncrement, 1, 5, true, 6},
		{SerialIncrement, 9, 5, true, 10},
		{SerialIncrement, 5, 5, true, 6},
		// RFC 1982 §3.1: the serial wraps; 0 is past 2^32-1, and 1 and
		// 10 are past 2^32-1 and 2^32-10.
		{SerialIncrement, math.MaxUint32 - 5, math.MaxUint32, true, 0},
		{SerialIncrement, 1, math.MaxUint32, true, 2},
		{SerialIncrement, 10, math.MaxUint32 - 10, true, 11},
		{SerialIncrement, math.MaxUint32, 0, false, 0},
		// 2^31 apart, neither is greater: the served one goes on.
		{SerialIncrement, 1 << 31, 0, true, 1},
		{SerialUnixtime, 1, 0, false, 1_800_000_000},
		{SerialUnixtime, 1, 1_800_000_000, true, 1_800_000_001},
		{SerialUnixtime, 2_000_000_000, 5, true, 2_000_000_001},
		// 1_800_000_000 is 2027-01-15 08:00 UTC: the day's first
		// change is 2027011500, later ones count on.
		{SerialDateserial, 1, 0, false, 2027011500},
		{SerialDateserial, 2027011500, 0, false, 2027011501},
		{SerialDateserial, 2027011599, 0, false, 2027011600},
		{SerialDateserial, 2027011700, 0, false, 2027011701},
	} {
		if got := nextSerial(c.policy, c.file, c.last, c.haveLast, now); got != c.want {
			t.Errorf("%s file %d last %d (%v): %d, want %d", c.policy, c.file, c.last, c.haveLast, got, c.want)
		}
	}
}

func TestParseSerialPolicy(t *testing.T) {
	for in, want := range map[string]SerialPolicy{"": SerialIncrement, "increment": SerialIncrement, "UnixTime": SerialUnixtime, "dateserial": SerialDateserial} {
		if got, err := ParseSerialPolicy(in); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	if _, err := ParseSerialPolicy("weekly"); err == nil || !strings.Contains(err.Error(), "weekly") {
		t.Errorf("weekly: %v", err)
	}
}
