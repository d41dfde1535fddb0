package perf

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// EDNSOption is one EDNS(0) option to attach to every query (dnsperf's -E).
type EDNSOption struct {
	Code uint16
	Data []byte
}

// ParseEDNSOption parses dnsperf's -E argument, "code:hexvalue" (decimal
// option code, value in hex, possibly empty).
func ParseEDNSOption(s string) (EDNSOption, error) {
	code, val, ok := strings.Cut(s, ":")
	if !ok {
		return EDNSOption{}, fmt.Errorf("EDNS option %q: want code:hexvalue", s)
	}
	c, err := strconv.ParseUint(code, 10, 16)
	if err != nil {
		return EDNSOption{}, fmt.Errorf("EDNS option code %q: %w", code, err)
	}
	data, err := hex.DecodeString(val)
	if err != nil {
		return EDNSOption{}, fmt.Errorf("EDNS option value %q: %w", val, err)
	}
	return EDNSOption{Code: uint16(c), Data: data}, nil
}

// EncodeOptions controls how queries are encoded.
type EncodeOptions struct {
	EDNS       bool         // add an OPT record
	UDPSize    uint16       // advertised EDNS UDP payload size
	DO         bool         // DNSSEC OK bit; implies EDNS
	Options    []EDNSOption // EDNS options; imply EDNS
	NoRecurse  bool         // clear RD (dnsperf sets it)
	MaxMsgSize int          // reject queries longer than this (0: 65535)
}

// Encoding errors, wrapped with the offending name.
var (
	errEmptyLabel  = errors.New("empty label")
	errLabelLong   = errors.New("label longer than 63 octets")
	errNameLong    = errors.New("name longer than 255 octets")
	errBadEscape   = errors.New("bad escape sequence")
	errMsgTooLarge = errors.New("query message too large")
)

// AppendQuery appends the wire form of a query for name/qtype with ID 0 to
// buf. The ID is patched in at send time, so one encoding serves every send.
func AppendQuery(buf []byte, name string, qtype uint16, o EncodeOptions) ([]byte, error) {
	start := len(buf)
	var flags uint16 = 0x0100 // RD, as dnsperf sends
	if o.NoRecurse {
		flags = 0
	}
	edns := o.EDNS || o.DO || len(o.Options) > 0
	var arcount uint16
	if edns {
		arcount = 1
	}
	buf = binary.BigEndian.AppendUint16(buf, 0) // ID
	buf = binary.BigEndian.AppendUint16(buf, flags)
	buf = binary.BigEndian.AppendUint16(buf, 1) // QDCOUNT
	buf = binary.BigEndian.AppendUint16(buf, 0) // ANCOUNT
	buf = binary.BigEndian.AppendUint16(buf, 0) // NSCOUNT
	buf = binary.BigEndian.AppendUint16(buf, arcount)
	var err error
	buf, err = appendName(buf, name)
	if err != nil {
		return buf[:start], fmt.Errorf("encode %q: %w", name, err)
	}
	buf = binary.BigEndian.AppendUint16(buf, qtype)
	buf = binary.BigEndian.AppendUint16(buf, 1) // class IN
	if edns {
		size := o.UDPSize
		if size < 512 {
			size = 512 // RFC 6891: values below 512 are treated as 512
		}
		var ttl uint32 // extended rcode 0, version 0
		if o.DO {
			ttl |= 0x8000
		}
		rdlen := 0
		for _, opt := range o.Options {
			rdlen += 4 + len(opt.Data)
		}
		if rdlen > 0xffff {
			return buf[:start], fmt.Errorf("encode %q: EDNS options: %w", name, errMsgTooLarge)
		}
		buf = append(buf, 0) // root owner
		buf = binary.BigEndian.AppendUint16(buf, 41)
		buf = binary.BigEndian.AppendUint16(buf, size)
		buf = binary.BigEndian.AppendUint32(buf, ttl)
		buf = binary.BigEndian.AppendUint16(buf, uint16(rdlen))
		for _, opt := range o.Options {
			buf = binary.BigEndian.AppendUint16(buf, opt.Code)
			buf = binary.BigEndian.AppendUint16(buf, uint16(len(opt.Data)))
			buf = append(buf, opt.Data...)
		}
	}
	limit := o.MaxMsgSize
	if limit <= 0 || limit > 65535 {
		limit = 65535
	}
	if len(buf)-start > limit {
		return buf[:start], fmt.Errorf("encode %q: %d octets: %w", name, len(buf)-start, errMsgTooLarge)
	}
	return buf, nil
}

// appendName appends the uncompressed wire form of a presentation-format
// name (RFC 1035 escapes \X and \DDD allowed). A missing trailing dot is
// accepted: query-file names are always taken as absolute.
func appendName(buf []byte, name string) ([]byte, error) {
	start := len(buf)
	name = trimRootDot(name)
	if name == "" {
		return append(buf, 0), nil
	}
	lenAt := len(buf)
	buf = append(buf, 0) // length octet of the current label, set at its end
	labelLen := 0
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch c {
		case '.':
			if labelLen == 0 {
				return buf[:start], errEmptyLabel
			}
			buf[lenAt] = byte(labelLen)
			lenAt = len(buf)
			buf = append(buf, 0)
			labelLen = 0
			continue
		case '\\':
			if i+1 >= len(name) {
				return buf[:start], errBadEscape
			}
			if d := name[i+1]; d < '0' || d > '9' {
				c = d
				i++
				break
			}
			if i+3 >= len(name) {
				return buf[:start], errBadEscape
			}
			v := 0
			for _, x := range []byte(name[i+1 : i+4]) {
				if x < '0' || x > '9' {
					return buf[:start], errBadEscape
				}
				v = v*10 + int(x-'0')
			}
			if v > 255 {
				return buf[:start], errBadEscape
			}
			c = byte(v)
			i += 3
		}
		buf = append(buf, c)
		labelLen++
		if labelLen > 63 {
			return buf[:start], errLabelLong
		}
	}
	if labelLen == 0 {
		return buf[:start], errEmptyLabel
	}
	buf[lenAt] = byte(labelLen)
	buf = append(buf, 0)
	if len(buf)-start > 255 {
		return buf[:start], errNameLong
	}
	return buf, nil
}

// trimRootDot removes one trailing unescaped dot (an odd number of
// backslashes before it means the dot belongs to the last label).
func trimRootDot(name string) string {
	if !strings.HasSuffix(name, ".") {
		return name
	}
	n := 0
	for i := len(name) - 2; i >= 0 && name[i] == '\\'; i-- {
		n++
	}
	if n%2 == 1 {
		return name
	}
	return name[:len(name)-1]
}
