package zonedb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/dnssec"
	"github.com/tern-dns/tern/internal/durable"
	"github.com/tern-dns/tern/internal/zone"
)

// signedZone is the state of one automatically signed zone, owned by
// its events.
type signedZone struct {
	cfg      config.Zone
	signer   *dnssec.ZoneSigner
	unsigned []dns.RR  // the zone file's content, re-signed on schedule
	next     time.Time // when signatures or keys next need work
}

// load reads, checks and (with a signing policy) signs one zone, in an
// event of e. It changes e's signing state only when it succeeds, so that a
// zone that fails keeps being maintained as the version it still serves.
func (m *Manager) load(ctx context.Context, e *entry, zc config.Zone) (*zone.Zone, error) {
	if zc.Generated() {
		return m.generate(e, zc)
	}
	if zc.Signing == nil {
		z, err := zone.Load(zc.File, zc.Origin)
		if err == nil {
			e.signed = nil // signing turned off
			z = m.replayUpdates(e, zc, z)
		}
		return z, err
	}
	// The unsigned zone is checked first so that problems are reported
	// with the zone file's lines.
	recs, warnings, err := zone.LoadRecords(zc.File, zc.Origin)
	if err != nil {
		return nil, err
	}
	rrs := make([]dns.RR, 0, len(recs))
	for _, r := range recs {
		switch r.RR.Header().Rrtype {
		case dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNSEC3, dns.TypeNSEC3PARAM, dns.TypeDNSKEY, dns.TypeCDS, dns.TypeCDNSKEY:
			// The signer owns these; a zone file for automatic signing
			// holds only the data.
			continue
		}
		rrs = append(rrs, r.RR)
	}
	if m.pendingUpdates(zc) {
		// Dynamic updates not yet in the file: replayed over it.
		if base, err := compileRRs(zc.Origin, rrs); err == nil {
			if z := m.replayUpdates(e, zc, base); z != base {
				if rrs, err = Records(z); err != nil {
					return nil, err
				}
			}
		}
	}
	sz := e.signed
	if sz == nil || *sz.cfg.Signing != *zc.Signing {
		// New, or its policy, keys or chain changed: a new signer.
		if sz, err = m.newSigned(zc); err != nil {
			return nil, err
		}
	}
	z, next, err := m.sign(ctx, sz, rrs)
	if err != nil {
		return nil, err
	}
	sz.cfg, sz.unsigned, sz.next = zc, rrs, next
	e.signed = sz
	// The zone file's warnings, with its lines, rather than the signed
	// copy's.
	z.Warnings = warnings
	return z, nil
}

func (m *Manager) newSigned(zc config.Zone) (*signedZone, error) {
	sg := zc.Signing
	// The key directory is made by dnssec.NewManager, durably (its parent
	// fsynced); making it here first would skip that.
	p := dnssec.DefaultPolicy()
	if sg.Algorithm != "" {
		alg, err := dnssec.ParseAlgorithm(sg.Algorithm)
		if err != nil {
			return nil, err
		}
		p.Algorithm = alg
	}
	set := func(dst *time.Duration, d config.Duration) {
		if d.Duration > 0 {
			*dst = d.Duration
		}
	}
	set(&p.ZSKLifetime, sg.ZSKLifetime)
	set(&p.KSKLifetime, sg.KSKLifetime)
	set(&p.SignatureValidity, sg.SignatureValidity)
	set(&p.SignatureRefresh, sg.SignatureRefresh)
	set(&p.PropagationDelay, sg.PropagationDelay)
	set(&p.ParentDelay, sg.ParentDelay)
	serial, err := dnssec.ParseSerialPolicy(sg.SerialPolicy)
	if err != nil {
		return nil, err
	}
	p.Serial = serial
	if err := p.Validate(); err != nil {
		return nil, err
	}
	signer, err := dnssec.NewZoneSigner(sg.KeyDir, zc.Origin, p, dnssec.Options{NSEC3: sg.NSEC3, OptOut: sg.OptOut})
	if err != nil {
		return nil, err
	}
	// The last signed copy lets a restart keep every signature that is
	// still fresh instead of signing the whole zone again.
	if prev, err := zone.ParseFile(signedPath(zc), zc.Origin); err == nil {
		signer.SetPrevious(zone.RRs(prev))
	} else if !errors.Is(err, os.ErrNotExist) {
		m.log.Warn("ignoring the last signed copy", "zone", zc.Origin, "err", err)
	}
	return &signedZone{cfg: zc, signer: signer}, nil
}

