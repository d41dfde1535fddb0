// Package rrl is response rate limiting (RRL) with the semantics
// operators know from BIND, Knot DNS and NSD: each UDP response is
// accounted to its client's prefix (IPv4 /24 and IPv6 /56 by default)
// and to what kind of response it is (positive for a name and type,
// NXDOMAIN or NODATA for a zone, referral for a delegation, error,
// wildcard for its source name); a client prefix getting more than
// responses-per-second of one kind has the excess dropped, and every
// slip-th dropped response is sent truncated (TC=1, question only) so
// that a real client behind a spoofed flood retries over TCP. TCP is
// never limited.
//
// The accounting is BIND's: an account is credited rate responses a
// second, never more than rate (a burst of one second's worth), and
// debited one per response, answered or not, down to window seconds'
// worth of debt: a client that keeps flooding stays limited, and one
// that stops is answered again once window seconds have paid its debt.
// It is kept as a GCRA theoretical arrival time, one int64 per account.
//
// Each server worker (a UDP socket's goroutine) owns a Limiter of its
// own, a fixed table of accounts: nothing is shared between workers, no
// lock is taken and nothing is allocated per response. A flood spread
// over the workers by SO_REUSEPORT is limited per worker, as Knot's
// per-thread tables are: a client's rate is then up to the number of
// workers times the configured one when its queries hash to several
// sockets (one source address and port always hash to one).
package rrl

import (
	"hash/maphash"
	"net/netip"
	"time"

	"github.com/tern-dns/tern/internal/wire"
)

// Defaults of Config (BIND's window and slip; prefixes as BIND, Knot
// and NSD).
const (
	DefaultWindow     = 15 * time.Second
	DefaultSlip       = 2
	DefaultIPv4Prefix = 24
	DefaultIPv6Prefix = 56
	// MaxWindow and MaxSlip bound the settings as BIND does.
	MaxWindow = time.Hour
	MaxSlip   = 10
	// TableSize is the number of accounts of a Limiter (a power of
	// two, in sets of Ways): 16384 of 24 bytes, 384 KiB per worker.
	TableSize = 1 << 14
	// Ways is the associativity of the table: a new account takes the
	// slot of its set whose account is the least in debt.
	Ways = 4
)

// Config is the [rrl] table's settings.
type Config struct {
	// Rate is responses-per-second, at least 1.
	Rate int
	// Window is how much debt an account can run up, as time: after a
	// flood, a client is answered again after at most Window.
	Window time.Duration
	// Slip: every Slip-th dropped response is sent truncated; 0 never,
	// 1 always.
	Slip int
	// IPv4Prefix and IPv6Prefix are the client prefix lengths.
	IPv4Prefix, IPv6Prefix int
	// Exempt lists clients never limited.
	Exempt []netip.Prefix
}

// Kind is what kind of response an account counts.
type Kind uint8

// The kinds of response, accounted separately.
const (
	// Positive: an answer, keyed by QNAME and QTYPE.
	Positive Kind = iota
	// NXDomain: keyed by the zone (the SOA's owner).
	NXDomain
	// NoData: an empty NOERROR answer, keyed by the zone.
	NoData
	// Referral: keyed by the delegation (the NS records' owner).
	Referral
	// Error: any other RCODE, keyed by the client prefix alone.
	Error
	// Wildcard: an answer synthesised from a wildcard, keyed by the
	// wildcard's source name.
	Wildcard
)

// String names k in lower case.
func (k Kind) String() string {
	return [...]string{"positive", "nxdomain", "nodata", "referral", "error", "wildcard"}[k]
}

// Verdict is what becomes of a response.
type Verdict uint8

// The verdicts.
const (
	// Pass: sent as it is.
	Pass Verdict = iota
	// Drop: not sent.
	Drop
	// Slip: sent truncated, with TC set, so that the client retries
	// over TCP.
	Slip
)

// String names v in lower case.
func (v Verdict) String() string { return [...]string{"pass", "drop", "slip"}[v] }

// entry is one account: its key's hash (0: free), its theoretical
// arrival time (the time by which its debt is paid, in nanoseconds of
// the Limiter's clock) and the count of its dropped responses, for slip.
type entry struct {
	key     uint64
	tat     int64
	dropped uint32
}

// Limiter is one worker's accounts. It is not safe for concurrent use.
type Limiter struct {
	interval int64 // nanoseconds per response at the rate
	burst    int64 // a second: the credit an account can hold
	debt     int64 // burst + window: the most an account can owe
	slip     uint32
	v4, v6   int
	exempt   []netip.Prefix
	table    []entry
	base     time.Time
	seed     maphash.Seed
}

