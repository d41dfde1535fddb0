//go:build linux && !ternportable

package server_test

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/zone"
)

// TestDontFragment: with DontFragment the UDP sockets send whole datagrams
// or nothing (PMTUDISC_PROBE: DF on IPv4, no fragments on IPv6); without
// it they keep the kernel's default.
func TestDontFragment(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		level int
		opt   int
	}{
		{"127.0.0.1:0", unix.IPPROTO_IP, unix.IP_MTU_DISCOVER},
		{"[::1]:0", unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER},
	} {
		for _, df := range []bool{true, false} {
			s := server.New(server.Config{Listen: []string{tc.addr}, Workers: 2, DontFragment: df}, authHandler(auth.New(zone.NewSet(), auth.Options{})))
			if err := s.Start(context.Background()); err != nil {
				if strings.Contains(tc.addr, "::1") {
					t.Logf("no IPv6 loopback: %v", err)
					continue
				}
				t.Fatal(err)
			}
			if len(server.WorkerFDs(s)) != 2 {
				t.Fatalf("%d workers, want 2", len(server.WorkerFDs(s)))
			}
			for _, fd := range server.WorkerFDs(s) {
				v, gerr := unix.GetsockoptInt(fd, tc.level, tc.opt)
				if gerr != nil {
					t.Fatal(gerr)
				}
				if probe := v == unix.IP_PMTUDISC_PROBE; probe != df {
					t.Errorf("%s DontFragment=%v: MTU discovery mode %d", tc.addr, df, v)
				}
			}
			s.Close()
		}
	}
}

// TestWorkerLeavesNetpoller: a UDP worker's socket is in no epoll set of
// the process, so the kernel runs no epoll callback for its datagrams
// (see udpWorker), while the TCP listener, served by the netpoller, is in
// one (which shows that the check sees the runtime's set).
func TestWorkerLeavesNetpoller(t *testing.T) {
	s := server.New(server.Config{Listen: []string{"127.0.0.1:0"}, Workers: 2}, authHandler(auth.New(zone.NewSet(), auth.Options{})))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	watched := epollTargets(t)
	if len(server.WorkerFDs(s)) != 2 {
		t.Fatalf("%d workers, want 2", len(server.WorkerFDs(s)))
	}
	for _, fd := range server.WorkerFDs(s) {
		if ino := inode(t, fd); watched[ino] {
			t.Errorf("UDP socket inode %x in an epoll set", ino)
		}
	}
	raw, err := server.TCPListeners(s)[0].(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ino uint64
	raw.Control(func(fd uintptr) { ino = inode(t, int(fd)) })
	if !watched[ino] {
		t.Errorf("TCP listener inode %x in no epoll set: the check cannot see the netpoller's", ino)
	}
}

// epollTargets returns the inodes of the files in this process's epoll
// sets, from /proc/self/fdinfo ("tfd: ... ino:HEX" lines).
func epollTargets(t *testing.T) map[uint64]bool {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	targets := map[uint64]bool{}
	for _, fd := range fds {
		link, err := os.Readlink("/proc/self/fd/" + fd.Name())
		if err != nil || link != "anon_inode:[eventpoll]" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + fd.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(info), "\n") {
			if !strings.HasPrefix(line, "tfd:") {
				continue
			}
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, "ino:"); ok {
					ino, err := strconv.ParseUint(v, 16, 64)
					if err != nil {
						t.Fatalf("fdinfo line %q: %v", line, err)
					}
					targets[ino] = true
				}
			}
		}
	}
	return targets
}

func inode(t *testing.T, fd int) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// TestPktinfoOnlyOnWildcard: only sockets bound to a wildcard address ask
// for each datagram's destination; those bound to one address keep the
// path without control messages.
func TestPktinfoOnlyOnWildcard(t *testing.T) {
	for _, tc := range []struct {
		listen string
		want   bool
	}{
		{"127.0.0.1:0", false}, {"0.0.0.0:0", true}, {"[::1]:0", false}, {"[::]:0", true},
	} {
		s := server.New(server.Config{Listen: []string{tc.listen}, Workers: 1}, authHandler(auth.New(zone.NewSet(), auth.Options{})))
		if err := s.Start(context.Background()); err != nil {
			if strings.HasPrefix(tc.listen, "[") {
				t.Logf("no IPv6: %v", err)
				continue
			}
			t.Fatal(err)
		}
		if got := server.WorkerPktinfo(s)[0]; got != tc.want {
			t.Errorf("%s: pktinfo %v, want %v", tc.listen, got, tc.want)
		}
		s.Close()
	}
}

// TestUDPWorkersCount: UDPWorkers tells as many workers as Start runs,
// with Workers set and with its default (one per CPU), for each address.
func TestUDPWorkersCount(t *testing.T) {
	for _, workers := range []int{3, 0} {
		s := start(t, server.Config{Listen: []string{"127.0.0.1:0", "127.0.0.2:0"}, Workers: workers})
		if got, want := s.UDPWorkers(), len(server.WorkerFDs(s)); got != want {
			t.Errorf("Workers %d: UDPWorkers %d, Start ran %d", workers, got, want)
		}
	}
}
