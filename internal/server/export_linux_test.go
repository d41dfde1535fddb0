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
