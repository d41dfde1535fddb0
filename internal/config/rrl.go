package config

import (
	"strconv"

	"github.com/tern-dns/tern/internal/rrl"
)

// RRL holds the [rrl] table: response rate limiting of the UDP answers
// of the authoritative and resolver listeners (off without the table).
type RRL struct {
	// ResponsesPerSecond is each account's rate, required, at least 1.
	ResponsesPerSecond int `toml:"responses-per-second"`
	// Window is how long a client that flooded stays limited at most
	// (the debt an account can run up), 1s..1h. Default 15s.
	Window Duration `toml:"window"`
	// Slip: every slip-th dropped response is sent truncated (TC=1);
	// 0 never, 1 always; at most 10. Default 2.
	Slip int `toml:"slip"`
	// IPv4Prefix and IPv6Prefix are the client prefix lengths the
	// accounts are kept by. Defaults 24 and 56.
	IPv4Prefix int `toml:"ipv4-prefix"`
	IPv6Prefix int `toml:"ipv6-prefix"`
	// Exempt lists clients never limited (prefixes or addresses).
	Exempt []string `toml:"exempt" want:"a list of prefixes such as \"192.0.2.0/24\""`
}

// defaultRRL is the [rrl] table's defaults, under what the file sets.
func defaultRRL() *RRL {
	return &RRL{
		ResponsesPerSecond: -1, // required: -1 tells absent from 0
		Window:             Duration{rrl.DefaultWindow},
		Slip:               rrl.DefaultSlip,
		IPv4Prefix:         rrl.DefaultIPv4Prefix,
		IPv6Prefix:         rrl.DefaultIPv6Prefix,
	}
}

// Limiter returns the table's settings for rrl.New (validated by
// Validate).
func (r *RRL) Limiter() rrl.Config {
	c := rrl.Config{
		Rate:       r.ResponsesPerSecond,
		Window:     r.Window.Duration,
		Slip:       r.Slip,
		IPv4Prefix: r.IPv4Prefix,
		IPv6Prefix: r.IPv6Prefix,
	}
	for _, s := range r.Exempt {
		if p, err := parsePrefix(s); err == nil {
			c.Exempt = append(c.Exempt, p)
		}
	}
	return c
}

// validateRRL checks the [rrl] table.
func (v *validator) validateRRL(r *RRL) {
	switch {
	case r.ResponsesPerSecond == -1:
		v.addf("rrl", "rrl: responses-per-second is required")
	case r.ResponsesPerSecond < 1:
		v.addf("rrl.responses-per-second", "rrl.responses-per-second: must be at least 1, got %d", r.ResponsesPerSecond)
	}
	if w := r.Window.Duration; w < 1e9 || w > rrl.MaxWindow {
		v.addf("rrl.window", "rrl.window: must be between 1s and %s, got %s", rrl.MaxWindow, w)
	}
	if r.Slip < 0 || r.Slip > rrl.MaxSlip {
		v.addf("rrl.slip", "rrl.slip: must be between 0 (never) and %d, got %d", rrl.MaxSlip, r.Slip)
	}
	if r.IPv4Prefix < 1 || r.IPv4Prefix > 32 {
		v.addf("rrl.ipv4-prefix", "rrl.ipv4-prefix: must be between 1 and 32, got %d", r.IPv4Prefix)
	}
	if r.IPv6Prefix < 1 || r.IPv6Prefix > 128 {
		v.addf("rrl.ipv6-prefix", "rrl.ipv6-prefix: must be between 1 and 128, got %d", r.IPv6Prefix)
	}
	for i, s := range r.Exempt {
		if _, err := parsePrefix(s); err != nil {
			v.addf("rrl.exempt["+strconv.Itoa(i)+"]", "rrl.exempt: invalid prefix %q (want e.g. 192.0.2.0/24, 2001:db8::/32 or an address): %v", s, err)
		}
	}
}
