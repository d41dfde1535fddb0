package auth

import "github.com/tern-dns/tern/internal/wire"

// Wire forms of the CHAOS identity names (BIND's convention, and
// RFC 4892 §2.3 for id.server. and version.server.).
const (
	chaosIDServer      = "\x02id\x06server\x00"
	chaosHostnameBind  = "\x08hostname\x04bind\x00"
	chaosVersionServer = "\x07version\x06server\x00"
	chaosVersionBind   = "\x07version\x04bind\x00"
)

// answerChaos answers CHAOS class TXT queries for the server's identity.
func (r *Responder) answerChaos(s *Scratch, flags uint16) uint16 {
	q := &s.q
	if !r.chaos {
		return flags | wire.RcodeRefused
	}
	var rdata []byte
	switch string(q.Name()) {
	case chaosIDServer, chaosHostnameBind:
		rdata = r.id
	case chaosVersionServer, chaosVersionBind:
		rdata = r.version
	default:
		return flags | wire.RcodeRefused
	}
	if rdata == nil {
		return flags | wire.RcodeRefused
	}
	if q.QType != wire.TypeTXT && q.QType != wire.TypeANY {
		return flags | wire.FlagAA
	}
	b := &s.b
	t := s.tail[:0]
	t = append(t, 0, wire.TypeTXT, 0, wire.ClassCHAOS, 0, 0, 0, 0, byte(len(rdata)>>8), byte(len(rdata)))
	b.RRAt(wire.HeaderLen, t)
	b.Raw(rdata)
	b.CountAnswer(1)
	return flags | wire.FlagAA
}
