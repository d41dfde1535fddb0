// Package dnstap writes dnstap (https://dnstap.info) records of the
// queries Tern answers, the Frame Streams protobuf format BIND, Knot,
// Unbound and PowerDNS emit, to a file or a unix socket (issue 15).
//
// The query path never blocks on it and allocates nothing: each worker
// has a Ring of its own, preallocated slots into which Record copies the
// query and the answer; one writer goroutine drains every ring, encodes
// the protobuf messages and writes the frames. A full ring drops the
// record and counts it.
package dnstap

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	dt "github.com/dnstap/golang-dnstap"
	"google.golang.org/protobuf/proto"
)

// Kind says which pair of dnstap message types a record becomes.
type Kind uint8

// The kinds of record.
const (
	// Auth: AUTH_QUERY and AUTH_RESPONSE (the authoritative listeners).
	Auth Kind = iota
	// Client: CLIENT_QUERY and CLIENT_RESPONSE (the resolver's listeners).
	Client
	// ClientResponse: a CLIENT_RESPONSE alone, the answer sent after a
	// resolution (the query's CLIENT_QUERY was recorded when it came);
	// the query's bytes are not written.
	ClientResponse
)

const (
	// ringSlots is the number of records a worker's ring holds.
	ringSlots = 512
	// slotBytes bounds a record's query and answer together; larger
	// records are dropped (and counted).
	slotBytes = 4096
	// pollInterval is how often the writer drains the rings, unless
	// Options.Interval says otherwise.
	pollInterval = 5 * time.Millisecond
)

// slot is one record: the query and the answer's bytes in buf.
type slot struct {
	when       int64 // unix nanoseconds
	remote     netip.AddrPort
	local      netip.AddrPort
	qlen, rlen uint16
	tcp        bool
	kind       Kind
	buf        [slotBytes]byte
}

// Ring is one worker's queue of records: a single producer (the worker,
// Record) and a single consumer (the Tap's writer). It is not safe for
// use by several workers.
type Ring struct {
	slots *[ringSlots]slot
	// head is written by the producer only, tail by the consumer only.
	head, tail atomic.Uint64
	// dropped counts the records not queued (ring full or too large);
	// written by the producer only.
	dropped atomic.Uint64
}

// Record queues the query and its answer resp (nil: none) from remote
// to local (the server's address; a wildcard address or an invalid one
// is not recorded, its port is), received at when (unix nanoseconds),
// for the writer; it never blocks and allocates nothing. It reports
// false when the record was dropped (the ring full, or the messages
// larger than a slot).
func (r *Ring) Record(kind Kind, remote, local netip.AddrPort, tcp bool, query, resp []byte, when int64) bool {
	h := r.head.Load()
	if h-r.tail.Load() >= ringSlots || len(query)+len(resp) > slotBytes {
		r.dropped.Add(1)
		return false
	}
	s := &r.slots[h%ringSlots]
	s.when, s.remote, s.local, s.tcp, s.kind = when, remote, local, tcp, kind
	s.qlen = uint16(copy(s.buf[:], query))
	s.rlen = uint16(copy(s.buf[s.qlen:], resp))
	r.head.Store(h + 1)
	return true
}

// RecordShared is Record into t's shared ring, for goroutines without a
// ring of their own (the resolver's resolutions sending deferred
// answers): it takes a lock, held for the copy only, never for I/O.
func (t *Tap) RecordShared(kind Kind, remote, local netip.AddrPort, tcp bool, query, resp []byte, when int64) bool {
	t.sharedMu.Lock()
	defer t.sharedMu.Unlock()
	return t.shared.Record(kind, remote, local, tcp, query, resp, when)
}

// Tap is the writer of one dnstap output and the rings of the workers
// that record into it.
type Tap struct {
	w        dt.Writer
	identity []byte
	version  []byte

	mu    sync.Mutex // guards rings, free
	rings []*Ring
	free  []*Ring
	// shared is the ring of the goroutines that have none of their own
	// (RecordShared), its producers serialized by sharedMu.
	sharedMu sync.Mutex
	shared   *Ring

	every   time.Duration
	stop    chan struct{}
	done    chan struct{}
	written atomic.Uint64
	errOnce sync.Once
	err     error
}

// Options are a Tap's settings: exactly one of File and Socket.
type Options struct {
	// File is written from its start; an existing file is first
	// renamed aside (roll), unless Versions is 0 (then it is
	// truncated).
	File string
	// Versions is how many earlier files are kept beside File, as
	// FILE.0 (the last run's) to FILE.<Versions-1> (BIND's
	// dnstap-output versions, suffix increment).
	Versions int
	// Socket is a unix socket of a dnstap collector (fstrm_capture,
	// dnstap -u), spoken to with the bidirectional Frame Streams
	// handshake and reconnected to when it goes away.
	Socket string
	// Identity and Version fill the dnstap messages' fields of the same
	// names.
	Identity, Version string
	// Log receives the warning when the previous file cannot be kept
	// (renamed aside); nil: slog.Default(). The output is then written
	// over, as with Versions 0: a server that cannot keep an old log
	// still starts and logs.
	Log *slog.Logger
	// Interval is how often the writer drains the rings; 0: every 5 ms.
	// (Tests set it long, to find the rings as the workers left them.)
	Interval time.Duration
}

