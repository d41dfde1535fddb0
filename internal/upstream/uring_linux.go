//go:build linux && !ternportable

package upstream

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A ring is an io_uring instance (io_uring(7)) through which a Client's
// UDP queries are made, sent and read, and their sockets closed, without
// a system call of their own: each query writes a linked chain of
// requests (SOCKET into a direct descriptor, CONNECT, SEND, RECV and the
// RECV's timeout) into the submission queue, and one io_uring_enter
// submits the chains and closes of all the queries that wrote theirs
// since the last one (flush).
// Completions are read from the completion queue by one goroutine woken
// through the netpoller by an eventfd the ring signals (reap), which
// wakes the queries they belong to.
//
// Why: in this VM a system call costs about 1.1 µs, and the epoll path
// makes six per query (socket, connect, write, epoll_ctl, recvfrom,
// close) besides its share of the epoll_wait calls; see
// docs/bench/upstream-uring-2026-12-04.md for the measurement.
//
// Each query still has a socket of its own, so a fresh random source port
// (RFC 5452 §9.2): the kernel binds it at the CONNECT. Its descriptor is a
// direct one, an index into the ring's file table, never in the process's
// descriptor table: a query holds one of the ring's slots from its SOCKET
// until the io_uring_enter that submits its CLOSE has returned.
//
// Every field but the mapped memory's is guarded by the poller's mu.
type ring struct {
	fd   int
	mmap [][]byte // what to unmap

	sqHead, sqTail *uint32 // in the mapped submission queue
	sqMask         uint32
	sqes           []sqe
	cqHead, cqTail *uint32 // in the mapped completion queue
	cqMask         uint32
	cqes           []cqe

	// efd is the eventfd the ring signals at each completion, in the
	// netpoller (os.NewFile of a non-blocking descriptor).
	efd *os.File

	tail     uint32 // the next submission queue entry to write
	pending  uint32 // entries written but not yet counted for submission
	flushing bool   // a flush is scheduled or submitting (one at a time)
	// flush is the poller's flush of this ring, made once: a go
	// statement with arguments allocates the closure that carries
	// them, one allocation per query (1 of 16 in BenchmarkColdResolve).
	flush func()
	slots []slot
	free  []uint32 // slots not in use
	// closing are the slots whose CLOSE is written; the flush that
	// submits it frees them.
	closing, spare []uint32
	gen            uint32 // the last generation given to a slot

	// dead is closed when the ring stopped working (err says why): its
	// queries stop waiting for completions that will not come.
	dead chan struct{}
	err  error
}

// slot is what a query in flight keeps in its ring: the memory the
// kernel reads (the server's address, the query, the RECV's timeout) and
// writes (the answer) must stay referenced until the RECV's completion.
type slot struct {
	gen uint32 // generation, in the user data of its requests
	// done hears the completion that ends the query's chain or its
	// RECV, one at a time (its capacity). Made at the slot's first
	// query and kept: a query ends having received every completion
	// sent to it, so the next finds it empty.
	done chan ringResult
	sa   unix.RawSockaddrInet6
	// timeout is the RECV's, read by the kernel when it is submitted.
	timeout kernelTimespec
	pkt     []byte
	buf     []byte // nil when no query holds the slot
}

// kernelTimespec is struct __kernel_timespec, 64-bit on every
// architecture (unix.Timespec is not).
type kernelTimespec struct {
	sec, nsec int64
}

// ringResult is a RECV's completion (res: the datagram's length, or
// -errno) or the failure of a request before it in its chain (err).
type ringResult struct {
	res int32
	err error
}

// Sizes of a ring. A slot has at most six submission queue entries
// written and not yet consumed by the kernel (its chain of five and a
// cancel; or a RECV, its timeout and a cancel; or a CLOSE), so the
// queue, at least six times the slots, never fills. A query that finds
// no free slot uses the epoll path.
const (
	ringSlots   = 256
	ringEntries = 2048
)

// Opcodes, flags and offsets of linux/io_uring.h.
const (
	opAsyncCancel = 14
	opLinkTimeout = 15
	opConnect     = 16
	opClose       = 19
	opSend        = 26
	opRecv        = 27
	opSocket      = 45

	sqeFixedFile      = 1 << 0
	sqeIOLink         = 1 << 2
	sqeCQESkipSuccess = 1 << 6

	setupSubmitAll   = 1 << 7
	setupCoopTaskrun = 1 << 8

	featSingleMmap = 1 << 0
	featNoDrop     = 1 << 1
	featCQESkip    = 1 << 11
	featLinkedFile = 1 << 12

	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	registerEventfd    = 4
	registerProbe      = 8
	registerFiles2     = 13
	rsrcRegisterSparse = 1
	probeOpSupported   = 1

	recvsendPollFirst = 1
)

