//go:build !linux || ternportable

package upstream

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/miekg/dns"
)

// poller is empty here: each query waits on its own socket through the
// netpoller.
type poller struct{}

// exchangeUDP sends the query from a new socket, so from a new source port
// chosen at random by the kernel (RFC 5452 §9.2; Linux picks ephemeral
// ports at random), and waits for the matching answer.
func (c *Client) exchangeUDP(ctx context.Context, server netip.AddrPort, q dns.Question, h header) (*dns.Msg, error) {
	m, pkt, err := query(q, h)
	if err != nil {
		return nil, err
	}
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(server))
	if err != nil {
		return nil, fmt.Errorf("udp to %s: %w", server, err)
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := conn.Write(pkt); err != nil {
		return nil, fmt.Errorf("udp to %s: %w", server, err)
	}
	bp := udpBuffers.Get().(*[65535]byte)
	defer udpBuffers.Put(bp)
	buf := bp[:]
	for {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return nil, fmt.Errorf("udp to %s: %w", server, ioError(ctx, err))
		}
		// A connected socket only receives from the server, but the check
		// costs nothing and does not depend on the kernel.
		if from.Addr().Unmap() != server.Addr().Unmap() || from.Port() != server.Port() {
			continue
		}
		if r, err := h.validate(buf[:n], m.Id, q); err == nil {
			return r, nil
		}
		// RFC 5452 §9.1: a packet that does not match is dropped and the
		// wait for the real answer goes on.
	}
}
