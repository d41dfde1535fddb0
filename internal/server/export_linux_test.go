//go:build linux && !ternportable

package server

// WorkerFDs are the sockets of s's UDP workers.
func WorkerFDs(s *Server) []int {
	var fds []int
	for _, w := range s.workers {
		fds = append(fds, w.fd)
	}
	return fds
}

// WorkerPktinfo says, per UDP worker of s, whether it asks for each
// datagram's destination address.
func WorkerPktinfo(s *Server) []bool {
	var p []bool
	for _, w := range s.workers {
		p = append(p, w.pktinfo)
	}
	return p
}

// AnswersFromQueryAddress: a wildcard socket answers from the address a
// datagram was sent to (IP_PKTINFO; udp_other.go does not).
const AnswersFromQueryAddress = true

// WorkerPolled says, per UDP worker of s, whether its socket is in the
// netpoller (it waited there with deferred answers outstanding).
func WorkerPolled(s *Server) []bool {
	var p []bool
	for _, w := range s.workers {
		p = append(p, w.pf.Load() != nil)
	}
	return p
}

// DeferredPending is, per UDP worker of s, how many of its deferred
// answers are not yet closed or sent.
func DeferredPending(s *Server) []int32 {
	var p []int32
	for _, w := range s.workers {
		p = append(p, w.sock.pending.Load())
	}
	return p
}
