package auth

import (
	"errors"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/acl"
	"github.com/tern-dns/tern/internal/tsig"
	"github.com/tern-dns/tern/internal/wire"
	"github.com/tern-dns/tern/internal/zone"
)

// Access is what decides who may do what with the zones beyond asking
// them questions: the TSIG keys the server shares with others, and each
// zone's ACL. It is published whole (SetAccess), as zones are; a new
// Access made for one zone's change shares the rest of its ACLs with
// the old one (zone.ByOrigin.With), which SetAccess follows.
type Access struct {
	// Keys are the TSIG keys; nil: none (a signed query gets BADKEY).
	Keys *tsig.Keyring
	// ACLs are the zones' rules, by origin in presentation form,
	// lowercase and fully qualified ("example.com."); nil: none. A zone
	// without an entry allows nothing but queries; one with rules for
	// acl.Query answers only the clients they allow (by address).
	ACLs *zone.ByOrigin[acl.List]

	// query are the zones' query ACLs compiled (acl.List.QueryTable),
	// by origin in wire form; made by SetAccess. Its shards are the
	// published zones' (zone.ShardOf of the origin), so that publish
	// prepares again only the shards whose query ACLs changed.
	query *zone.ByOrigin[*acl.Table]
}

// NewACLs returns the ACLs of Access from a map of them by origin
// (presentation form); empty lists are left out.
func NewACLs(m map[string]acl.List) *zone.ByOrigin[acl.List] {
	return (*zone.ByOrigin[acl.List])(nil).With(m, noRules)
}

// noRules reports whether l has no rules: no entry in Access.ACLs.
func noRules(l acl.List) bool { return len(l) == 0 }

// WithACL returns a copy of a with the ACL of the zone origin
// (presentation form, canonical) set to l (empty: none), sharing the
// other zones' ACLs and the keys with a: a zone added or removed at
// run time costs its own rules, not every zone's.
func (a *Access) WithACL(origin string, l acl.List) *Access {
	return &Access{Keys: a.Keys, ACLs: a.ACLs.With(map[string]acl.List{origin: l}, noRules)}
}

// SetAccess publishes new keys and ACLs; queries in flight finish with
// the ones they started with. The zones are published again with their
// query ACLs (and the response caches' answers forgotten). The query
// ACLs are compiled again only for the shards of a's ACLs that the
// Access being served does not share (all of them for an Access built
// whole, one for an Access.WithACL), and only those zones' shards are
// prepared again.
func (r *Responder) SetAccess(a *Access) {
	r.publishing.Lock()
	defer r.publishing.Unlock()
	if a != nil {
		var prev *Access
		if p := r.access.Load(); p != nil && p != a {
			prev = p
		}
		a.query = queryTables(a.ACLs, prev)
	}
	r.access.Store(a)
	r.zones.Store(r.publish(r.zones.Load().set, r.zones.Load()))
	r.gen.Add(1)
}

// queryTables returns the query ACLs compiled of acls, starting from
// prev's (nil: none) and compiling again those of the origins in the
// shards of acls that prev's ACLs do not share.
func queryTables(acls *zone.ByOrigin[acl.List], prev *Access) *zone.ByOrigin[*acl.Table] {
	var (
		base    *zone.ByOrigin[*acl.Table]
		prevACL *zone.ByOrigin[acl.List]
	)
	if prev != nil {
		base, prevACL = prev.query, prev.ACLs
	}
	changes := map[string]*acl.Table{}
	set := func(origin string, l acl.List) {
		var buf [wire.MaxName]byte
		n, err := dns.PackDomainName(dns.CanonicalName(origin), buf[:], 0, nil, false)
		if err == nil {
			changes[string(buf[:n])] = l.QueryTable()
		}
	}
	for i := range zone.SetShards {
		if acls.SameShard(prevACL, i) {
			continue
		}
		for origin := range prevACL.Shard(i) {
			set(origin, nil) // removed unless set again below
		}
		for origin, l := range acls.Shard(i) {
			set(origin, l)
		}
	}
	return base.With(changes, func(t *acl.Table) bool { return t == nil })
}

// queryTable returns the query ACL of the zone whose origin (wire form)
// is origin, nil when it has none (a nil a has none).
func (a *Access) queryTable(origin []byte) *acl.Table {
	if a == nil || a.query.Len() == 0 {
		return nil
	}
	return a.query.GetBytes(origin)
}

// keys returns the keyring being served, nil when there is none.
func (r *Responder) keys() *tsig.Keyring {
	if a := r.access.Load(); a != nil {
		return a.Keys
	}
	return nil
}

// answerSigned answers a query that carries a TSIG record (RFC 8945
// §5.2): verified first, answered NOTAUTH with the TSIG error when it
// fails (BADKEY and BADSIG unsigned, BADTIME and BADTRUNC signed), or
// dropped when its MAC's length is one no HMAC sends, else answered as
// the same query without TSIG would be and signed with its key. A
// signed answer over the client's size limit is replaced by a truncated
// one (TC, question only), signed too, so the client retries over TCP.
func (r *Responder) answerSigned(s *Scratch, res wire.ParseResult, rcode int, pkt, out []byte, tcp bool, a *Ahead) []byte {
	q := &s.q
	at := q.TSIG
	req, err := r.keys().Verify(pkt, at)
	if errors.Is(err, tsig.ErrDrop) {
		// RFC 8945 §5.2.2.1: a MAC of a length no HMAC sends is
		// dropped and logged.
		if r.log != nil {
			attrs := []any{"err", err}
			if s.req != nil {
				attrs = append(attrs, "client", s.req.Remote().String())
			}
			r.log.Warn("TSIG: query dropped", attrs...)
		}
		return nil
	}
	if err != nil {
		// The record's framing parsed but its RDATA does not.
		return r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeFormErr)
	}
	var resp []byte
	if req.Error != 0 {
		// RFC 8945 §5.2: NOTAUTH, whatever the question.
		resp = r.headerOnly(s, pkt, out, tcp, 0, wire.RcodeNotAuth)
	} else {
		q.TSIG, s.tsig = 0, req
		resp = r.answerParsed(s, res, rcode, pkt, out, tcp, a)
		s.tsig = nil
	}
	if resp == nil {
		return nil
	}
	signed, err := req.Signer().Sign(resp)
	if err != nil {
		return nil
	}
	limit := 65535
	if !tcp {
		limit = r.udpLimit(q)
	}
	if len(signed) > limit {
		resp = r.headerOnly(s, pkt, out, tcp, wire.FlagTC, 0)
		if signed, err = req.Signer().Sign(resp); err != nil {
			return nil
		}
	}
	return append(out[:0], signed...)
}

// headerOnly writes into out a response to s's query of the header (with
// flags and rcode), the question and the OPT record when the query had
// one.
func (r *Responder) headerOnly(s *Scratch, pkt, out []byte, tcp bool, flags uint16, rcode int) []byte {
	q := &s.q
	limit := 65535
	if !tcp {
		limit = r.udpLimit(q)
	}
	s.b.Reset(out, limit)
	s.invalid = false
	flags |= wire.ReplyFlags(q.Flags)
	s.b.Header(q.ID, flags)
	return r.errorResponse(s, pkt, flags, rcode)
}
