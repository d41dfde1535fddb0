package wire

import "encoding/binary"

// ReplyFlags returns the header flags of a response to a query with
// flags: QR set, and the opcode and RD copied (RFC 1035 §4.1.1), CD too
// (RFC 4035 §3.2.2 asks it of everyone who copies a query into a reply);
// the rcode is left to the caller.
func ReplyFlags(flags uint16) uint16 {
	return FlagQR | flags&(0x7800|FlagRD|FlagCD)
}

// FormErr writes into out the FORMERR response to a query that could not
// be read whole, a UDP datagram longer than the server's receive buffer,
// of which pkt holds the first bytes: the header (ID and ReplyFlags) and,
// when pkt holds one whole, the question as the client wrote it, which is
// how Knot answers a malformed query. There is no OPT record: the
// query's, if any, lies past what was read. It returns nil for what gets
// no answer: fewer bytes than a header, or a response (see Parse).
func FormErr(pkt, out []byte) []byte {
	if len(pkt) < HeaderLen {
		return nil
	}
	flags := binary.BigEndian.Uint16(pkt[2:])
	if flags&FlagQR != 0 {
		return nil
	}
	out = append(out[:0], pkt[0], pkt[1], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint16(out[2:], ReplyFlags(flags)|RcodeFormErr)
	if binary.BigEndian.Uint16(pkt[4:]) == 1 {
		var q Query
		if end, ok := q.parseQName(pkt, HeaderLen); ok && end+4 <= len(pkt) {
			out[5] = 1
			out = append(out, pkt[HeaderLen:end+4]...)
		}
	}
	return out
}

// ErrorReply writes the body of a response that carries no data, after
// Header: the question of q (parsed from pkt) when it parsed whole, and
// the flags with rcode's lower 4 bits. It returns rcode's upper 8 bits,
// which RFC 6891 §6.1.3 puts in the OPT record (BADVERS is 16: 1 there,
// 0 in the header); the caller then writes the OPT when the query had
// one or the bits are not 0.
func (b *Builder) ErrorReply(pkt []byte, q *Query, flags uint16, rcode int) (ext uint8) {
	if q.QuestionEnd > HeaderLen {
		b.Question(pkt[HeaderLen:q.QuestionEnd], q)
	}
	b.SetFlags(flags | uint16(rcode&0xF))
	return uint8(rcode >> 4)
}