// signedPath is where the last signed copy of a zone is kept.
func signedPath(zc config.Zone) string {
	return filepath.Join(zc.Signing.KeyDir, strings.TrimSuffix(zc.Origin, ".")+".signed")
}

// sign signs unsigned, the content of sz's zone file, now, saves the
// signed copy and compiles it; next is when it must be signed again.
func (m *Manager) sign(ctx context.Context, sz *signedZone, unsigned []dns.RR) (z *zone.Zone, next time.Time, err error) {
	out, next, st, err := sz.signer.Sign(ctx, unsigned, m.now())
	if err != nil {
		return nil, next, err
	}
	var b strings.Builder
	for _, rr := range out {
		b.WriteString(rr.String())
		b.WriteByte('\n')
	}
	if err := durable.WriteFile(signedPath(sz.cfg), []byte(b.String()), 0o600); err != nil {
		return nil, next, fmt.Errorf("saving the signed copy: %w", err)
	}
	recs := make([]zone.Record, len(out))
	for i, rr := range out {
		recs[i] = zone.Record{RR: rr, File: signedPath(sz.cfg), Line: i + 1}
	}
	z, err = zone.Compile(sz.cfg.Origin, recs)
	if err != nil {
		return nil, next, fmt.Errorf("compiling the signed zone: %w", err)
	}
	m.log.Info("signed", "zone", sz.cfg.Origin, "serial", z.Serial, "signatures", st.Signed, "kept", st.Reused, "next", next.Format(time.RFC3339))
	return z, next, nil
}

// scheduleResign times e's next re-signing (none when e is not signed);
// in an event of e.
func (m *Manager) scheduleResign(e *entry) {
	sz := e.signed
	if sz == nil || sz.next.IsZero() {
		e.resign.Store(0)
		e.cancelTimer(eventResign)
		return
	}
	e.resign.Store(sz.next.UnixNano())
	e.at(eventResign, sz.next.Sub(m.now()), func(ctx context.Context) {
		if err := m.resign(ctx, e); err != nil {
			m.log.Error("re-signing failed, the previous signatures stay served", "zone", e.origin, "err", err)
		}
	})
}

// eventResign is the timed event of a signed zone's next signing work.
const eventResign = "re-sign"

// resign re-signs e if its time has come (signature refresh, or a key
// event of a rollover) and publishes the result, in an event of e. A
// failure keeps the zone's previous version and is retried a minute on.
func (m *Manager) resign(ctx context.Context, e *entry) error {
	sz := e.signed
	if sz == nil || sz.next.IsZero() {
		return nil
	}
	now := m.now()
	if sz.next.After(now) {
		m.scheduleResign(e) // a timer early by the clock
		return nil
	}
	z, next, err := m.sign(ctx, sz, sz.unsigned)
	if err != nil {
		sz.next = now.Add(time.Minute)
		m.scheduleResign(e)
		return inZone(e.origin, err)
	}
	sz.next = next
	prev := e.served.Load()
	if err := m.record(e, prev, z, nil); err != nil {
		m.log.Error(err.Error(), "zone", e.origin)
	}
	if !m.serve(e, z, loadState{loaded: m.now(), err: e.state.Load().err}) {
		return nil // removed meanwhile: nothing to publish or announce
	}
	m.flush()
	if newSerial(prev, z) {
		m.announce(z)
	}
	return nil
}

// Next returns the earliest time a signed zone needs work, zero if none.
func (m *Manager) Next() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	var t int64
	for _, e := range m.order {
		if n := e.resign.Load(); n != 0 && (t == 0 || n < t) {
			t = n
		}
	}
	if t == 0 {
		return time.Time{}
	}
	return time.Unix(0, t)
}

// Maintain re-signs now every signed zone whose time has come, each in
// an event of its zone, and returns when they are published (the timed
// events do the same on their own; Maintain is for a clock moved by a
// test). A failure keeps the zone's previous version.
func (m *Manager) Maintain(ctx context.Context) error {
	now := m.now().UnixNano()
	m.mu.Lock()
	order := m.order
	m.mu.Unlock()
	var errs []error
	for _, e := range order {
		if n := e.resign.Load(); n == 0 || n > now {
			continue
		}
		if err := e.do(ctx, func(ctx context.Context) error { return m.resign(ctx, e) }); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