// Open starts a Tap writing to opt's file or socket.
func Open(opt Options) (*Tap, error) {
	var w dt.Writer
	switch {
	case opt.File != "" && opt.Socket != "":
		return nil, errors.New("dnstap: both a file and a socket")
	case opt.File != "":
		if err := roll(opt.File, opt.Versions); err != nil {
			log := opt.Log
			if log == nil {
				log = slog.Default()
			}
			log.Warn("dnstap: the previous output is written over", "file", opt.File, "err", err)
		}
		f, err := os.OpenFile(opt.File, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
		if err != nil {
			return nil, fmt.Errorf("dnstap: %w", err)
		}
		fw, err := dt.NewWriter(f, nil)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("dnstap: %s: %w", opt.File, err)
		}
		w = fileWriter{fw, f}
	case opt.Socket != "":
		w = dt.NewSocketWriter(&net.UnixAddr{Name: opt.Socket, Net: "unix"}, &dt.SocketWriterOptions{
			Timeout:       5 * time.Second,
			FlushTimeout:  time.Second,
			RetryInterval: time.Second,
			Dialer:        &net.Dialer{Timeout: 5 * time.Second},
		})
	default:
		return nil, errors.New("dnstap: neither a file nor a socket")
	}
	t := &Tap{w: w, identity: []byte(opt.Identity), version: []byte(opt.Version),
		every: opt.Interval, stop: make(chan struct{}), done: make(chan struct{})}
	if t.every <= 0 {
		t.every = pollInterval
	}
	t.shared = t.NewRing()
	go t.run()
	return t, nil
}