// sqe is struct io_uring_sqe.
type sqe struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	opFlags     uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	fileIndex   uint32
	addr3       uint64
	_           uint64
}

// cqe is struct io_uring_cqe.
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

// ringParams is struct io_uring_params.
type ringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  struct {
		head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
		userAddr                                                        uint64
	}
	cqOff struct {
		head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
		userAddr                                                        uint64
	}
}

// ringSetup is io_uring_setup(2).
func ringSetup(entries uint32, p *ringParams) (int, error) {
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	if errno != 0 {
		return -1, os.NewSyscallError("io_uring_setup", errno)
	}
	return int(fd), nil
}

// register is io_uring_register(2).
func (r *ring) register(op uintptr, arg unsafe.Pointer, n uintptr) error {
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), op, uintptr(arg), n, 0, 0)
	if errno != 0 {
		return os.NewSyscallError("io_uring_register", errno)
	}
	return nil
}

// openRing makes a ring with its slots and eventfd; setup is
// io_uring_setup (tests replace it). An error says why io_uring cannot be
// used here: not in this kernel, disabled (kernel.io_uring_disabled), or
// refused by a seccomp filter (ENOSYS, EPERM), or too old for what a
// query needs (direct sockets, Linux 5.19).
func openRing(setup func(uint32, *ringParams) (int, error)) (r *ring, err error) {
	var p ringParams
	p.flags = setupSubmitAll | setupCoopTaskrun
	fd, err := setup(ringEntries, &p)
	if err != nil {
		return nil, err
	}
	r = &ring{fd: fd, dead: make(chan struct{})}
	defer func() {
		if err != nil {
			r.release()
		}
	}()
	const need = featSingleMmap | featNoDrop | featCQESkip | featLinkedFile
	if p.features&need != need {
		return nil, fmt.Errorf("io_uring features %#x, need %#x", p.features, need)
	}
	if err := r.probe(opSocket, opConnect, opSend, opRecv, opLinkTimeout, opAsyncCancel, opClose); err != nil {
		return nil, err
	}
	// One mapping holds both rings (IORING_FEAT_SINGLE_MMAP).
	size := max(p.sqOff.array+p.sqEntries*4, p.cqOff.cqes+p.cqEntries*uint32(unsafe.Sizeof(cqe{})))
	rings, err := unix.Mmap(fd, offSQRing, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	r.mmap = append(r.mmap, rings)
	sqes, err := unix.Mmap(fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(sqe{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	r.mmap = append(r.mmap, sqes)
	u32 := func(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&rings[off])) }
	r.sqHead, r.sqTail, r.sqMask = u32(p.sqOff.head), u32(p.sqOff.tail), *u32(p.sqOff.ringMask)
	r.cqHead, r.cqTail, r.cqMask = u32(p.cqOff.head), u32(p.cqOff.tail), *u32(p.cqOff.ringMask)
	r.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&sqes[0])), p.sqEntries)
	r.cqes = unsafe.Slice((*cqe)(unsafe.Pointer(&rings[p.cqOff.cqes])), p.cqEntries)
	// The queue's entry i is always the array's i.
	array := unsafe.Slice(u32(p.sqOff.array), p.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	r.tail = atomic.LoadUint32(r.sqTail)

	files := struct {
		nr, flags  uint32
		resv2      uint64
		data, tags uint64
	}{nr: ringSlots, flags: rsrcRegisterSparse}
	if err := r.register(registerFiles2, unsafe.Pointer(&files), unsafe.Sizeof(files)); err != nil {
		return nil, fmt.Errorf("registering %d direct descriptors: %w", ringSlots, err)
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	e := int32(efd)
	if err := r.register(registerEventfd, unsafe.Pointer(&e), 1); err != nil {
		unix.Close(efd)
		return nil, err
	}
	// A non-blocking descriptor given to os.NewFile joins the netpoller.
	r.efd = os.NewFile(uintptr(efd), "upstream-uring")
	r.slots = make([]slot, ringSlots)
	r.free = make([]uint32, ringSlots)
	for i := range r.free {
		r.free[i] = uint32(ringSlots - 1 - i)
	}
	return r, nil
}

// probe checks that the kernel has the operations ops.
func (r *ring) probe(ops ...uint8) error {
	var pr struct {
		lastOp, opsLen uint8
		resv           uint16
		resv2          [3]uint32
		ops            [256]struct {
			op, resv uint8
			flags    uint16
			resv2    uint32
		}
	}
	if err := r.register(registerProbe, unsafe.Pointer(&pr), uintptr(len(pr.ops))); err != nil {
		return err
	}
	for _, op := range ops {
		if op > pr.lastOp || pr.ops[op].flags&probeOpSupported == 0 {
			return fmt.Errorf("io_uring without operation %d", op)
		}
	}
	return nil
}

// release unmaps and closes what the ring holds. No request may be in
// flight: the kernel would write into memory the ring no longer keeps.
func (r *ring) release() {
	if r.efd != nil {
		r.efd.Close()
	}
	for _, m := range r.mmap {
		unix.Munmap(m)
	}
	unix.Close(r.fd)
}

// idle reports whether no query holds a slot and nothing waits to be
// submitted: the ring can be released.
func (r *ring) idle() bool {
	return len(r.free) == len(r.slots) && r.pending == 0 && !r.flushing
}

// Requests' user data: the slot's generation, its index, the operation.
func userData(gen, i uint32, op uint8) uint64 {
	return uint64(gen)<<32 | uint64(i)<<8 | uint64(op)
}

// push writes e into the submission queue and makes it visible to the
// kernel; it is submitted by the next flush. It reports false when the
// queue is full, which the slot bound (ringEntries) rules out.
func (r *ring) push(e sqe) bool {
	if r.tail-atomic.LoadUint32(r.sqHead) >= uint32(len(r.sqes)) {
		return false
	}
	r.sqes[r.tail&r.sqMask] = e
	r.tail++
	atomic.StoreUint32(r.sqTail, r.tail)
	r.pending++
	return true
}

// start takes a free slot for a query to sa (salen bytes of it, of the
// socket family family) and writes its chain: a socket into the slot's
// direct descriptor, connected (binding a random ephemeral port), the
// query sent and its answer received within timeout (recv). Only
// failures complete the first three (IOSQE_CQE_SKIP_SUCCESS), and the
// failure of one of those cancels the rest of the chain without a
// completion: the chain's last completion is its only one, the RECV's or
// a failure's. It reports false when no slot is free.
func (r *ring) start(sa *unix.RawSockaddrInet6, salen uint32, family int, pkt, buf []byte, timeout time.Duration) (uint32, bool) {
	if len(r.free) == 0 || r.err != nil {
		return 0, false
	}
	i := r.free[len(r.free)-1]
	s := &r.slots[i]
	r.free = r.free[:len(r.free)-1]
	r.gen++
	if s.done == nil {
		s.done = make(chan ringResult, 1)
	}
	s.gen, s.sa, s.pkt, s.buf = r.gen, *sa, pkt, buf
	ok := r.push(sqe{opcode: opSocket, flags: sqeIOLink | sqeCQESkipSuccess, fd: int32(family), off: unix.SOCK_DGRAM,
		fileIndex: i + 1, userData: userData(s.gen, i, opSocket)}) &&
		r.push(sqe{opcode: opConnect, flags: sqeFixedFile | sqeIOLink | sqeCQESkipSuccess, fd: int32(i),
			addr: uint64(uintptr(unsafe.Pointer(&s.sa))), off: uint64(salen), userData: userData(s.gen, i, opConnect)}) &&
		r.push(sqe{opcode: opSend, flags: sqeFixedFile | sqeIOLink | sqeCQESkipSuccess, fd: int32(i),
			addr: uint64(uintptr(unsafe.Pointer(&pkt[0]))), len: uint32(len(pkt)), userData: userData(s.gen, i, opSend)}) &&
		r.recv(i, timeout)
	if !ok {
		r.fail(errors.New("io_uring submission queue full"))
	}
	return i, true
}

// recv writes a RECV into slot i's socket: the next datagram, with
// MSG_TRUNC its own length even when it is longer than the buffer (Linux,
// udp(7)). IORING_RECVSEND_POLL_FIRST: the answer is not there yet, so
// waiting for it comes before trying to read it.
//
// The RECV is linked to a timeout (IORING_OP_LINK_TIMEOUT, relative,
// CLOCK_MONOTONIC, from the RECV's start) that cancels it when timeout
// passes first: the RECV then completes with ECANCELED. The timeout's own
// completion is not posted when the RECV completes first
// (IOSQE_CQE_SKIP_SUCCESS: on Linux 6.18, 1000 queries answered brought
// 1000 completions, their RECVs'), and is ignored where it is (complete).
// The kernel reads the timeout when the entry is submitted; a RECV
// written again gets what is left of the query's wait.
func (r *ring) recv(i uint32, timeout time.Duration) bool {
	s := &r.slots[i]
	s.timeout = kernelTimespec{sec: int64(timeout / time.Second), nsec: int64(timeout % time.Second)}
	return r.push(sqe{opcode: opRecv, flags: sqeFixedFile | sqeIOLink, ioprio: recvsendPollFirst, fd: int32(i),
		addr: uint64(uintptr(unsafe.Pointer(&s.buf[0]))), len: uint32(len(s.buf)), opFlags: unix.MSG_TRUNC,
		userData: userData(s.gen, i, opRecv)}) &&
		r.push(sqe{opcode: opLinkTimeout, flags: sqeCQESkipSuccess, addr: uint64(uintptr(unsafe.Pointer(&s.timeout))), len: 1,
			userData: userData(s.gen, i, opLinkTimeout)})
}

// cancel writes the cancellation of slot i's RECV, which then completes
// with ECANCELED (or with the datagram, if that came first).
func (r *ring) cancel(i uint32) {
	s := &r.slots[i]
	if !r.push(sqe{opcode: opAsyncCancel, flags: sqeCQESkipSuccess, addr: userData(s.gen, i, opRecv),
		userData: userData(s.gen, i, opAsyncCancel)}) {
		r.fail(errors.New("io_uring submission queue full"))
	}
}

// finish writes the CLOSE of slot i's socket, after its RECV's last
// completion, and lets go of the query's memory. The flush that submits
// the CLOSE frees the slot (a direct descriptor's close is done at
// submission).
func (r *ring) finish(i uint32) {
	s := &r.slots[i]
	if r.err != nil {
		// Nothing more is submitted: the slot stays taken, and keeps
		// the memory the kernel may still write into.
		return
	}
	s.pkt, s.buf = nil, nil
	if !r.push(sqe{opcode: opClose, flags: sqeCQESkipSuccess, fileIndex: i + 1, userData: userData(s.gen, i, opClose)}) {
		r.fail(errors.New("io_uring submission queue full"))
		return
	}
	r.closing = append(r.closing, i)
}

// deadErr is the error of a query the ring failed under, once r.dead is
// closed.
func (r *ring) deadErr() error {
	return fmt.Errorf("%w: %w", errRingDead, r.err)
}

// fail marks the ring as no longer working: the queries waiting on it
// stop, and no more is submitted. Its memory is kept (the caller keeps
// the ring): requests already submitted may still write into it.
func (r *ring) fail(err error) {
	if r.err == nil {
		r.err = err
		close(r.dead)
	}
}

// complete hands one completion to the query it belongs to.
func (r *ring) complete(c cqe) {
	i := uint32(c.userData>>8) & 0xffffff
	if i >= uint32(len(r.slots)) {
		return
	}
	s := &r.slots[i]
	if s.gen != uint32(c.userData>>32) || s.buf == nil {
		// A failed cancel or close of a query that is over.
		return
	}
	var res ringResult
	switch op := uint8(c.userData); op {
	case opSocket, opConnect, opSend:
		// Only a failure completes these; it ends the chain.
		res.err = os.NewSyscallError(opName(op), unix.Errno(-c.res))
	case opRecv:
		res.res = c.res
	case opAsyncCancel:
		// Only a failure completes a cancel. ENOENT with the RECV's
		// completion not come: the cancel went in the io_uring_enter
		// that submitted the query's chain (its context was done
		// before the chain was submitted), which issues the chain's
		// linked requests only once the whole batch is submitted, so
		// after the cancel; the RECV then waits for an answer that may
		// never come. Cancelled again, in a later submission
		// (TestCancelBeforeSubmit). Otherwise (EALREADY, or the RECV's
		// completion is there) the RECV completes of itself.
		if c.res == -int32(unix.ENOENT) && len(s.done) == 0 {
			r.cancel(i)
		}
		return
	default:
		// A failed close, or the RECV's timeout: it fired (ETIME;
		// the RECV completes cancelled), or the RECV completed first
		// (ECANCELED).
		return
	}
	select {
	case s.done <- res:
	default:
		// Not reached: a query has one request at a time that ends
		// with a completion.
	}
}

// opName names the system call an operation stands for, in errors.
func opName(op uint8) string {
	switch op {
	case opSocket:
		return "socket"
	case opConnect:
		return "connect"
	case opSend:
		return "send"
	}
	return "recv"
}

// drain hands every completion in the queue to its query and reports how
// many there were.
func (r *ring) drain() int {
	head := *r.cqHead
	tail := atomic.LoadUint32(r.cqTail)
	for h := head; h != tail; h++ {
		r.complete(r.cqes[h&r.cqMask])
	}
	atomic.StoreUint32(r.cqHead, tail)
	return int(tail - head)
}

// kick schedules a flush of what is written, unless one is scheduled.
func (p *poller) kick(r *ring) {
	if r.pending > 0 && !r.flushing && r.err == nil {
		r.flushing = true
		go r.flush()
	}
}

// flush submits everything written so far with one io_uring_enter. It
// first yields, so that the other goroutines ready to run (queries woken
// by the same completions, new queries) write theirs first and are
// submitted with it: with one P, the whole run queue.
//
// One flush runs at a time (r.flushing stays set until its
// io_uring_enter has returned; what was written meanwhile is the next
// flush's): each submits n entries from the queue's head, whole chains
// when n is what was written before it, but two at once would submit in
// either order, and the one that came first could end inside a chain,
// which the kernel then runs apart from its rest (a SEND or RECV before
// its SOCKET). TestFlushOneAtATime.
func (p *poller) flush(r *ring) {
	runtime.Gosched()
	p.mu.Lock()
	n := r.pending
	closing := r.closing
	r.pending = 0
	r.closing, r.spare = r.spare[:0], nil
	p.mu.Unlock()
	submit := p.enter
	if submit == nil {
		submit = enter
	}
	err := submit(r.fd, n)
	p.mu.Lock()
	defer p.mu.Unlock()
	r.flushing = false
	if err != nil {
		r.fail(err)
		return
	}
	r.free = append(r.free, closing...)
	r.spare = closing[:0]
	// What was written while this one submitted.
	p.kick(r)
}

// enter submits n entries: io_uring_enter(2), again for what a call left.
func enter(fd int, n uint32) error {
	for busy := 0; n > 0; {
		m, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(fd), uintptr(n), 0, 0, 0, 0)
		switch errno {
		case 0:
			n -= uint32(m)
		case unix.EINTR:
		case unix.EAGAIN, unix.EBUSY:
			// Completions not yet reaped fill the kernel's memory
			// (IORING_FEAT_NODROP): the reaper drains them.
			if busy++; busy > 1000 {
				return os.NewSyscallError("io_uring_enter", errno)
			}
			time.Sleep(time.Millisecond)
		default:
			return os.NewSyscallError("io_uring_enter", errno)
		}
	}
	return nil
}

