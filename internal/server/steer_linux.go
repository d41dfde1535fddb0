package server

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// skfNetOff is SKF_NET_OFF: a classic BPF load at skfNetOff+k reads
// byte k of the datagram's IP header (linux/filter.h), wherever the
// program runs in the packet.
const skfNetOff = 0xfff00000 // -0x100000

// steerProgram is a classic BPF program for an SO_REUSEPORT group of n
// sockets that returns the index of the socket a datagram goes to: a
// hash of its source address's first v4 bits (IPv4) or first v6 bits,
// at most 64, (IPv6), modulo n. Every datagram of a client prefix, from
// whatever source port, then goes to the same socket. The prefix is
// read from the IP header (SKF_NET_OFF), which a dual-stack IPv6
// socket's IPv4 datagrams have too.
func steerProgram(n, v4, v6 int) []unix.SockFilter {
	v6 = min(v6, 64)
	mask := func(bits int) uint32 {
		if bits <= 0 {
			return 0
		}
		return ^uint32(0) << (32 - min(bits, 32))
	}
	ins := func(code uint16, jt, jf uint8, k uint32) unix.SockFilter {
		return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
	}
	return []unix.SockFilter{
		/* 0 */ ins(unix.BPF_LD|unix.BPF_B|unix.BPF_ABS, 0, 0, skfNetOff+0), // version and IHL
		/* 1 */ ins(unix.BPF_ALU|unix.BPF_RSH|unix.BPF_K, 0, 0, 4),
		/* 2 */ ins(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, 3, 0, 6), // IPv6: to 6
		/* 3 */ ins(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, 0, 0, skfNetOff+12), // IPv4 source
		/* 4 */ ins(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, 0, 0, mask(v4)),
		/* 5 */ ins(unix.BPF_JMP|unix.BPF_JA, 0, 0, 5), // to 11
		/* 6 */ ins(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, 0, 0, skfNetOff+8), // IPv6 source, bits 0-31
		/* 7 */ ins(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, 0, 0, mask(v6)),
		/* 8 */ ins(unix.BPF_MISC|unix.BPF_TAX, 0, 0, 0),
		/* 9 */ ins(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, 0, 0, skfNetOff+12), // bits 32-63
		/* 10 */ ins(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, 0, 0, mask(v6-32)),
		// 11 for IPv4 (X is 0 there: xor leaves A); IPv6 mixes its words.
		/* 11 */ ins(unix.BPF_ALU|unix.BPF_XOR|unix.BPF_X, 0, 0, 0),
		/* 12 */ ins(unix.BPF_ALU|unix.BPF_MUL|unix.BPF_K, 0, 0, 0x9e3779b1), // Fibonacci hashing
		/* 13 */ ins(unix.BPF_ALU|unix.BPF_RSH|unix.BPF_K, 0, 0, 16),
		/* 14 */ ins(unix.BPF_ALU|unix.BPF_MOD|unix.BPF_K, 0, 0, uint32(n)),
		/* 15 */ ins(unix.BPF_RET|unix.BPF_A, 0, 0, 0),
	}
}

// steer makes the SO_REUSEPORT group of conns (an address's UDP
// sockets, one per worker) hand each datagram to the socket of its
// client's prefix (steerProgram), instead of the kernel's hash of the
// source address and port.
func steer(conns []*net.UDPConn, v4, v6 int) error {
	if len(conns) < 2 {
		return nil
	}
	prog := steerProgram(len(conns), v4, v6)
	raw, err := conns[0].SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_CBPF,
			&unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]})
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("SO_ATTACH_REUSEPORT_CBPF: %w", err)
	}
	return nil
}
