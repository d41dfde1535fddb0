//go:build darwin || freebsd

package server

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// dontFragment makes the kernel send datagrams whole or not at all: DF
// set on IPv4, no fragment header on IPv6 (RFC 9715 §3.1, R1 and R2),
// with IP_DONTFRAG and IPV6_DONTFRAG (RFC 3542 §11.2).
func dontFragment(fd int, network string) error {
	if network != "udp4" {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_DONTFRAG, 1); err != nil && network == "udp6" {
			return fmt.Errorf("IPV6_DONTFRAG: %w", err)
		}
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_DONTFRAG, 1); err != nil && network == "udp4" {
		return fmt.Errorf("IP_DONTFRAG: %w", err)
	}
	return nil
}
