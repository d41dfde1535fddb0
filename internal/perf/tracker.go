package perf

// slot is one entry of the outstanding-query table, indexed by DNS ID.
// Busy slots form a doubly linked list in send order, so the oldest query
// (the next to time out) is always at the head and completion is O(1).
type slot struct {
	sent       int64 // send time, ns since run start
	prev, next int32
	busy       bool
}

// minSlots is the smallest ID space per socket: IDs cycle through it, so a
// late answer to a timed-out query can only be mistaken for a new query
// after this many sends.
const minSlots = 4096

// tracker matches responses to outstanding queries on one socket by DNS ID
// and accounts for completions, rcodes, latency and timeouts. It is owned by
// a single goroutine: no locking.
type tracker struct {
	slots    []slot // one per usable ID, plus the list anchor at index sentinel
	mask     uint16 // usable IDs are 0..mask
	sentinel int32
	out      int // busy slots
	done     int // queries completed on this socket, for the start ramp
	nextID   uint16
	timeout  int64 // ns
	c        *Counters
}

// newTracker makes a tracker for at most window outstanding queries. The
// ID space is a power of two of at least 4*window and minSlots (at most
// 65536), which keeps the table small for small windows (a socket costs
// 100 KB, not 1.5 MB) while IDs still take long to come round again.
func newTracker(timeoutNs int64, c *Counters, firstID uint16, window int) *tracker {
	n := minSlots
	for n < 4*window && n < 1<<16 {
		n <<= 1
	}
	t := &tracker{slots: make([]slot, n+1), mask: uint16(n - 1), sentinel: int32(n), timeout: timeoutNs, c: c}
	t.nextID = firstID & t.mask
	t.slots[n].prev = int32(n)
	t.slots[n].next = int32(n)
	return t
}

// alloc returns a free ID. IDs are handed out sequentially so the slot
// table is walked in order (cache friendly) and a just-freed ID is not
// reused until the counter wraps, which makes late duplicates unlikely to
// be mistaken for answers. IDs allocated but never sent simply stay free.
// The caller keeps out well below 65536.
func (t *tracker) alloc() uint16 {
	for {
		id := t.nextID
		t.nextID = (t.nextID + 1) & t.mask
		if !t.slots[id].busy {
			return id
		}
	}
}

// sent marks id outstanding at time now.
func (t *tracker) sent(id uint16, now int64, size int) {
	s := &t.slots[id]
	s.sent = now
	s.busy = true
	tail := t.slots[t.sentinel].prev
	s.prev = tail
	s.next = t.sentinel
	t.slots[tail].next = int32(id)
	t.slots[t.sentinel].prev = int32(id)
	t.out++
	t.c.Sent++
	t.c.ReqBytes += uint64(size)
}

func (t *tracker) unlink(id int32) {
	s := &t.slots[id]
	t.slots[s.prev].next = s.next
	t.slots[s.next].prev = s.prev
	s.busy = false
	t.out--
}

// response accounts for one received message; it reports whether the
// message completed an outstanding query.
func (t *tracker) response(msg []byte, now int64) bool {
	if len(msg) < 12 || msg[2]&0x80 == 0 {
		t.c.Malformed++ // too short for a header, or not a response
		return false
	}
	id := int32(msg[0])<<8 | int32(msg[1])
	if id >= t.sentinel {
		t.c.Unexpected++ // never sent from this socket
		return false
	}
	s := &t.slots[id]
	if !s.busy {
		t.c.Unexpected++ // late (already timed out) or duplicate
		return false
	}
	lat := now - s.sent
	t.unlink(id)
	t.done++
	t.c.Completed++
	t.c.Rcodes[msg[3]&0x0f]++
	t.c.RespBytes += uint64(len(msg))
	t.c.Latency.Record(lat)
	return true
}

// rampStart is the window a socket starts with; it then grows by one per
// answer up to the configured window. Without the ramp, the first burst of
// -q queries lands in the server's socket buffer at once and overflows it
// (knotd with 256 outstanding drops about 60) before the server even wakes.
const rampStart = 16

// window is the outstanding limit now, given the configured maximum.
func (t *tracker) window(max int) int {
	if t.done+rampStart < max {
		return t.done + rampStart
	}
	return max
}

// expire counts queries sent at or before now-timeout as lost and returns
// how many it expired.
func (t *tracker) expire(now int64) int {
	n := 0
	for {
		h := t.slots[t.sentinel].next
		if h == t.sentinel || t.slots[h].sent+t.timeout > now {
			return n
		}
		t.unlink(h)
		t.c.Lost++
		n++
	}
}

// nextExpiry is when the oldest outstanding query times out.
func (t *tracker) nextExpiry() (int64, bool) {
	h := t.slots[t.sentinel].next
	if h == t.sentinel {
		return 0, false
	}
	return t.slots[h].sent + t.timeout, true
}

// abandon counts everything still outstanding as lost (run interrupted).
func (t *tracker) abandon() {
	for {
		h := t.slots[t.sentinel].next
		if h == t.sentinel {
			return
		}
		t.unlink(h)
		t.c.Lost++
	}
}
