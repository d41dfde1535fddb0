package auth

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/acl"
	"github.com/tern-dns/tern/internal/journal"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/zone"
)

// ixfrVersion is version serial of ixfr.test: www's address is serial,
// and n names n1..nN (to make differences larger than a message).
func ixfrVersion(t *testing.T, serial uint32, n int) *zone.Zone {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "$ORIGIN ixfr.test.\n$TTL 300\n@ SOA ns1 host %d 2 3 4 60\n@ NS ns1\nns1 A 192.0.2.1\nwww A 192.0.2.%d\n", serial, serial)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "n%d TXT \"%s\"\n", i, strings.Repeat("x", 40))
	}
	z, err := zone.Read(strings.NewReader(b.String()), "ixfr.zone", "ixfr.test.")
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// journalOf is a journal (package journal, in a temporary directory)
// holding the differences between consecutive versions.
func journalOf(t *testing.T, versions ...*zone.Zone) *journal.Journal {
	t.Helper()
	j, _, err := journal.Open(journal.Path(t.TempDir(), "ixfr.test"), 1<<24)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	for i := 1; i < len(versions); i++ {
		d, err := zone.Compare(versions[i-1], versions[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Append(d, versions[i].Digest()); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

// oneJournal serves one zone's journal as Journals.
type oneJournal struct{ j *journal.Journal }

func (o oneJournal) Since(_ []byte, serial uint32) (*zone.Diff, error) { return o.j.Since(serial) }

// ixfrStream sends an IXFR from serial over TCP and returns the records
// of the stream, each in presentation form, in order, and the number of
// messages. It ends when the stream has its last SOA: the third SOA of
// the newest serial for an incremental answer, the second for a whole
// zone (RFC 1995 §4).
func ixfrStream(t *testing.T, r *Responder, serial uint32) ([]string, int) {
	t.Helper()
	var (
		mu     sync.Mutex
		rrs    []string
		msgs   int
		first  uint32
		newest int
		whole  bool
		done   = make(chan struct{})
	)
	deliver := func(msg []byte) {
		mu.Lock()
		defer mu.Unlock()
		var m dns.Msg
		if err := m.Unpack(msg); err != nil {
			t.Errorf("message %d: %v", msgs, err)
			return
		}
		msgs++
		if m.Rcode != dns.RcodeSuccess || !m.Authoritative || len(m.Question) != 1 || m.Question[0].Qtype != dns.TypeIXFR {
			t.Errorf("message %d: %v", msgs, m.MsgHdr)
		}
		for _, rr := range m.Answer {
			if len(rrs) == 1 {
				_, isSOA := rr.(*dns.SOA)
				whole = !isSOA
			}
			rrs = append(rrs, strings.Join(strings.Fields(rr.String()), " "))
			if soa, ok := rr.(*dns.SOA); ok {
				if len(rrs) == 1 {
					first = soa.Serial
				}
				if soa.Serial == first {
					newest++
				}
			}
		}
		if len(rrs) > 1 && (whole && newest == 2 || !whole && newest == 3) {
			close(done)
		}
	}
	pkt, err := ixfrQuery("ixfr.test.", serial).Pack()
	if err != nil {
		t.Fatal(err)
	}
	req := server.NewRequest(pkt, netip.MustParseAddrPort("127.0.0.1:5353"), true, deliver)
	if resp := r.NewWorker(true, 0).Answer(req, make([]byte, 0, BufferSize)); resp != nil {
		var m dns.Msg
		m.Unpack(resp)
		for _, rr := range m.Answer {
			rrs = append(rrs, strings.Join(strings.Fields(rr.String()), " "))
		}
		return rrs, 1
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the stream did not end: %d messages, %d records", msgs, len(rrs))
	}
	mu.Lock()
	defer mu.Unlock()
	return rrs, msgs
}

func soaText(serial int) string {
	return fmt.Sprintf("ixfr.test. 300 IN SOA ns1.ixfr.test. host.ixfr.test. %d 2 3 4 60", serial)
}

func wwwText(serial int) string { return fmt.Sprintf("www.ixfr.test. 300 IN A 192.0.2.%d", serial) }

// TestIXFR: an IXFR over TCP from a serial the journal holds gets the
// condensed difference to the version served (RFC 1995 §4: newest SOA,
// old SOA, deleted, new SOA, added, newest SOA), in as many messages as
// it takes; from a serial it does not hold, or when the journal does not
// lead to the version served, the whole zone; from the serial served,
// the SOA alone.
func TestIXFR(t *testing.T) {
	v1, v2, v3 := ixfrVersion(t, 1, 0), ixfrVersion(t, 2, 0), ixfrVersion(t, 3, 600)
	serve := func(z *zone.Zone, j *journal.Journal) *Responder {
		r := New(zone.NewSet(z), Options{})
		r.SetAccess(&Access{ACLs: NewACLs(map[string]acl.List{"ixfr.test.": {{Name: "any", Actions: acl.Transfer}}})})
		if j != nil {
			r.SetJournals(oneJournal{j})
		}
		return r
	}
	t.Run("from each serial", func(t *testing.T) {
		r := serve(v3, journalOf(t, v1, v2, v3))
		for _, from := range []int{1, 2} {
			got, msgs := ixfrStream(t, r, uint32(from))
			want := []string{soaText(3), soaText(from), wwwText(from), soaText(3)}
			if len(got) != len(want)+600+2 {
				t.Fatalf("from %d: %d records, want %d", from, len(got), len(want)+600+2)
			}
			// Added: the 600 TXT records, then www (canonical order).
			if strings.Join(got[:4], "\n") != strings.Join(want, "\n") || !strings.HasPrefix(got[4], "n1.ixfr.test. 300 IN TXT") ||
				got[len(got)-2] != wwwText(3) || got[len(got)-1] != soaText(3) {
				t.Errorf("from %d:\n%s\n...\n%s", from, strings.Join(got[:5], "\n"), strings.Join(got[len(got)-2:], "\n"))
			}
			if msgs < 2 {
				t.Errorf("from %d: %d messages for 30 KB of records", from, msgs)
			}
		}
	})
	t.Run("serial served: the SOA", func(t *testing.T) {
		got, _ := ixfrStream(t, serve(v3, journalOf(t, v1, v2, v3)), 3)
		if len(got) != 1 || got[0] != soaText(3) {
			t.Errorf("got %v", got)
		}
	})
	// v4 drops v3's 600 names: a difference larger than the zone.
	v4 := ixfrVersion(t, 4, 0)
	t.Run("difference larger than the zone", func(t *testing.T) {
		got, _ := ixfrStream(t, serve(v4, journalOf(t, v1, v2, v3, v4)), 3)
		// SOA, NS, A of ns1, A of www (in any order), SOA.
		if len(got) != 5 || got[0] != soaText(4) || got[4] != soaText(4) || strings.Contains(got[1], "SOA") {
			t.Errorf("got %d records:\n%s", len(got), strings.Join(got, "\n"))
		}
	})
	for _, tc := range []struct {
		name string
		r    *Responder
		from uint32
	}{
		{"serial older than the journal", serve(v3, journalOf(t, v2, v3)), 1},
		{"serial never served", serve(v3, journalOf(t, v1, v2, v3)), 0},
		{"journal behind the zone", serve(v3, journalOf(t, v1, v2)), 1},
		{"no journal", serve(v3, nil), 1},
	} {
		t.Run(tc.name+": the whole zone", func(t *testing.T) {
			got, _ := ixfrStream(t, tc.r, tc.from)
			// SOA, NS, A of ns1, A of www, 600 TXT, SOA.
			if len(got) != 605 || got[0] != soaText(3) || got[len(got)-1] != soaText(3) {
				t.Errorf("%d records: %s ... %s", len(got), got[0], got[len(got)-1])
			}
		})
	}
}

// TestTransferUnchainedNSEC3: an AXFR sends every record the zone holds,
// NSEC3 records outside a chain included (an unsigned zone's, as the
// journal's differences count them); they were left out.
func TestTransferUnchainedNSEC3(t *testing.T) {
	z, err := zone.Read(strings.NewReader("$ORIGIN ixfr.test.\n$TTL 300\n@ SOA ns1 host 1 2 3 4 60\n@ NS ns1\nns1 A 192.0.2.1\n"+
		"0madr2c2o78cqsoquiejtbeh6gfgb0ff NSEC3 1 1 0 - 2EJ4QFTQOAU0QH4P6SIV4D0OFA1M5GQM A\n"), "ixfr.zone", "ixfr.test.")
	if err != nil {
		t.Fatal(err)
	}
	r := New(zone.NewSet(z), Options{})
	r.SetAccess(&Access{ACLs: NewACLs(map[string]acl.List{"ixfr.test.": {{Name: "any", Actions: acl.Transfer}}})})
	m := query("ixfr.test.", dns.TypeAXFR)
	pkt, _ := m.Pack()
	res := transfer(t, r, pkt, "127.0.0.1:5353", true)
	got := streamRecords(t, res.stream, m.Id, "ixfr.test.", dns.TypeAXFR)
	if len(got) != 4 || !strings.Contains(strings.Join(got, "\n"), "nsec3") {
		t.Errorf("transferred:\n%s", strings.Join(got, "\n"))
	}
}
