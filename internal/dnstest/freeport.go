package dnstest

import (
	"fmt"
	"net"
	"testing"
)

// FreePort returns a port free on host for both TCP and UDP at the time
// of the call, for a peer server (knotd, named) that must be given one.
func FreePort(t testing.TB, host string) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", net.JoinHostPort(host, fmt.Sprint(port)))
		l.Close()
		if err == nil {
			u.Close()
			return port
		}
	}
	t.Fatal("no free port")
	return 0
}
