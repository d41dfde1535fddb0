package perf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// runTCP drives one TCP client: a connection at a time, with a writer
// goroutine pipelining length-prefixed queries up to the window while this
// goroutine reads responses. The tracker is shared, so it is guarded by a
// mutex; TCP is not the fast path. When the server closes the connection
// while there is still sending to do, the client reconnects (like dnsperf);
// queries outstanding on the old connection are counted as lost.
func runTCP(env *loopEnv, sh share, c *Counters) (int64, error) {
	t := &tcpClient{env: env, sh: sh, c: c, tr: newTracker(int64(env.cfg.Timeout), c, uint16(sh.cursor*7919), sh.window), cursor: sh.cursor}
	for first := true; ; first = false {
		if !first {
			c.Reconnects++
		}
		done, err := t.session()
		if err != nil || done || env.stop.Load() {
			env.live.publish(c)
			return max(t.last, t.stoppedAt), err
		}
	}
}

// tcpClient is the state that survives reconnections.
type tcpClient struct {
	env       *loopEnv
	sh        share
	c         *Counters
	mu        sync.Mutex // guards tr and c between reader and writer
	tr        *tracker
	cursor    int
	last      int64 // last response
	stoppedAt int64 // when sending ended
}

// session runs one connection; done reports that sending is over and every
// query was answered or expired.
func (t *tcpClient) session() (done bool, err error) {
	env, cfg := t.env, t.env.cfg
	d := net.Dialer{Timeout: cfg.Timeout}
	conn, err := d.Dial("tcp", cfg.Server.String())
	if err != nil {
		return false, err // a *net.OpError: "dial tcp ADDR: ..."
	}
	defer conn.Close()

	tokens := make(chan struct{}, t.sh.window)
	for range t.sh.window {
		tokens <- struct{}{}
	}
	writerEnd := make(chan struct{})
	quit := make(chan struct{}) // closed when the reader ends the session
	var finished bool           // the writer reached the end of the run
	var werr error
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(writerEnd)
		finished, werr = t.writer(conn, tokens, quit)
	})
	end := func(err error) (bool, error) {
		close(quit)
		conn.Close() // unblocks a writer stuck in Write
		wg.Wait()
		t.mu.Lock()
		t.tr.abandon()
		env.live.publish(t.c)
		t.mu.Unlock()
		return finished || werr != nil, errors.Join(err, werr)
	}

	// The buffer holds a whole message, so Peek can wait for one across
	// read deadlines without consuming a partial header.
	br := bufio.NewReaderSize(conn, 2+65535)
	for {
		t.mu.Lock()
		for range t.tr.expire(env.now()) {
			tokens <- struct{}{}
		}
		out := t.tr.out
		env.live.publish(t.c)
		t.mu.Unlock()
		select {
		case <-writerEnd:
			if out == 0 || env.stop.Load() || werr != nil {
				return end(nil)
			}
		default:
		}
		_ = conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		hdr, err := br.Peek(2)
		if err == nil {
			n := int(binary.BigEndian.Uint16(hdr))
			var msg []byte
			msg, err = br.Peek(2 + n)
			if err == nil {
				t.mu.Lock()
				now := env.now()
				if t.tr.response(msg[2:], now) {
					tokens <- struct{}{}
					t.last = now
				}
				t.mu.Unlock()
				_, _ = br.Discard(2 + n)
				continue
			}
		}
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			continue // nothing consumed; check timeouts and the writer
		case errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET):
			return end(nil) // server closed: reconnect unless finished
		default:
			return end(fmt.Errorf("read tcp: %w", err))
		}
	}
}

// writer sends queries on conn while the run lasts; finished reports that
// sending ended because the run did (not because the connection failed).
func (t *tcpClient) writer(conn net.Conn, tokens, quit chan struct{}) (finished bool, err error) {
	env, sh, mu, tr := t.env, t.sh, &t.mu, t.tr
	w := env.wire
	bw := bufio.NewWriterSize(conn, 64<<10)
	frame := make([]byte, 2+w.maxLen)
	pace := newPacer(sh.qps)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := env.now()
		mu.Lock()
		sent := tr.c.Sent
		mu.Unlock()
		if env.stop.Load() || (env.deadline > 0 && now >= env.deadline) || (sh.limit > 0 && sent >= sh.limit) {
			mu.Lock()
			t.stoppedAt = now
			mu.Unlock()
			return true, flushErr(bw.Flush())
		}
		if pace.budget(now, sent) == 0 {
			if err := bw.Flush(); err != nil {
				return false, flushErr(err)
			}
			timer.Reset(time.Duration(pace.nextAt(sent) - now))
			select {
			case <-timer.C:
			case <-quit:
				return false, nil
			}
			continue
		}
		got := false
		select {
		case <-tokens:
			got = true
		default:
		}
		if !got {
			// Window full: push what is buffered, then wait for room (or
			// 50 ms, to notice the deadline and cancellation).
			if err := bw.Flush(); err != nil {
				return false, flushErr(err)
			}
			timer.Reset(50 * time.Millisecond)
			select {
			case <-tokens:
				got = true
			case <-timer.C:
			case <-quit:
				return false, nil
			}
			timer.Stop()
			if !got {
				continue
			}
		}
		q := w.get(t.cursor)
		if t.cursor++; t.cursor == w.n() {
			t.cursor = 0
		}
		binary.BigEndian.PutUint16(frame, uint16(len(q)))
		b := frame[2 : 2+len(q)]
		copy(b, q)
		mu.Lock()
		id := tr.alloc()
		b[0], b[1] = byte(id>>8), byte(id)
		tr.sent(id, env.now(), len(q))
		mu.Unlock()
		if _, err := bw.Write(frame[:2+len(q)]); err != nil {
			return false, flushErr(err)
		}
	}
}

// flushErr hides errors from writing to a connection that is gone: closed
// by this side, or by the server (the reader sees that and reconnects).
func flushErr(err error) error {
	if err == nil || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	return fmt.Errorf("write tcp: %w", err)
}
