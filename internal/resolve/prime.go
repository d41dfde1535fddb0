package resolve

import (
	"context"
	"errors"
	"time"

	"github.com/miekg/dns"
)

// primeRetry is how long the hints stand in for the root servers after a
// priming query that failed, before the next try.
const primeRetry = 10 * time.Second

// primed is the set of root servers the resolution starts from: the
// answer of a priming query, or the hints while priming fails.
type primed struct {
	servers []Server
	expires time.Time
}

// Prime asks the root hints for the root's name servers now (RFC 8109),
// as the first resolution would; a server may call it at start so that
// its first client does not wait for it. It returns why priming failed,
// in which case the hints stand in for a while.
func (r *Resolver) Prime(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.limits.Timeout)
	defer cancel()
	r.primeMu.Lock()
	defer r.primeMu.Unlock()
	_, err := r.prime(ctx, &run{r: r})
	return err
}

// roots returns the root servers to start from: the primed set, primed
// again first when there is none or it has expired. While one resolution
// primes again, the others go on with the expired set; only the first
// ones, which have none, wait for it.
func (ru *run) roots(ctx context.Context) ([]Server, error) {
	r := ru.r
	p := r.primed.Load()
	if p != nil && r.now().Before(p.expires) {
		return p.servers, nil
	}
	if p != nil {
		if !r.primeMu.TryLock() {
			return p.servers, nil
		}
	} else {
		r.primeMu.Lock()
	}
	defer r.primeMu.Unlock()
	if q := r.primed.Load(); q != p && r.now().Before(q.expires) {
		return q.servers, nil // primed while this one waited
	}
	servers, err := r.prime(ctx, ru)
	if fatal(err) {
		return nil, err
	}
	return servers, nil
}

// prime sends the priming query (RFC 8109 §3: ". NS" to the hints, each
// in turn until one answers usefully) as part of the run ru, and keeps
// its answer's name servers with the addresses it gives for them until
// the smallest TTL of those records. When it fails, the hints stand in
// for primeRetry; a budget of ru spent (time, queries) is not a failure
// of the hints and leaves nothing behind.
func (r *Resolver) prime(ctx context.Context, ru *run) ([]Server, error) {
	hints := make([]Server, len(r.hints))
	for i, s := range r.hints {
		hints[i] = s
		hints[i].Why = s.Why + ", priming query (RFC 8109)"
	}
	m, _, err := ru.ask(ctx, ".", hints, ".", dns.TypeNS, "", 0)
	if err == nil {
		var servers []Server
		var ttl uint32
		if servers, ttl, err = primingAnswer(m); err == nil {
			r.primed.Store(&primed{servers: servers, expires: r.now().Add(time.Duration(ttl) * time.Second)})
			return servers, nil
		}
	}
	if !fatal(err) {
		r.primed.Store(&primed{servers: r.hints, expires: r.now().Add(primeRetry)})
	}
	return r.hints, err
}

// primingAnswer returns the root servers of a priming answer (already
// sorted: authoritative, in the root's bailiwick, which every name is):
// the root's NS records and the A and AAAA records of their names in the
// additional section (RFC 8109 §3.3), the servers without an address
// left out, and the smallest TTL of the records used.
func primingAnswer(m *dns.Msg) ([]Server, uint32, error) {
	servers, ttl := rootServers(m.Answer, m.Extra, "root server, primed")
	if len(servers) == 0 {
		return nil, 0, errors.New("the priming answer has no root server with an address")
	}
	return servers, ttl, nil
}
