// Package wire parses DNS queries and builds DNS responses directly on byte
// slices, without allocation, for the query hot path.
//
// Names handled here are in "canonical wire form": uncompressed, labels
// prefixed by their length, lowercased ASCII (RFC 4034 §6.2), ending in the
// root label. Everything heavier (zone files, DNSSEC, tests) uses miekg/dns.
package wire

import "encoding/binary"

// Header layout (RFC 1035 §4.1.1).
const (
	HeaderLen = 12

	FlagQR = 1 << 15
	FlagAA = 1 << 10
	FlagTC = 1 << 9
	FlagRD = 1 << 8
	FlagRA = 1 << 7
	FlagAD = 1 << 5
	FlagCD = 1 << 4

	// MaxName is the longest name in wire form (RFC 1035 §2.3.4).
	MaxName = 255
	// MaxLabels bounds the labels of a name: 127 one-byte labels plus the root.
	MaxLabels = 128
)

// Opcodes and response codes used by the server.
const (
	OpcodeQuery  = 0
	OpcodeNotify = 4
	OpcodeUpdate = 5 // RFC 2136

	RcodeSuccess  = 0
	RcodeFormErr  = 1
	RcodeServFail = 2
	RcodeNXDomain = 3
	RcodeNotImp   = 4
	RcodeRefused  = 5
	RcodeYXDomain = 6
	RcodeNotAuth  = 9
	// RcodeBadVers is an extended rcode (RFC 6891 §6.1.3): 16, carried as 1
	// in the OPT record's extended-rcode byte and 0 in the header.
	RcodeBadVers = 16
)

// Record types and classes the server treats specially, and the types
// whose RDATA holds names (see RDataOf).
const (
	TypeA          = 1
	TypeNS         = 2
	TypeMD         = 3
	TypeMF         = 4
	TypeCNAME      = 5
	TypeSOA        = 6
	TypeMB         = 7
	TypeMG         = 8
	TypeMR         = 9
	TypePTR        = 12
	TypeHINFO      = 13
	TypeMINFO      = 14
	TypeMX         = 15
	TypeTXT        = 16
	TypeRP         = 17
	TypeAFSDB      = 18
	TypeRT         = 21
	TypePX         = 26
	TypeAAAA       = 28
	TypeSRV        = 33
	TypeKX         = 36
	TypeDNAME      = 39
	TypeOPT        = 41
	TypeDS         = 43
	TypeRRSIG      = 46
	TypeNSEC       = 47
	TypeDNSKEY     = 48
	TypeNSEC3      = 50
	TypeNSEC3PARAM = 51
	TypeTSIG       = 250
	TypeIXFR       = 251
	TypeAXFR       = 252
	TypeANY        = 255

	ClassINET  = 1
	ClassCHAOS = 3
	ClassANY   = 255

	// OptionNSID is the EDNS option code of RFC 5001.
	OptionNSID = 3
	// OptionEDE is the Extended DNS Error option code of RFC 8914 §2.
	OptionEDE = 15

	// EDE INFO-CODEs (RFC 8914 §4) Tern sends.
	//
	// EDEOther (§4.1) is an error no other code fits; its EXTRA-TEXT
	// says what it is.
	EDEOther = 0
	// The DNSSEC validation failures (§4.2-4.13): an algorithm or digest
	// type the validator does not support (the answer is then
	// insecure), and why data that should validate did not.
	EDEUnsupportedDNSKEYAlgorithm = 1
	EDEUnsupportedDSDigestType    = 2
	EDEDNSSECIndeterminate        = 5
	EDEDNSSECBogus                = 6
	EDESignatureExpired           = 7
	EDESignatureNotYetValid       = 8
	EDEDNSKEYMissing              = 9
	EDERRSIGsMissing              = 10
	EDENoZoneKeyBitSet            = 11
	EDENSECMissing                = 12
	// EDECachedError (§4.14): the resolver answers a SERVFAIL it
	// remembers (RFC 9520) without asking again.
	EDECachedError = 13
	// EDEProhibited (§4.19): the client may not ask (not in a
	// resolver's allow list).
	EDEProhibited = 18
	// EDENotAuthoritative (§4.21): a query without RD to a resolver for
	// data it is not authoritative for, which Unbound refuses with it.
	EDENotAuthoritative = 20
	// EDENoReachableAuthority (§4.23): the resolver could not reach any
	// of the authoritative servers, or they refused to answer.
	EDENoReachableAuthority = 22
	// EDENetworkError (§4.24): an unreachable error came back while
	// talking to an authoritative server (routing, port unreachable).
	EDENetworkError = 23
	// EDEInvalidData (§4.25), which Knot 3.2 sends for a zone that failed
	// to load.
	EDEInvalidData = 24
	// EDEUnsupportedNSEC3Iterations (RFC 9276 §3.2, code 27): NSEC3
	// records with more iterations than the validator accepts.
	EDEUnsupportedNSEC3Iterations = 27
)

