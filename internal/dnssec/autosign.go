package dnssec

import (
	"context"
	"fmt"
	"time"

	"github.com/miekg/dns"
)

// ZoneSigner keeps one zone signed for a server: it asks its Manager which
// keys to use and re-signs incrementally, reusing the signatures of the
// previous run. It is not safe for concurrent use.
type ZoneSigner struct {
	manager *Manager
	origin  string
	policy  Policy
	opts    Options
	prev    []dns.RR
}

// NewZoneSigner opens key management for origin in dir. opts supplies the
// chain settings (NSEC3, OptOut, Workers); its validity and refresh are
// taken from the policy.
func NewZoneSigner(dir, origin string, p Policy, opts Options) (*ZoneSigner, error) {
	m, err := NewManager(dir, origin, p)
	if err != nil {
		return nil, err
	}
	opts.Validity = p.SignatureValidity
	opts.Refresh = p.SignatureRefresh
	opts.Inception, opts.Expiration = time.Time{}, time.Time{}
	return &ZoneSigner{manager: m, origin: dns.CanonicalName(dns.Fqdn(origin)), policy: p, opts: opts}, nil
}

// Manager returns the key manager, e.g. to show its state.
func (s *ZoneSigner) Manager() *Manager { return s.manager }

// SetPrevious gives the signer a previously signed version of the zone
// (for example loaded from disk after a restart) so unchanged RRsets keep
// their signatures.
func (s *ZoneSigner) SetPrevious(signed []dns.RR) { s.prev = signed }

// Sign advances the key state to now and signs the zone content rrs,
// re-signing only RRsets that changed, whose keys changed or whose
// signatures are due for refresh. It returns the signed zone and the time
// at which Sign must be called again even if the content does not change
// (next key event or signature refresh, whichever is first).
func (s *ZoneSigner) Sign(ctx context.Context, rrs []dns.RR, now time.Time) ([]dns.RR, time.Time, Stats, error) {
	plan, err := s.manager.Step(now)
	if err != nil {
		return nil, time.Time{}, Stats{}, err
	}
	var out []dns.RR
	var st Stats
	if s.prev == nil {
		out, st, err = SignZoneStats(ctx, rrs, s.origin, plan.Keys, s.opts, now)
	} else {
		out, st, err = Resign(ctx, s.prev, rrs, s.origin, plan.Keys, s.opts, now)
	}
	if err != nil {
		return nil, time.Time{}, st, fmt.Errorf("auto-sign %s: %w", s.origin, err)
	}
	s.prev = out
	next := plan.Next
	// The earliest expiring signature decides the refresh time.
	var earliest int64
	for _, rr := range out {
		if sig, ok := rr.(*dns.RRSIG); ok && (earliest == 0 || int64(sig.Expiration) < earliest) {
			earliest = int64(sig.Expiration)
		}
	}
	if earliest != 0 {
		refresh := time.Unix(earliest, 0).Add(-s.policy.SignatureRefresh)
		if !refresh.After(now) {
			refresh = now.Add(time.Minute)
		}
		if next.IsZero() || refresh.Before(next) {
			next = refresh
		}
	}
	return out, next, st, nil
}
