package wire

// SerialCompare orders two 32-bit serial numbers in RFC 1982 serial
// number arithmetic: it returns -1 when a is less than b, 0 when they are
// equal and +1 when a is greater. It is the one comparison for SOA serials
// (RFC 1982 §3.2, RFC 1034 §4.3.5, RFC 1995) and RRSIG inception and
// expiration times (RFC 4034 §3.1.5).
//
// RFC 1982 §3.2: a is greater than b when their difference, taken as a
// signed 32-bit number, is positive, so the order wraps at 2^32 (0 is
// greater than 2^32-1). Two serials exactly 2^31 apart are undefined:
// neither is greater. SerialCompare returns -1 for them, in either order,
// so a caller asking "is a greater" is told no (a transfer is not
// taken) and one asking "did it go down" is told yes (the reload is
// warned about).
func SerialCompare(a, b uint32) int {
	switch d := int32(a - b); {
	case d > 0:
		return 1
	case d == 0:
		return 0
	}
	return -1
}
