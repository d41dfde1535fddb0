package server

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// dontFragment makes the kernel send datagrams whole or not at all: DF
// set on IPv4, no fragment header on IPv6 (RFC 9715 §3.1, R1 and R2).
// PMTUDISC_PROBE does that while ignoring path-MTU updates, so that
// forged ICMP "fragmentation needed" messages cannot shrink what we send.
// Without DF the kernel also draws an IP ID for every datagram from a
// shared table, a cost per packet that DF avoids.
func dontFragment(fd int, network string) error {
	if network != "udp4" {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_PROBE); err != nil && network == "udp6" {
			return fmt.Errorf("IPV6_MTU_DISCOVER: %w", err)
		}
	}
	// On an IPv6 socket this covers the IPv4 traffic of a dual-stack one.
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_PROBE); err != nil && network == "udp4" {
		return fmt.Errorf("IP_MTU_DISCOVER: %w", err)
	}
	return nil
}
