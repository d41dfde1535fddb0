//go:build !linux || ternportable

package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

// poller is empty here: each query waits on its own socket through the
// netpoller.
type poller struct{}

// exchangeUDP sends the query from a new socket, so from a new source port
// chosen at random by the kernel (RFC 5452 §9.2; Linux picks ephemeral
// ports at random), and waits for the matching answer until deadline at
// most, or until ctx is done.
func (c *Client) exchangeUDP(ctx context.Context, deadline time.Time, server netip.AddrPort, q dns.Question, h header) (*dns.Msg, error) {
	bp, buf := answerBuf(h)
	defer exchangeBuffers.Put(bp)
	id, pkt, err := query(q, h, bp.query[:])
	if err != nil {
		return nil, err
	}
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(server))
	if err != nil {
		return nil, fmt.Errorf("udp to %s: %w", server, err)
	}
	defer conn.Close()
	// ctx's own deadline, if earlier, ends ctx, which stop's function
	// sees.
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := conn.Write(pkt); err != nil {
		return nil, fmt.Errorf("udp to %s: %w", server, err)
	}
	for {
		n, _, flags, from, err := conn.ReadMsgUDPAddrPort(buf, nil)
		if err != nil {
			return nil, fmt.Errorf("udp to %s: %w", server, ioError(ctx, err))
		}
		// A connected socket only receives from the server, but the check
		// costs nothing and does not depend on the kernel.
		if from.Addr().Unmap() != server.Addr().Unmap() || from.Port() != server.Port() {
			continue
		}
		r, err := h.accept(&bp.reader, buf[:n], flags&syscall.MSG_TRUNC == 0, id, q)
		if err == nil || errors.Is(err, errOversize) {
			return r, err
		}
		// RFC 5452 §9.1: a packet that does not match is dropped and the
		// wait for the real answer goes on.
	}
}
