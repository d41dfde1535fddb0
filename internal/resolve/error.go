package resolve

import (
	"errors"
	"fmt"
	"syscall"
	"unicode/utf8"

	"github.com/tern-dns/tern/internal/wire"
)

// Reason is why a resolution failed.
type Reason int

// The reasons a resolution fails.
const (
	// NoReachableAuthority: no server of a zone gave a usable answer
	// (all unreachable, lame, or without an address).
	NoReachableAuthority Reason = iota + 1
	// Timeout: the resolution ran out of its time, Limits.Timeout.
	Timeout
	// QueryLimit: more upstream queries than Limits.Queries.
	QueryLimit
	// CNAMELimit: a CNAME chain longer than Limits.CNAMEs.
	CNAMELimit
	// CNAMELoop: a CNAME chain that comes back to a name in it.
	CNAMELoop
	// ReferralLimit: more referrals than Limits.Referrals.
	ReferralLimit
	// NetworkError: every server of a zone that was asked failed with a
	// network error (port or host unreachable), none with a timeout or
	// an unusable answer.
	NetworkError
)

var reasons = map[Reason]string{
	NoReachableAuthority: "no reachable authority",
	Timeout:              "timeout",
	QueryLimit:           "upstream query limit",
	CNAMELimit:           "CNAME chain limit",
	CNAMELoop:            "CNAME loop",
	ReferralLimit:        "referral limit",
	NetworkError:         "network error",
}

// String describes r in a few words.
func (r Reason) String() string {
	if s, ok := reasons[r]; ok {
		return s
	}
	return fmt.Sprintf("reason %d", int(r))
}

// EDE returns the RFC 8914 Extended DNS Error INFO-CODE a SERVFAIL for
// this reason carries: 22 (No Reachable Authority) when the authorities
// did not answer usefully or in time, 23 (Network Error) when they could
// not be reached at all, and 0 (Other) for a limit hit, which no code
// names: Error.EDE's EXTRA-TEXT says which.
func (r Reason) EDE() uint16 {
	switch r {
	case NoReachableAuthority, Timeout:
		return wire.EDENoReachableAuthority
	case NetworkError:
		return wire.EDENetworkError
	}
	return wire.EDEOther
}

// Error is a failed resolution: a SERVFAIL, and why.
type Error struct {
	Reason Reason
	// Name is the name being resolved when it failed.
	Name   string
	Detail string
	// Summary is Detail in fewer words, for the EDE's EXTRA-TEXT; empty
	// when Detail is short.
	Summary string
	// answered is set when a server answered, unusably (lame), as
	// opposed to none answering at all.
	answered bool
	// Cached: the failure is one remembered from an earlier resolution
	// of the same question (RFC 9520), answered without asking again.
	Cached bool
}

// Error tells the name, the reason and the detail.
func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Name, e.Reason, e.Detail)
}

// MaxExtraText bounds the EXTRA-TEXT Error.EDE returns, so that the
// option leaves room for the rest of a SERVFAIL within the 512 octets of
// a client without EDNS's larger sizes.
const MaxExtraText = 200

// EDE returns the Extended DNS Error (RFC 8914) a SERVFAIL for this
// failure carries: its INFO-CODE (Reason.EDE) and an EXTRA-TEXT saying
// what failed (the limit hit, the zone whose servers failed), at most
// MaxExtraText octets of UTF-8 (RFC 8914 §2: EXTRA-TEXT is UTF-8).
func (e *Error) EDE() (code uint16, text string) {
	text = e.Error()
	if e.Summary != "" {
		text = fmt.Sprintf("%s: %s: %s", e.Name, e.Reason, e.Summary)
	}
	code = e.Reason.EDE()
	if e.Cached {
		code, text = wire.EDECachedError, "cached: "+text
	}
	if len(text) > MaxExtraText {
		text = text[:MaxExtraText-3]
		for !utf8.ValidString(text) {
			text = text[:len(text)-1]
		}
		text += "..."
	}
	return code, text
}

// fatal reports whether err ends the whole resolution (a budget spent,
// or a failure remembered) rather than one server or one NS name.
func fatal(err error) bool {
	e, ok := errors.AsType[*Error](err)
	return ok && (e.Reason == Timeout || e.Reason == QueryLimit || e.Cached)
}

// networkError reports whether err is a server's address or port
// reported unreachable (ICMP, or a refused TCP connection): the server
// was not reached, as opposed to reached and silent or lame.
func networkError(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}
