package config

import (
	"strconv"
	"time"

	"github.com/tern-dns/tern/internal/cookie"
)

// Cookies holds the [cookies] table: DNS cookies (RFC 7873, server
// cookies of RFC 9018) on every listener. Without the table they are
// answered under a random secret rotated every SecretLifetime.
type Cookies struct {
	// AnswerCookie: COOKIE options are answered (BIND's and NSD's
	// answer-cookie). Default true; false ignores the option: no
	// cookie in answers, no BADCOOKIE.
	AnswerCookie bool `toml:"answer-cookie"`
	// Secret is the shared secret of an anycast set of servers (BIND's
	// cookie-secret, Knot's secret), 32 hex digits: the first makes
	// the cookies, a second is accepted too (the previous one, or the
	// next one being staged). At most cookie.MaxSecrets.
	Secret []string `toml:"secret" want:"a list of secrets, each 32 hexadecimal digits (128 bits)"`
	// SecretFile holds the secrets instead, one a line (NSD's
	// cookie-secret-file); read at start and at each reload. Relative
	// to the configuration file's directory.
	SecretFile string `toml:"secret-file"`
	// SecretLifetime is how often the random secret (neither Secret
	// nor SecretFile) is replaced, the previous one still accepted
	// (Knot's secret-lifetime). At least an hour. Default 24h.
	SecretLifetime Duration `toml:"secret-lifetime"`
}

// defaultCookieLifetime is secret-lifetime's default.
const defaultCookieLifetime = 24 * time.Hour

// defaultCookies is the [cookies] table's defaults.
func defaultCookies() Cookies {
	return Cookies{AnswerCookie: true, SecretLifetime: Duration{defaultCookieLifetime}}
}

// Secrets returns the configured secrets (Secret, else the file's),
// nil for a random one. The table must have been validated; the file's
// errors name it and its line.
func (c *Cookies) Secrets() ([]cookie.Secret, error) {
	if c.SecretFile != "" {
		return cookie.ReadSecretFile(c.SecretFile)
	}
	return cookie.ParseSecrets(c.Secret)
}

// validateCookies checks the [cookies] table.
func (v *validator) validateCookies(c *Cookies) {
	if c.SecretFile != "" && len(c.Secret) > 0 {
		v.addf("cookies.secret-file", "cookies: secret and secret-file are both set (want one of them)")
	}
	if len(c.Secret) > cookie.MaxSecrets {
		v.addf("cookies.secret", "cookies.secret: %d secrets, at most %d (the one cookies are made with, and one more accepted)", len(c.Secret), cookie.MaxSecrets)
	}
	for i, s := range c.Secret {
		if _, err := cookie.ParseSecret(s); err != nil {
			v.addf("cookies.secret["+strconv.Itoa(i)+"]", "cookies.secret: %v", err)
		}
	}
	if d := c.SecretLifetime.Duration; d < time.Hour {
		// A cookie lives an hour (RFC 9018 §4.3) and only the previous
		// secret is accepted: rotated faster, valid cookies would be
		// refused.
		v.addf("cookies.secret-lifetime", "cookies.secret-lifetime: must be at least 1h (a cookie's lifetime), got %s", d)
	}
}