// roll renames an existing, non-empty regular file at path aside
// before a new one is written there, keeping versions of them: path.0
// becomes path.1 and so on, the oldest (path.<versions-1>) is
// replaced, and path becomes path.0, as BIND rolls its dnstap and log
// files (suffix increment). With versions 0 it does nothing: the file
// is truncated. Files beyond path.<versions-1> (left by a larger
// setting) are not touched.
func roll(path string, versions int) error {
	if versions <= 0 {
		return nil
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.Mode().IsRegular() || fi.Size() == 0:
		// A pipe or a device (an operator's choice of where the
		// records go) is written as it is; an empty file holds
		// nothing to keep.
		return nil
	}
	for i := versions - 1; i > 0; i-- {
		if err := os.Rename(versionName(path, i-1), versionName(path, i)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return os.Rename(path, versionName(path, 0))
}

// versionName is the name of path's i-th earlier version.
func versionName(path string, i int) string { return path + "." + strconv.Itoa(i) }

// fileWriter closes the file after the Frame Streams writer (which
// writes the STOP frame and flushes).
type fileWriter struct {
	dt.Writer
	f *os.File
}

func (w fileWriter) Close() error {
	return errors.Join(w.Writer.Close(), w.f.Close())
}

// NewRing returns a ring for a worker recording into t, one Release
// gave back when there is one (workers come and go with TCP
// connections: give the ring back with runtime.AddCleanup on the
// worker).
func (t *Tap) NewRing() *Ring {
	t.mu.Lock()
	defer t.mu.Unlock()
	var r *Ring
	if n := len(t.free); n > 0 {
		r, t.free = t.free[n-1], t.free[:n-1]
	} else {
		r = &Ring{slots: new([ringSlots]slot)}
		t.rings = append(t.rings, r)
	}
	return r
}

// Release makes r available to the next NewRing, once its worker
// records no more; its records still queued are written all the same
// (the writer drains every ring).
func (t *Tap) Release(r *Ring) {
	t.mu.Lock()
	t.free = append(t.free, r)
	t.mu.Unlock()
}

// Dropped is the number of records dropped so far, over all rings.
func (t *Tap) Dropped() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var n uint64
	for _, r := range t.rings {
		n += r.dropped.Load()
	}
	return n
}

// Written is the number of dnstap messages written so far.
func (t *Tap) Written() uint64 { return t.written.Load() }

// run is the writer: it drains the rings every t.every until Close.
func (t *Tap) run() {
	defer close(t.done)
	tick := time.NewTicker(t.every)
	defer tick.Stop()
	var rings []*Ring
	for {
		select {
		case <-t.stop:
			t.drain(rings[:0])
			return
		case <-tick.C:
			// While the rings had records, go round again at once:
			// under load the writer keeps up as fast as it encodes.
			n := 1
			for n > 0 {
				rings, n = t.drain(rings[:0])
				select {
				case <-t.stop:
					n = 0
				default:
				}
			}
		}
	}
}

// drain writes what every ring holds and reports how many records;
// rings is scratch space for the list of rings, returned for reuse.
func (t *Tap) drain(rings []*Ring) ([]*Ring, int) {
	t.mu.Lock()
	rings = append(rings, t.rings...)
	t.mu.Unlock()
	n := 0
	for _, r := range rings {
		tail, head := r.tail.Load(), r.head.Load()
		n += int(head - tail)
		for ; tail < head; tail++ {
			t.write(&r.slots[tail%ringSlots])
		}
		r.tail.Store(tail)
	}
	return rings, n
}

// write encodes s as its query and response messages and writes them.
func (t *Tap) write(s *slot) {
	qt, rt := dt.Message_AUTH_QUERY, dt.Message_AUTH_RESPONSE
	if s.kind != Auth {
		qt, rt = dt.Message_CLIENT_QUERY, dt.Message_CLIENT_RESPONSE
	}
	family, addr := dt.SocketFamily_INET, s.remote.Addr().Unmap()
	if addr.Is6() {
		family = dt.SocketFamily_INET6
	}
	proto_ := dt.SocketProtocol_UDP
	if s.tcp {
		proto_ = dt.SocketProtocol_TCP
	}
	port := uint32(s.remote.Port())
	sec, nsec := uint64(s.when/1e9), uint32(s.when%1e9)
	var raddr []byte
	var rport *uint32
	if l := s.local.Addr().Unmap(); l.IsValid() && !l.IsUnspecified() && l.Is4() == addr.Is4() {
		raddr = l.AsSlice()
	}
	if s.local.Port() != 0 {
		p := uint32(s.local.Port())
		rport = &p
	}
	q := &dt.Message{Type: &qt, SocketFamily: &family, SocketProtocol: &proto_,
		QueryAddress: addr.AsSlice(), QueryPort: &port, ResponseAddress: raddr, ResponsePort: rport,
		QueryTimeSec: &sec, QueryTimeNsec: &nsec, QueryMessage: s.buf[:s.qlen]}
	if s.kind != ClientResponse {
		t.frame(q)
	}
	if s.rlen > 0 {
		r := &dt.Message{Type: &rt, SocketFamily: &family, SocketProtocol: &proto_,
			QueryAddress: addr.AsSlice(), QueryPort: &port, ResponseAddress: raddr, ResponsePort: rport,
			QueryTimeSec: &sec, QueryTimeNsec: &nsec,
			ResponseTimeSec: &sec, ResponseTimeNsec: &nsec, ResponseMessage: s.buf[s.qlen : s.qlen+s.rlen]}
		t.frame(r)
	}
}

// frame writes m as one dnstap frame; the first error is kept.
func (t *Tap) frame(m *dt.Message) {
	typ := dt.Dnstap_MESSAGE
	d := &dt.Dnstap{Type: &typ, Message: m}
	if len(t.identity) > 0 {
		d.Identity = t.identity
	}
	if len(t.version) > 0 {
		d.Version = t.version
	}
	b, err := proto.Marshal(d)
	if err == nil {
		_, err = t.w.WriteFrame(b)
	}
	if err != nil {
		t.errOnce.Do(func() { t.err = err })
		return
	}
	t.written.Add(1)
}

// closeWait bounds how long Close waits for the writer: a socket whose
// collector is gone is redialed forever.
const closeWait = 10 * time.Second

// Close writes what the rings hold (the workers must have stopped
// recording), ends the stream and closes the file or socket. It reports
// the first error of writing, if any. A writer still stuck after
// closeWait (no collector on the socket) is left behind, with an error.
func (t *Tap) Close() error {
	close(t.stop)
	select {
	case <-t.done:
	case <-time.After(closeWait):
		return fmt.Errorf("dnstap: writer still blocked after %v (collector gone?); %d messages written", closeWait, t.written.Load())
	}
	err := t.w.Close()
	return errors.Join(t.err, err)
}

// ReadFile reads the dnstap records of a Frame Streams file (what a
// Tap with a File wrote) with the library's reader, in order.
func ReadFile(path string) ([]*dt.Dnstap, error) {
	in, err := dt.NewFrameStreamInputFromFilename(path)
	if err != nil {
		return nil, fmt.Errorf("dnstap: %w", err)
	}
	frames := make(chan []byte, 64)
	go func() {
		in.ReadInto(frames)
		close(frames)
	}()
	var out []*dt.Dnstap
	var bad error
	for f := range frames {
		d := new(dt.Dnstap)
		if err := proto.Unmarshal(f, d); err != nil && bad == nil {
			bad = fmt.Errorf("dnstap: %s: frame %d: %w", path, len(out), err)
		}
		out = append(out, d)
	}
	return out, bad
}

// Collect listens on a unix socket at path as a dnstap collector does
// (fstrm_capture): it accepts one connection, answers the bidirectional
// Frame Streams handshake (READY, ACCEPT, START) and sends each frame
// to the channel it returns, which is closed when the stream ends (STOP)
// or the connection fails. stop stops listening (and, before a
// connection came, closes the channel). For the tests of socket output.
func Collect(path string) (frames <-chan []byte, stop func(), err error) {
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, nil, fmt.Errorf("dnstap: %w", err)
	}
	ch := make(chan []byte, 64)
	go func() {
		defer close(ch)
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if in, err := dt.NewFrameStreamInputTimeout(c, true, time.Minute); err == nil {
			in.ReadInto(ch)
		}
	}()
	return ch, func() { l.Close() }, nil
}
