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
	"time"
)

// runTCP drives one TCP connection: a writer goroutine pipelines
// length-prefixed queries up to the window while this goroutine reads
// responses. The tracker is shared, so it is guarded by a mutex; TCP is not
// the fast path. A connection the server closes ends this client's run;
// its outstanding queries are counted as lost.
func runTCP(env *loopEnv, sh share, c *Counters) (int64, error) {
	cfg := env.cfg
	d := net.Dialer{Timeout: cfg.Timeout}
	conn, err := d.Dial("tcp", cfg.Server.String())
	if err != nil {
		return 0, fmt.Errorf("dial tcp %s: %w", cfg.Server, err)
	}
	defer conn.Close()

	var (
		mu        sync.Mutex
		tr        = newTracker(int64(cfg.Timeout), c, uint16(sh.cursor*7919))
		tokens    = make(chan struct{}, sh.window)
		writerEnd = make(chan struct{})
		stoppedAt int64
		werr      error
	)
	for range sh.window {
		tokens <- struct{}{}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(writerEnd)
		stoppedAt, werr = tcpWriter(env, sh, conn, &mu, tr, tokens)
	})

	br := bufio.NewReaderSize(conn, 64<<10)
	msg := make([]byte, 65535)
	var last int64
	finish := func(err error) (int64, error) {
		conn.Close() // unblocks the writer
		wg.Wait()
		mu.Lock()
		tr.abandon()
		mu.Unlock()
		env.live.publish(c)
		return max(last, stoppedAt), errors.Join(err, werr)
	}
	for {
		mu.Lock()
		now := env.now()
		for range tr.expire(now) {
			tokens <- struct{}{}
		}
		out := tr.out
		env.live.publish(c)
		mu.Unlock()
		select {
		case <-writerEnd:
			if out == 0 || env.stop.Load() || werr != nil {
				return finish(nil)
			}
		default:
		}
		_ = conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		var hdr [2]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return finish(nil)
			}
			return finish(fmt.Errorf("read tcp: %w", err))
		}
		n := int(binary.BigEndian.Uint16(hdr[:]))
		// The rest of a started message gets the full timeout.
		_ = conn.SetReadDeadline(time.Now().Add(cfg.Timeout))
		if _, err := io.ReadFull(br, msg[:n]); err != nil {
			return finish(fmt.Errorf("read tcp message: %w", err))
		}
		mu.Lock()
		now = env.now()
		if tr.response(msg[:n], now) {
			tokens <- struct{}{}
			last = now
		}
		mu.Unlock()
	}
}

// tcpWriter sends queries while the run lasts; it returns when sending
// stopped (ns since start).
func tcpWriter(env *loopEnv, sh share, conn net.Conn, mu *sync.Mutex, tr *tracker, tokens chan struct{}) (int64, error) {
	w := env.wire
	bw := bufio.NewWriterSize(conn, 64<<10)
	frame := make([]byte, 2+w.maxLen)
	pace := newPacer(sh.qps)
	cursor := sh.cursor
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := env.now()
		mu.Lock()
		sent := tr.c.Sent
		mu.Unlock()
		if env.stop.Load() || (env.deadline > 0 && now >= env.deadline) || (sh.limit > 0 && sent >= sh.limit) {
			return now, flushErr(bw.Flush())
		}
		if pace.budget(now, sent) == 0 {
			if err := bw.Flush(); err != nil {
				return now, flushErr(err)
			}
			time.Sleep(time.Duration(pace.nextAt(sent) - now))
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
				return now, flushErr(err)
			}
			timer.Reset(50 * time.Millisecond)
			select {
			case <-tokens:
				got = true
			case <-timer.C:
			}
			timer.Stop()
			if !got {
				continue
			}
		}
		q := w.get(cursor)
		if cursor++; cursor == w.n() {
			cursor = 0
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
			return env.now(), flushErr(err)
		}
	}
}

// flushErr hides the error from writing to a connection this side closed.
func flushErr(err error) error {
	if err == nil || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return fmt.Errorf("write tcp: %w", err)
}
