// Package notify sends NOTIFY messages (RFC 1996) to a zone's
// secondaries when its serial changes: to every address of every remote
// the zone names, each retried with exponential backoff until it is
// answered, signed with TSIG (RFC 8945) when the remote has a key. A new
// serial of a zone replaces the NOTIFYs of the old one still being sent.
package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/tsig"
)

// Target is one address to notify.
type Target struct {
	// Remote is the name of the [[remote]] the address belongs to, for
	// the log.
	Remote string
	Addr   netip.AddrPort
	// Key signs the NOTIFY and verifies the answer; nil: unsigned.
	Key *tsig.Key
}

// Options are the timing of the retries. The zero value takes the
// defaults: RFC 1996 §3.6 leaves the interval to the implementation;
// BIND and Knot retry for a few minutes.
type Options struct {
	// Timeout is how long the first try waits for an answer (default
	// 2s); each retry waits twice as long as the one before, up to
	// MaxTimeout (default 60s).
	Timeout, MaxTimeout time.Duration
	// Attempts bounds the tries to one address (default 8: about four
	// minutes with the default timeouts).
	Attempts int
	// Source, when set, gives the address NOTIFYs to dst are sent from
	// (an invalid Addr: the system's choice). Secondaries accept a
	// NOTIFY from the addresses they know their primary by (NSD's
	// allow-notify, Knot's ACL), which are the ones it serves on, not
	// the one the system would pick (127.0.0.1 for any loopback address).
	Source func(dst netip.AddrPort) netip.Addr
}

func (o *Options) defaults() {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.MaxTimeout <= 0 {
		o.MaxTimeout = 60 * time.Second
	}
	if o.Attempts <= 0 {
		o.Attempts = 8
	}
}

// Notifier sends the NOTIFYs of every zone. Its methods are safe for
// concurrent use.
type Notifier struct {
	log  *slog.Logger
	opts Options

	mu     sync.Mutex
	rounds map[string]context.CancelFunc // origin → the round being sent
	wg     sync.WaitGroup
	closed bool
}

// New returns a Notifier that logs to log (nil: nowhere).
func New(log *slog.Logger, opts Options) *Notifier {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts.defaults()
	return &Notifier{log: log, opts: opts, rounds: map[string]context.CancelFunc{}}
}

// Notify starts notifying targets that zone origin (a domain name) has
// the SOA soa, in the background, and returns. A round for the same zone
// still being sent is stopped: its secondaries learn of the newer serial.
func (n *Notifier) Notify(origin string, soa *dns.SOA, targets []Target) {
	origin = dns.CanonicalName(origin)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	if cancel := n.rounds[origin]; cancel != nil {
		cancel()
		delete(n.rounds, origin)
	}
	if len(targets) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.rounds[origin] = cancel
	for _, t := range targets {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.send(ctx, origin, soa, t)
		}()
	}
}

// Wait waits until every NOTIFY started has been answered, given up or
// stopped.
func (n *Notifier) Wait() { n.wg.Wait() }

// Close stops every round and waits for their goroutines.
func (n *Notifier) Close() {
	n.mu.Lock()
	n.closed = true
	for origin, cancel := range n.rounds {
		cancel()
		delete(n.rounds, origin)
	}
	n.mu.Unlock()
	n.wg.Wait()
}

// send notifies one target until it answers, the attempts run out, or
// the round is stopped.
func (n *Notifier) send(ctx context.Context, origin string, soa *dns.SOA, t Target) {
	log := n.log.With("zone", origin, "serial", soa.Serial, "remote", t.Remote, "address", t.Addr.String())
	timeout := n.opts.Timeout
	var err error
	for attempt := 1; attempt <= n.opts.Attempts; attempt++ {
		var rcode int
		began := time.Now()
		rcode, err = n.exchange(ctx, origin, soa, t, timeout)
		switch {
		case err == nil && rcode == dns.RcodeSuccess:
			log.Info("notify: answered", "attempt", attempt)
			return
		case err == nil:
			// An answer, if not a welcome one: trying again would get
			// the same (RFC 1996 §4.7: a secondary that does not
			// serve the zone answers with an error).
			log.Warn("notify: refused", "rcode", dns.RcodeToString[rcode])
			return
		case ctx.Err() != nil:
			log.Debug("notify: superseded by a newer serial or stopped")
			return
		}
		log.Debug("notify: no answer, trying again", "attempt", attempt, "err", err)
		// RFC 1996 §3.6: retry "at some reasonable interval": the try's
		// timeout is the wait, waited out also when the try failed at
		// once (a port unreachable: the secondary is starting), and the
		// next one doubles.
		if rest := timeout - time.Since(began); rest > 0 && attempt < n.opts.Attempts {
			wait := time.NewTimer(rest)
			select {
			case <-ctx.Done():
				wait.Stop()
				log.Debug("notify: superseded by a newer serial or stopped")
				return
			case <-wait.C:
			}
		}
		timeout = min(2*timeout, n.opts.MaxTimeout)
	}
	log.Warn("notify: gave up", "attempts", n.opts.Attempts, "err", err)
}

// exchange sends one NOTIFY and waits for its answer; it returns the
// answer's rcode, or an error when none came (or it did not verify).
func (n *Notifier) exchange(ctx context.Context, origin string, soa *dns.SOA, t Target, timeout time.Duration) (int, error) {
	m := Message(origin, soa)
	c := &dns.Client{Net: "udp", Timeout: timeout}
	if n.opts.Source != nil {
		if src := n.opts.Source(t.Addr); src.IsValid() {
			c.Dialer = &net.Dialer{Timeout: timeout, LocalAddr: net.UDPAddrFromAddrPort(netip.AddrPortFrom(src, 0))}
		}
	}
	if t.Key != nil {
		c.TsigSecret = map[string]string{t.Key.Name: t.Key.Secret}
		m.SetTsig(t.Key.Name, t.Key.Algorithm, tsig.Fudge, time.Now().Unix())
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, _, err := c.ExchangeContext(ctx, m, t.Addr.String())
	if err != nil {
		return 0, err
	}
	if r.Opcode != dns.OpcodeNotify {
		return 0, fmt.Errorf("answer with opcode %s", dns.OpcodeToString[r.Opcode])
	}
	if t.Key != nil && r.IsTsig() == nil {
		// RFC 8945 §5.3: an answer to a signed request is signed.
		return 0, errors.New("unsigned answer to a signed NOTIFY")
	}
	return r.Rcode, nil
}

// Message is the NOTIFY of zone origin with the SOA soa (RFC 1996 §3.7):
// opcode NOTIFY, AA, the question "origin IN SOA", and the SOA in the
// answer section as a hint (the secondary may skip its SOA query).
func Message(origin string, soa *dns.SOA) *dns.Msg {
	m := new(dns.Msg)
	m.SetNotify(dns.Fqdn(origin))
	m.Authoritative = true
	if soa != nil {
		m.Answer = []dns.RR{soa}
	}
	return m
}