// errRingIdle closes a ring that had no query for the idle time.
var errRingIdle = errors.New("io_uring instance idle")

// reap waits for completions through the netpoller and hands them to
// their queries until the ring has had no query for the poller's idle
// time, then releases it. The eventfd is never read: the netpoller's
// epoll watches it edge-triggered, and an eventfd reports each signal as
// an edge whatever its count, so each completion wakes this loop without
// a read(2) per wake-up; the count (a uint64) cannot overflow in practice.
func (p *poller) reap(r *ring) {
	rc, err := r.efd.SyscallConn()
	if err != nil {
		p.mu.Lock()
		r.fail(err)
		p.mu.Unlock()
		return
	}
	for {
		r.efd.SetReadDeadline(time.Now().Add(p.idleTime()))
		err := rc.Read(func(uintptr) bool {
			p.mu.Lock()
			n := r.drain()
			// A cancel drain wrote again (complete).
			p.kick(r)
			p.mu.Unlock()
			return n > 0
		})
		if err == nil {
			continue
		}
		p.mu.Lock()
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			r.fail(err)
		}
		if r.err == nil && r.idle() {
			// No query can start on it once p.ring is not it: start
			// checks r.err under p.mu.
			r.fail(errRingIdle)
		}
		if r.err != nil {
			if p.ring == r {
				p.ring = nil
			}
			if r.err != errRingIdle && p.ringOff == nil {
				// A ring that failed is not tried again.
				p.ringOff = r.err
				p.logRingOff()
			}
			if r.idle() {
				r.release()
			} else {
				// Requests in flight may still write into the
				// ring's memory: keep it.
				p.failed = append(p.failed, r)
			}
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
}