// New returns a Limiter with cfg's settings (validated by the config:
// Rate at least 1, Window positive), and its table of TableSize
// accounts.
func New(cfg Config) *Limiter {
	rate := max(cfg.Rate, 1)
	l := &Limiter{
		interval: int64(time.Second) / int64(rate),
		burst:    int64(time.Second),
		slip:     uint32(max(cfg.Slip, 0)),
		v4:       cfg.IPv4Prefix,
		v6:       cfg.IPv6Prefix,
		exempt:   cfg.Exempt,
		table:    make([]entry, TableSize),
		base:     time.Now(),
		seed:     maphash.MakeSeed(),
	}
	l.debt = l.burst + int64(cfg.Window)
	return l
}

// Now is the Limiter's clock: nanoseconds since it was made
// (monotonic).
func (l *Limiter) Now() int64 { return int64(time.Since(l.base)) }

// Exempt reports whether addr is never limited.
func (l *Limiter) Exempt(addr netip.Addr) bool {
	for _, p := range l.exempt {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Account counts one response for the account key (from Key) at now
// (Now's clock) and says what becomes of it.
func (l *Limiter) Account(key uint64, now int64) Verdict {
	if key == 0 {
		key = 1 // 0 marks a free slot
	}
	set := l.table[int(key&uint64(len(l.table)-1))&^(Ways-1):]
	set = set[:Ways]
	e := &set[0]
	found := false
	for i := range set {
		if set[i].key == key {
			e, found = &set[i], true
			break
		}
		if set[i].tat < e.tat {
			e = &set[i]
		}
	}
	if !found {
		*e = entry{key: key, tat: now}
	}
	t := max(e.tat, now) + l.interval
	if t-now <= l.burst {
		e.tat = t
		return Pass
	}
	// Over the rate: the response is debited all the same (BIND), up
	// to the window's worth of debt.
	e.tat = min(t, now+l.debt)
	e.dropped++
	if l.slip != 0 && e.dropped%l.slip == 0 {
		return Slip
	}
	return Drop
}

// Key is the account of a response of kind k to a client at addr, for
// the name whose wire form starts at msg[name] (compression followed;
// ignored for Error) and, for Positive, qtype. ok is false when the
// name is malformed.
//
// The key's bytes (prefix, kind, type, the name lower-cased) are
// gathered on the stack and hashed at once with the Limiter's seed.
func (l *Limiter) Key(addr netip.Addr, k Kind, qtype uint16, msg []byte, name int) (key uint64, ok bool) {
	var buf [16 + 4 + 255]byte
	if addr.Is4() || addr.Is4In6() {
		a := addr.Unmap().As4()
		maskBytes(a[:], l.v4)
		copy(buf[:], a[:])
		buf[16] = 4
	} else {
		a := addr.As16()
		maskBytes(a[:], l.v6)
		copy(buf[:], a[:])
		buf[16] = 6
	}
	buf[17] = byte(k)
	n := 20
	if k == Error {
		return maphash.Bytes(l.seed, buf[:n]), true
	}
	if k == Positive {
		buf[18], buf[19] = byte(qtype>>8), byte(qtype)
	}
	// The name, lower-cased, pointers followed (a bounded number of
	// them, so that loops end).
	off, hops := name, 0
	for {
		if off >= len(msg) {
			return 0, false
		}
		ll := int(msg[off])
		switch {
		case ll == 0:
			buf[n] = 0
			return maphash.Bytes(l.seed, buf[:n+1]), true
		case ll&0xC0 == 0xC0:
			if off+1 >= len(msg) || hops > 127 {
				return 0, false
			}
			hops++
			off = (ll&0x3F)<<8 | int(msg[off+1])
			continue
		case ll&0xC0 != 0:
			return 0, false
		}
		if off+1+ll > len(msg) || n+1+ll > len(buf)-1 {
			return 0, false
		}
		buf[n] = byte(ll)
		wire.Lower(buf[n+1:n+1+ll], msg[off+1:off+1+ll])
		n += 1 + ll
		off += 1 + ll
	}
}

// maskBytes clears the bits of a past its first bits.
func maskBytes(a []byte, bits int) {
	for i := range a {
		switch {
		case bits >= 8:
			bits -= 8
		case bits <= 0:
			a[i] = 0
		default:
			a[i] &= ^byte(0xFF >> bits)
			bits = 0
		}
	}
}
