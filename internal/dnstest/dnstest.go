// Package dnstest holds what tests that query a server on loopback share.
// The tests run on loaded machines (go test -race on two cores shared with
// builds), where a datagram can be lost and a server can stall for
// seconds: a single try with a short timeout fails them at random.
package dnstest

import (
	"fmt"
	"time"

	"github.com/miekg/dns"
)

// Tries and TryTimeout are how Exchange asks: three tries of three
// seconds, as a resolver would, far above the sub-millisecond answers of
// an unloaded loopback.
const (
	Tries      = 3
	TryTimeout = 3 * time.Second
)

// Exchange sends m to addr over netw ("udp" or "tcp") and returns the
// answer, trying again after a failure (a timeout, a reset) up to Tries
// times.
func Exchange(m *dns.Msg, netw, addr string) (*dns.Msg, error) {
	c := &dns.Client{Net: netw, Timeout: TryTimeout}
	var err error
	for range Tries {
		var r *dns.Msg
		if r, _, err = c.Exchange(m, addr); err == nil {
			return r, nil
		}
	}
	return nil, fmt.Errorf("%s to %s (%d tries): %w", netw, addr, Tries, err)
}
