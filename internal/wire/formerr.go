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
