package perf

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// batchConn is what ipv4.PacketConn and ipv6.PacketConn have in common.
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// respBufSize is the receive buffer per datagram: the advertised EDNS size
// (512 without EDNS) plus one octet that reveals oversize answers.
func respBufSize(o EncodeOptions) int {
	if !(o.EDNS || o.DO || len(o.Options) > 0) {
		return 513
	}
	return min(max(int(o.UDPSize), 512)+1, 65536)
}

// ignorable reports errors that lose queries but do not end a run: ICMP
// errors queued on the connected socket (server not up yet or gone) and a
// full buffer.
func ignorable(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOBUFS) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// runXnet drives one connected UDP socket from one goroutine with x/net
// batch I/O: send up to the window, then block in ReadBatch (the Go netpoller
// parks the goroutine) with a read deadline at the next timeout, rate slot
// or the end of the run.
func runXnet(env *loopEnv, sh share, c *Counters) (int64, error) {
	cfg := env.cfg
	network := "udp4"
	if !cfg.Server.Addr().Unmap().Is4() {
		network = "udp6"
	}
	conn, err := net.DialUDP(network, nil, net.UDPAddrFromAddrPort(cfg.Server))
	if err != nil {
		return 0, fmt.Errorf("dial %s: %w", cfg.Server, err)
	}
	defer conn.Close()
	if cfg.SockBuf > 0 {
		_ = conn.SetReadBuffer(cfg.SockBuf)
		_ = conn.SetWriteBuffer(cfg.SockBuf)
	}
	var pc batchConn
	if network == "udp4" {
		pc = ipv4.NewPacketConn(conn)
	} else {
		pc = ipv6.NewPacketConn(conn)
	}

	batch := cfg.Batch
	w := env.wire
	sbuf := make([]byte, batch*w.maxLen)
	smsgs := make([]ipv4.Message, batch)
	sbufs := make([][]byte, batch)
	sids := make([]uint16, batch)
	for i := range smsgs {
		smsgs[i].Buffers = sbufs[i : i+1]
	}
	rsize := respBufSize(cfg.Encode)
	rbuf := make([]byte, batch*rsize)
	rmsgs := make([]ipv4.Message, batch)
	rbufs := make([][]byte, batch)
	for i := range rmsgs {
		rbufs[i] = rbuf[i*rsize : (i+1)*rsize]
		rmsgs[i].Buffers = rbufs[i : i+1]
	}

	tr := newTracker(int64(cfg.Timeout), c, uint16(sh.cursor*7919), sh.window)
	defer tr.abandon() // after a socket error, so that sent = completed + lost
	pace := newPacer(sh.qps)
	cursor := sh.cursor
	sending := true
	var last, lastPub, stoppedAt int64
	curDL := int64(-1)
	for {
		now := env.now()
		tr.expire(now)
		if sending && (env.stop.Load() || (env.deadline > 0 && now >= env.deadline) || (sh.limit > 0 && c.Sent >= sh.limit)) {
			sending = false
			stoppedAt = now
		}
		room := 0
		if sending {
			room = min(tr.window(sh.window)-tr.out, batch, pace.budget(now, c.Sent))
			if sh.limit > 0 {
				room = min(room, int(sh.limit-c.Sent))
			}
		}
		if room > 0 {
			cur := cursor
			for i := range room {
				q := w.get(cur)
				b := sbuf[i*w.maxLen : i*w.maxLen+len(q)]
				copy(b, q)
				id := tr.alloc()
				b[0], b[1] = byte(id>>8), byte(id)
				sids[i] = id
				sbufs[i] = b
				if cur++; cur == w.n() {
					cur = 0
				}
			}
			c.SendCalls++
			k, err := pc.WriteBatch(smsgs[:room], 0)
			if err != nil && !ignorable(err) {
				return max(last, stoppedAt), fmt.Errorf("write batch: %w", err)
			}
			if err != nil {
				c.SendErrors++
			}
			for i := range max(k, 0) {
				tr.sent(sids[i], now, len(sbufs[i]))
			}
			cursor = (cursor + max(k, 0)) % w.n()
			if k > 0 && tr.out < tr.window(sh.window) && pace.budget(now, c.Sent) > 0 {
				continue // more room: keep sending before blocking in read
			}
		}
		if !sending && tr.out == 0 {
			env.live.publish(c)
			return max(last, stoppedAt), nil
		}
		if !sending && env.stop.Load() {
			tr.abandon()
			env.live.publish(c)
			return max(last, stoppedAt), nil
		}
		if now-lastPub > 50e6 {
			env.live.publish(c)
			lastPub = now
		}

		// Block until a response, or the next event that needs us.
		want := now + 50e6
		if t, ok := tr.nextExpiry(); ok {
			want = min(want, t)
		}
		if sending {
			if env.deadline > 0 {
				want = min(want, env.deadline)
			}
			if pace.perNs > 0 && tr.out < tr.window(sh.window) {
				want = min(want, pace.nextAt(c.Sent))
			}
		}
		if tr.out == 0 {
			// Nothing can arrive: just wait for the next event.
			time.Sleep(time.Duration(max(want-now, 0)))
			continue
		}
		if want < curDL || curDL <= now {
			if err := conn.SetReadDeadline(env.base.Add(time.Duration(want))); err != nil {
				return max(last, stoppedAt), fmt.Errorf("set read deadline: %w", err)
			}
			curDL = want
		}
		c.Waits++ // ReadBatch parks the goroutine when nothing is queued
		n, err := pc.ReadBatch(rmsgs, 0)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) || ignorable(err) {
				continue
			}
			return max(last, stoppedAt), fmt.Errorf("read batch: %w", err)
		}
		c.RecvCalls++
		now = env.now()
		for i := range n {
			tr.response(rbufs[i][:rmsgs[i].N], now)
		}
		if n > 0 {
			last = now
		}
	}
}
