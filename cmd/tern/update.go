package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/auth"
	"github.com/tern-dns/tern/internal/config"
	"github.com/tern-dns/tern/internal/dnssec"
	"github.com/tern-dns/tern/internal/update"
	"github.com/tern-dns/tern/internal/zone"
	"github.com/tern-dns/tern/internal/zonedb"
)

// applyUpdate makes the dynamic update u (RFC 2136), which the zone's
// ACL allowed, through the zone manager, and returns the RCODE to answer
// it with: NOERROR once the change is journaled, fsynced and served.
func applyUpdate(ctx context.Context, m *zonedb.Manager, log *slog.Logger, u *auth.UpdateRequest) int {
	var res *update.Result
	msg, err := update.Parse(u.Msg)
	if err == nil {
		err = m.Update(ctx, u.Origin, func(base *zone.Zone, zc *config.Zone) (*zone.Zone, *zone.Diff, error) {
			policy, err := dnssec.ParseSerialPolicy(zc.SerialPolicy)
			if err != nil {
				return nil, nil, err
			}
			r, err := update.Apply(base, msg, update.Options{Serial: policy, Now: time.Now(), Signed: zc.Signing != nil})
			if err != nil {
				return nil, nil, err
			}
			res = r
			return r.Zone, r.Diff, nil
		})
	}
	if errors.Is(err, zonedb.ErrSecondary) || errors.Is(err, zonedb.ErrGenerated) {
		err = &update.Error{Rcode: update.RcodeRefused, Reason: err.Error()}
	}
	rcode := update.Rcode(err)
	attrs := []any{"zone", u.Origin, "client", u.Client.String()}
	if u.Key != "" {
		attrs = append(attrs, "key", u.Key)
	}
	switch {
	case err != nil:
		log.Warn("update: "+dns.RcodeToString[rcode], append(attrs, "err", err)...)
	case res == nil || res.Zone == nil:
		log.Info("update: nothing to change", attrs...)
	default:
		log.Info("update applied", append(attrs, "from", res.Diff.From, "to", res.Diff.To, "deleted", len(res.Diff.Deleted), "added", len(res.Diff.Added))...)
	}
	return rcode
}
