package server

import "net"

// Internals for the tests of package server_test, which import auth (auth
// imports server, so they cannot live in package server).

// RaceEnabled is raceEnabled.
const RaceEnabled = raceEnabled

// Batch is the datagrams a worker reads at a time.
const Batch = batch

// RxSize is rxSize.
const RxSize = rxSize

// ReusePort is reusePort.
var ReusePort = reusePort

// Conns is the number of TCP connections s holds open.
func Conns(s *Server) int64 { return s.conns.Load() }

// Admitted is the number of s's TCP connections that count against
// TCPMaxConnections: those open, less those closed to make room whose
// goroutines have not yet let go of them (admit's count).
func Admitted(s *Server) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns.Load() - int64(s.reaping)
}

// TCPListeners are s's TCP listeners.
func TCPListeners(s *Server) []net.Listener { return s.tcp }

// IdleConns is the number of s's TCP connections waiting between
// messages (those reapIdle may close).
func IdleConns(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, tc := range s.active {
		if tc.idle.Load() > 0 {
			n++
		}
	}
	return n
}