// Query is a parsed query. It is reused from packet to packet: Parse
// overwrites every field.
type Query struct {
	ID     uint16
	Flags  uint16 // the header's flag word as received
	Opcode uint8

	// name holds the QNAME lowercased; nameLen is its length and labels
	// the offset of each label in it (the last is the root label).
	name    [MaxName]byte
	nameLen int
	labels  [MaxLabels]uint8
	nlabels int

	QType  uint16
	QClass uint16
	// QuestionEnd is the offset just past the question section, so
	// pkt[HeaderLen:QuestionEnd] is the question as the client wrote it.
	QuestionEnd int

	EDNS        bool   // an OPT record was present
	EDNSVersion uint8  // its version
	UDPSize     uint16 // its advertised payload size
	DO          bool   // the DNSSEC OK bit (RFC 3225)
	NSID        bool   // the client asked for NSID (RFC 5001)

	// TSIG is the offset of the query's TSIG record (RFC 8945), the last
	// of the additional section; 0 when it has none.
	TSIG int
}

// Name returns the lowercased QNAME in wire form. It aliases the Query.
func (q *Query) Name() []byte { return q.name[:q.nameLen] }

// Labels returns the number of labels of the QNAME, the root label included.
func (q *Query) Labels() int { return q.nlabels }

// Suffix returns the QNAME with its first i labels removed.
func (q *Query) Suffix(i int) []byte { return q.name[q.labels[i]:q.nameLen] }

// SuffixOffset returns the offset in the QNAME at which Suffix(i) starts.
func (q *Query) SuffixOffset(i int) int { return int(q.labels[i]) }

// ParseResult says what to do with a packet after Parse.
type ParseResult int

const (
	// Answer: the query parsed; answer it.
	Answer ParseResult = iota
	// Drop: not worth an answer (too short for a header, or a response).
	Drop
	// Error: the header parsed but the rest did not, or the query is not
	// acceptable; answer with the rcode Parse returned.
	Error
)

// Parse parses pkt into q. It returns Drop for packets that get no answer,
// Error with an rcode for malformed or unsupported queries, and Answer
// otherwise. It never allocates and never reads past pkt.
func (q *Query) Parse(pkt []byte) (ParseResult, int) {
	q.nameLen, q.nlabels, q.QuestionEnd = 0, 0, HeaderLen
	q.QType, q.QClass = 0, 0
	q.EDNS, q.EDNSVersion, q.UDPSize, q.DO, q.NSID = false, 0, 0, false, false
	q.TSIG = 0
	// RFC 1035 §4.1.1: a message shorter than its header is not DNS.
	if len(pkt) < HeaderLen {
		return Drop, 0
	}
	q.ID = binary.BigEndian.Uint16(pkt)
	q.Flags = binary.BigEndian.Uint16(pkt[2:])
	q.Opcode = uint8(q.Flags>>11) & 0xF
	// A response is never answered: answering it invites reflection loops.
	if q.Flags&FlagQR != 0 {
		return Drop, 0
	}
	qd := binary.BigEndian.Uint16(pkt[4:])
	an := binary.BigEndian.Uint16(pkt[6:])
	ns := binary.BigEndian.Uint16(pkt[8:])
	ar := binary.BigEndian.Uint16(pkt[10:])
	if qd != 1 {
		if qd == 0 {
			// No question: still look for an OPT so the FORMERR
			// carries EDNS, as Knot's does.
			q.scanOPT(pkt, HeaderLen, int(an)+int(ns), int(ar))
		}
		if q.Opcode != OpcodeQuery && q.Opcode != OpcodeNotify && q.Opcode != OpcodeUpdate {
			return Error, RcodeNotImp
		}
		// RFC 2136 §3.1.1: an UPDATE names one zone, else FORMERR.
		return Error, RcodeFormErr
	}
	off, ok := q.parseQName(pkt, HeaderLen)
	if !ok || off+4 > len(pkt) {
		return Error, RcodeFormErr
	}
	q.QType = binary.BigEndian.Uint16(pkt[off:])
	q.QClass = binary.BigEndian.Uint16(pkt[off+2:])
	off += 4
	q.QuestionEnd = off
	// Other opcodes are refused after the OPT record is found, so that
	// the NOTIMP answer carries EDNS too.
	notImp := q.Opcode != OpcodeQuery
	// Answer and authority records of a query carry nothing we use, but
	// they must be well formed for the additional section to be found.
	for i := 0; i < int(an)+int(ns); i++ {
		var rtype uint16
		if off, rtype, ok = SkipRecord(pkt, off); !ok {
			return Error, RcodeFormErr
		}
		// RFC 6891 §6.1.1: the OPT record goes in the additional
		// section; anywhere else the message is malformed (Knot
		// answers FORMERR, without EDNS). RFC 8945 §5.1: so does
		// the TSIG record.
		if rtype == TypeOPT || rtype == TypeTSIG {
			return Error, RcodeFormErr
		}
	}
	for i := 0; i < int(ar); i++ {
		start := off
		if off, ok = skipName(pkt, off); !ok || off+10 > len(pkt) {
			return Error, RcodeFormErr
		}
		rtype := binary.BigEndian.Uint16(pkt[off:])
		rdlen := int(binary.BigEndian.Uint16(pkt[off+8:]))
		rdata := off + 10
		if rdata+rdlen > len(pkt) {
			return Error, RcodeFormErr
		}
		if rtype == TypeOPT {
			// RFC 6891 §6.1.1: more than one OPT, or an OPT whose owner
			// is not the root, is a FORMERR.
			if q.EDNS || off-start != 1 || pkt[start] != 0 {
				return Error, RcodeFormErr
			}
			q.EDNS = true
			q.UDPSize = binary.BigEndian.Uint16(pkt[off+2:])
			q.EDNSVersion = pkt[off+5]
			q.DO = pkt[off+6]&0x80 != 0
			if !q.parseOptions(pkt[rdata : rdata+rdlen]) {
				return Error, RcodeFormErr
			}
		} else if rtype == TypeTSIG {
			// RFC 8945 §5.1: a TSIG record is the last record of
			// the message; one elsewhere, or a second, is FORMERR.
			if i != int(ar)-1 {
				return Error, RcodeFormErr
			}
			q.TSIG = start
		}
		off = rdata + rdlen
	}
	if notImp {
		return Error, RcodeNotImp
	}
	if off != len(pkt) {
		// Trailing bytes after the last record: the counts lie.
		return Error, RcodeFormErr
	}
	// RFC 6891 §6.1.3: a version we do not implement gets BADVERS.
	if q.EDNS && q.EDNSVersion > 0 {
		return Error, RcodeBadVers
	}
	return Answer, 0
}

