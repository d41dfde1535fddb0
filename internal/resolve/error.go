package resolve

import (
	"errors"
	"fmt"
)

// Reason is why a resolution failed.
type Reason int

// The reasons a resolution fails.
const (
	// NoReachableAuthority: no server of a zone gave a usable answer
	// (all unreachable, lame, or without an address).
	NoReachableAuthority Reason = iota + 1
	// Timeout: the resolution took longer than Limits.Timeout.
	Timeout
	// QueryLimit: more upstream queries than Limits.Queries.
	QueryLimit
	// CNAMELimit: a CNAME chain longer than Limits.CNAMEs.
	CNAMELimit
	// CNAMELoop: a CNAME chain that comes back to a name in it.
	CNAMELoop
	// ReferralLimit: more referrals than Limits.Referrals.
	ReferralLimit
)

var reasons = map[Reason]string{
	NoReachableAuthority: "no reachable authority",
	Timeout:              "timeout",
	QueryLimit:           "upstream query limit",
	CNAMELimit:           "CNAME chain limit",
	CNAMELoop:            "CNAME loop",
	ReferralLimit:        "referral limit",
}

func (r Reason) String() string {
	if s, ok := reasons[r]; ok {
		return s
	}
	return fmt.Sprintf("reason %d", int(r))
}

// EDE returns the RFC 8914 Extended DNS Error code a SERVFAIL for this
// reason carries: 22 (No Reachable Authority) where it fits, else 0
// (Other, with the error's text as EXTRA-TEXT).
func (r Reason) EDE() uint16 {
	switch r {
	case NoReachableAuthority, Timeout:
		return 22
	}
	return 0
}

// Error is a failed resolution: a SERVFAIL, and why.
type Error struct {
	Reason Reason
	// Name is the name being resolved when it failed.
	Name   string
	Detail string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Name, e.Reason, e.Detail)
}

// fatal reports whether err ends the whole resolution (a budget spent)
// rather than one server or one NS name.
func fatal(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Reason == Timeout || e.Reason == QueryLimit)
}
