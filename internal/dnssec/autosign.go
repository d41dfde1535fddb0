package dnssec

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
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
//
// The signed zone's SOA serial is not the file's: the file's serial names
// the unsigned content, which may have been served as it is. Each signed
// version that differs from the previous one Sign returned gets a serial
// greater (RFC 1982) than that one's and than the file's, chosen by the
// policy's SerialPolicy, so that secondaries, which compare serials (RFC
// 1034 §4.3.5), see every change: a first signing, changed RRsets,
// refreshed signatures, a rollover step. A version that does not differ
// keeps the serial, if it is greater than the file's. The serial is kept
// in the key state before Sign returns, so a restart never goes back.
func (s *ZoneSigner) Sign(ctx context.Context, rrs []dns.RR, now time.Time) ([]dns.RR, time.Time, Stats, error) {
	plan, err := s.manager.Step(now)
	if err != nil {
		return nil, time.Time{}, Stats{}, err
	}
	// Signed with the last served serial, an unchanged zone signs to
	// exactly the previous version, keeping its SOA signatures.
	in, file, last, haveLast := s.withServedSerial(rrs)
	var out []dns.RR
	var st Stats
	if s.prev == nil {
		out, st, err = SignZoneStats(ctx, in, s.origin, plan.Keys, s.opts, now)
	} else {
		out, st, err = Resign(ctx, s.prev, in, s.origin, plan.Keys, s.opts, now)
	}
	if err != nil {
		return nil, time.Time{}, st, fmt.Errorf("auto-sign %s: %w", s.origin, err)
	}
	if !haveLast || wire.SerialCompare(last, file) <= 0 || s.prev == nil || !sameRecords(s.prev, out) {
		serial := nextSerial(s.policy.Serial, file, last, haveLast, now)
		replaced, err := setSerial(out, s.origin, serial, plan.Keys, s.opts, now)
		if err != nil {
			return nil, time.Time{}, st, fmt.Errorf("auto-sign %s: %w", s.origin, err)
		}
		st.Signed += len(replaced)
		st.Reused -= countShared(replaced, s.prev)
		if err := s.manager.SetServedSerial(serial); err != nil {
			return nil, time.Time{}, st, fmt.Errorf("auto-sign %s: keeping serial %d: %w", s.origin, serial, err)
		}
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

// withServedSerial returns the zone content rrs with its SOA serial set to
// the last served one, if any (rrs itself is not changed), the zone
// file's serial and the last served serial.
func (s *ZoneSigner) withServedSerial(rrs []dns.RR) (in []dns.RR, file, last uint32, haveLast bool) {
	last, haveLast = s.manager.ServedSerial()
	for i, rr := range rrs {
		soa, ok := rr.(*dns.SOA)
		if !ok || dns.CanonicalName(soa.Hdr.Name) != s.origin {
			continue
		}
		if !haveLast {
			return rrs, soa.Serial, 0, false
		}
		in = slices.Clone(rrs)
		c := dns.Copy(soa).(*dns.SOA)
		c.Serial = last
		in[i] = c
		return in, soa.Serial, last, true
	}
	return rrs, 0, last, haveLast // no SOA: signing reports it
}

// sameRecords reports whether two signed zones in canonical order hold
// the same records, TTLs and signatures included.
func sameRecords(a, b []dns.RR) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Header().Ttl != b[i].Header().Ttl || !sameRR(a[i], b[i]) {
			return false
		}
	}
	return true
}

// countShared counts the records of rrs that are in prev, the same
// records (as sign reuses them), not just equal ones.
func countShared(rrs, prev []dns.RR) int {
	n := 0
	for _, rr := range rrs {
		if slices.Contains(prev, rr) {
			n++
		}
	}
	return n
}