// parseQName reads the question name at off into q.name, lowercased. The
// question is the first name of a message, so a compression pointer there
// can only point forward or at itself: it is rejected.
func (q *Query) parseQName(pkt []byte, off int) (int, bool) {
	n := 0
	for {
		if off >= len(pkt) || q.nlabels >= MaxLabels {
			return 0, false
		}
		l := int(pkt[off])
		if l > 63 {
			return 0, false
		}
		if n+l+1 > MaxName || off+l+1 > len(pkt) {
			return 0, false
		}
		q.labels[q.nlabels] = uint8(n)
		q.nlabels++
		q.name[n] = byte(l)
		for i := 1; i <= l; i++ {
			c := pkt[off+i]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			q.name[n+i] = c
		}
		n += l + 1
		off += l + 1
		if l == 0 {
			q.nameLen = n
			return off, true
		}
	}
}

// parseOptions walks the EDNS options of an OPT record (RFC 6891 §6.1.2).
// Unknown options are ignored; a malformed option list is an error.
func (q *Query) parseOptions(opts []byte) bool {
	for len(opts) > 0 {
		if len(opts) < 4 {
			return false
		}
		code := binary.BigEndian.Uint16(opts)
		l := int(binary.BigEndian.Uint16(opts[2:]))
		if 4+l > len(opts) {
			return false
		}
		if code == OptionNSID {
			q.NSID = true
		}
		opts = opts[4+l:]
	}
	return true
}

// skipName steps over a possibly compressed name without following
// pointers: a pointer ends a name.
func skipName(pkt []byte, off int) (int, bool) {
	for n := 0; n < MaxLabels; n++ {
		if off >= len(pkt) {
			return 0, false
		}
		l := int(pkt[off])
		switch {
		case l == 0:
			return off + 1, true
		case l&0xC0 == 0xC0:
			if off+2 > len(pkt) {
				return 0, false
			}
			return off + 2, true
		case l > 63:
			return 0, false
		}
		off += l + 1
	}
	return 0, false
}

// SkipRecord steps over the resource record at off of pkt without
// reading its names; it returns the offset after it and its type.
func SkipRecord(pkt []byte, off int) (int, uint16, bool) {
	off, ok := skipName(pkt, off)
	if !ok || off+10 > len(pkt) {
		return 0, 0, false
	}
	end := off + 10 + int(binary.BigEndian.Uint16(pkt[off+8:]))
	if end > len(pkt) {
		return 0, 0, false
	}
	return end, binary.BigEndian.Uint16(pkt[off:]), true
}

// scanOPT finds an OPT record in a message that is already being
// rejected, to echo EDNS in the error; it changes nothing else.
func (q *Query) scanOPT(pkt []byte, off, skip, ar int) {
	var ok bool
	for i := 0; i < skip; i++ {
		if off, _, ok = SkipRecord(pkt, off); !ok {
			return
		}
	}
	for i := 0; i < ar; i++ {
		start := off
		if off, ok = skipName(pkt, off); !ok || off+10 > len(pkt) {
			return
		}
		end := off + 10 + int(binary.BigEndian.Uint16(pkt[off+8:]))
		if end > len(pkt) {
			return
		}
		if binary.BigEndian.Uint16(pkt[off:]) == TypeOPT && off-start == 1 && !q.EDNS {
			q.EDNS = true
			q.UDPSize = binary.BigEndian.Uint16(pkt[off+2:])
			q.DO = pkt[off+6]&0x80 != 0
		}
		off = end
	}
}

// SkipName steps over the possibly compressed name at pkt[off] (a
// pointer ends it, unfollowed) and returns the offset after it.
func SkipName(pkt []byte, off int) (int, bool) { return skipName(pkt, off) }
