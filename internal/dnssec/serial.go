package dnssec

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
)

// SerialPolicy says how a new version of a zone the server changes (a
// signed version, a dynamic update) gets its SOA serial (Knot's
// serial-policy).
type SerialPolicy uint8

// The serial policies. The zero value is SerialIncrement, the default.
const (
	// SerialIncrement serves the previous serial plus one.
	SerialIncrement SerialPolicy = iota
	// SerialUnixtime serves the current Unix time in seconds, or the
	// previous serial plus one when that is not greater.
	SerialUnixtime
	// SerialDateserial serves the date as YYYYMMDD00 (UTC), or the
	// previous serial plus one when that is not greater: the second
	// change of a day is YYYYMMDD01, and so on (Knot's dateserial).
	SerialDateserial
)

// ParseSerialPolicy reads a serial-policy setting: "increment" (or "",
// the default), "unixtime" or "dateserial", in any case.
func ParseSerialPolicy(s string) (SerialPolicy, error) {
	switch strings.ToLower(s) {
	case "", "increment":
		return SerialIncrement, nil
	case "unixtime":
		return SerialUnixtime, nil
	case "dateserial":
		return SerialDateserial, nil
	}
	return 0, fmt.Errorf("serial policy %q (want increment, unixtime or dateserial)", s)
}

// String returns the policy's configuration name.
func (p SerialPolicy) String() string {
	switch p {
	case SerialUnixtime:
		return "unixtime"
	case SerialDateserial:
		return "dateserial"
	}
	return "increment"
}

// Next returns the serial of a version following one with serial cur,
// made at now: greater than cur in RFC 1982 order, as secondaries need
// to see a new version (RFC 1034 §4.3.5).
func (p SerialPolicy) Next(cur uint32, now time.Time) uint32 {
	var t uint32
	switch p {
	case SerialUnixtime:
		// Serials are 32 bits: past 2106 the Unix time wraps, which
		// RFC 1982 arithmetic handles as long as versions come more
		// often than every 68 years.
		t = uint32(now.Unix())
	case SerialDateserial:
		y, m, d := now.UTC().Date()
		t = uint32(((y*100+int(m))*100 + d) * 100)
	}
	if t != 0 && wire.SerialCompare(t, cur) > 0 {
		return t
	}
	// RFC 1982 §3.1: adding 1 wraps from 2^32-1 to 0.
	return cur + 1
}

// nextSerial returns the serial of a new version of a signed zone whose
// file has serial file and whose last served version, if any, had serial
// last. The result is greater (RFC 1982) than both, so secondaries see a
// new version (RFC 1034 §4.3.5) and it never collides with the file's
// own serial, which names the unsigned content (as in Knot, whose first
// signing of a zone file with serial 1 serves serial 2). When file and
// last are 2^31 apart no serial is greater than both; the one past last
// is taken, as last is what secondaries hold.
func nextSerial(p SerialPolicy, file, last uint32, haveLast bool, now time.Time) uint32 {
	floor := file
	if haveLast && wire.SerialCompare(file, last) <= 0 {
		floor = last
	}
	return p.Next(floor, now)
}

// setSerial gives the SOA record of out, a zone signed by sign (in
// canonical order: the apex first, its RRsets by type, each followed by
// its signatures), the serial serial, and replaces the SOA RRset's
// signatures by new ones of the zone-signing keys of keys, valid for the
// window of opts at now (RFC 4035 §2.2: every authoritative RRset is
// signed, and the SOA RRset has changed). out is changed in place; the
// signatures replaced are returned.
func setSerial(out []dns.RR, origin string, serial uint32, keys []*Key, opts Options, now time.Time) ([]dns.RR, error) {
	at := -1
	for i, rr := range out {
		h := rr.Header()
		if dns.CanonicalName(h.Name) != origin {
			break
		}
		if h.Rrtype == dns.TypeSOA {
			at = i
			break
		}
	}
	if at < 0 {
		return nil, fmt.Errorf("sign %s: no SOA record at the apex", origin)
	}
	soa := dns.Copy(out[at]).(*dns.SOA)
	soa.Serial = serial
	end := at + 1
	for end < len(out) {
		if sig, ok := out[end].(*dns.RRSIG); !ok || sig.TypeCovered != dns.TypeSOA {
			break
		}
		end++
	}
	incep, expir := opts.window(now)
	var sigs []dns.RR
	for _, k := range keys {
		if !k.SignZone {
			continue
		}
		sig, err := signRRset([]dns.RR{soa}, k, origin, uint32(incep.Unix()), uint32(expir.Unix()))
		if err != nil {
			return nil, fmt.Errorf("sign %s: %w", origin, err)
		}
		sigs = append(sigs, sig)
	}
	if len(sigs) != end-at-1 {
		// sign gives the SOA one signature per zone-signing key.
		return nil, fmt.Errorf("sign %s: internal error: %d SOA signatures for %d zone-signing keys", origin, end-at-1, len(sigs))
	}
	old := slices.Clone(out[at+1 : end])
	out[at] = soa
	copy(out[at+1:end], sigs)
	return old, nil
}
