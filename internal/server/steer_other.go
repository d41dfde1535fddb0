//go:build !linux

package server

import (
	"errors"
	"net"
)

// steer is not done off Linux (no SO_ATTACH_REUSEPORT_CBPF): the
// workers' sockets are the portable loop's.
func steer(conns []*net.UDPConn, v4, v6 int) error {
	if len(conns) < 2 {
		return nil
	}
	return errors.New("steering datagrams by client prefix needs Linux")
}
