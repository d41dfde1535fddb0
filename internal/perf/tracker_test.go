package perf

import "testing"

func respFor(id uint16, rcode byte) []byte {
	m := make([]byte, 12)
	m[0], m[1] = byte(id>>8), byte(id)
	m[2] = 0x81 // QR, RD
	m[3] = rcode
	return m
}

func TestTracker(t *testing.T) {
	var c Counters
	tr := newTracker(100, &c, 4094, 8)
	if len(tr.slots) != minSlots+1 {
		t.Fatalf("%d slots for window 8, want %d", len(tr.slots), minSlots+1)
	}
	a, b, d := tr.alloc(), tr.alloc(), tr.alloc()
	if a != 4094 || b != 4095 || d != 0 {
		t.Fatalf("IDs %d %d %d: want 4094 4095 0 (wrapping in the ID space)", a, b, d)
	}
	tr.sent(a, 10, 30)
	tr.sent(b, 20, 30)
	tr.sent(d, 30, 30)
	if tr.out != 3 || c.Sent != 3 || c.ReqBytes != 90 {
		t.Fatalf("out %d sent %d bytes %d", tr.out, c.Sent, c.ReqBytes)
	}
	// Answer the middle one: the list stays ordered a, d.
	if !tr.response(respFor(b, 3), 25) {
		t.Fatal("answer to an outstanding query not accepted")
	}
	if tr.response(respFor(b, 0), 26) || c.Unexpected != 1 {
		t.Fatal("duplicate answer accepted")
	}
	if tr.response(respFor(9000, 0), 26) || c.Unexpected != 2 {
		t.Fatal("answer with an ID outside the table accepted")
	}
	q := respFor(d, 0)
	q[2] = 0x01 // a query, not a response
	if tr.response(q, 27) || c.Malformed != 1 || tr.response([]byte{1, 2, 3}, 27) || c.Malformed != 2 {
		t.Fatal("non-response or short message accepted")
	}
	if c.Completed != 1 || c.Rcodes[3] != 1 || c.Latency.Min != 5 {
		t.Fatalf("completed %d rcode3 %d latency %d", c.Completed, c.Rcodes[3], c.Latency.Min)
	}
	if at, ok := tr.nextExpiry(); !ok || at != 110 {
		t.Fatalf("next expiry %d %v, want 110", at, ok)
	}
	if n := tr.expire(109); n != 0 {
		t.Fatalf("expired %d before the timeout", n)
	}
	if n := tr.expire(110); n != 1 || c.Lost != 1 || tr.out != 1 {
		t.Fatalf("expire(110) = %d, lost %d, out %d", n, c.Lost, tr.out)
	}
	// A late answer to the expired query is unexpected, not completed.
	if tr.response(respFor(a, 0), 111) {
		t.Fatal("late answer accepted")
	}
	tr.abandon()
	if tr.out != 0 || c.Lost != 2 || c.Sent != c.Completed+c.Lost {
		t.Fatalf("after abandon: out %d lost %d sent %d completed %d", tr.out, c.Lost, c.Sent, c.Completed)
	}
	// Freed IDs are skipped only while busy.
	tr.sent(tr.alloc(), 200, 30)
	if tr.window(1000) != rampStart+1 {
		t.Fatalf("ramp window %d, want %d", tr.window(1000), rampStart+1)
	}
}

func TestTrackerLargeWindow(t *testing.T) {
	var c Counters
	tr := newTracker(100, &c, 0, 30000)
	if len(tr.slots) != 1<<16+1 {
		t.Fatalf("%d slots for window 30000, want the full ID space", len(tr.slots))
	}
	seen := map[uint16]bool{}
	for range 30000 {
		id := tr.alloc()
		if seen[id] {
			t.Fatalf("ID %d handed out twice", id)
		}
		seen[id] = true
		tr.sent(id, 1, 30)
	}
}
