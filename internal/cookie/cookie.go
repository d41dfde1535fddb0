// Package cookie answers DNS cookies (RFC 7873) with server cookies as
// RFC 9018 makes them: version 1, three reserved bytes, a timestamp and
// SipHash-2-4 of the client cookie, those eight bytes and the client's
// address under a 128-bit secret. Any server holding the secret
// recognises them (anycast: a secret shared through configuration,
// ParseSecret, ReadSecretFile), and a rotated secret keeps accepting
// the cookies of the previous one (Keys.Set, Keys.Rotate).
//
// Worker wraps a server.Worker of the authoritative or the resolver
// listeners. The engines under it never see the option (their response
// caches key on the question and EDNS state, not on the cookie, and
// hold no cookie): the COOKIE option is appended to each response after
// it is made or copied from a cache, for its own client, also to an
// answer the inner Worker defers (server.Amender). Queries without a
// COOKIE option pass through untouched.
package cookie

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"

	"github.com/tern-dns/tern/internal/wire"
)

// Option code and lengths (RFC 7873 §4).
const (
	// OptionCode is the COOKIE EDNS option's code.
	OptionCode = 10
	// ClientLen is a client cookie's length.
	ClientLen = 8
	// ServerLen is an RFC 9018 server cookie's length.
	ServerLen = 16
	// minServer and maxServer bound a server cookie's length (RFC 7873
	// §4.2).
	minServer = 8
	maxServer = 32
)

// Timing of RFC 9018 §4.3, in seconds.
const (
	// MaxAge: older cookies are not accepted.
	MaxAge = 3600
	// RefreshAge: older valid cookies are replaced by a fresh one.
	RefreshAge = 1800
	// MaxAhead: cookies dated further into the future are not
	// accepted (clock skew between servers sharing a secret).
	MaxAhead = 300
)

// Secret is a SipHash-2-4 key, 16 bytes read as two little-endian
// words.
type Secret [16]byte

func (s *Secret) words() (uint64, uint64) {
	return binary.LittleEndian.Uint64(s[:]), binary.LittleEndian.Uint64(s[8:])
}

// secrets are the current and previous secret, as the query path reads
// them, and those a switch between a random and a configured secret
// replaced (Keys.Replace), accepted until a time.
type secrets struct {
	cur, prev [2]uint64
	hasPrev   bool
	// old[:nOld] are accepted while now is before oldUntil (Unix
	// seconds): every secret the replaced secrets accepted, the one
	// making cookies and the other (a configured list's second, or
	// the random secret's previous one), whose cookies are as valid.
	old      [MaxSecrets][2]uint64
	nOld     int
	oldUntil uint32
}

// keepOld carries o's replaced secrets (Keys.Replace) over into s.
func (s *secrets) keepOld(o *secrets) {
	if o != nil {
		s.old, s.nOld, s.oldUntil = o.old, o.nOld, o.oldUntil
	}
}

// oldAccepted reports whether s's replaced secrets are still accepted
// at now (serial arithmetic on Unix seconds, as the cookies' own).
func (s *secrets) oldAccepted(now uint32) bool {
	return s.nOld > 0 && int32(s.oldUntil-now) > 0
}

// Keys holds the server's secrets; it is safe for concurrent use: the
// query path reads them with one atomic load per batch.
type Keys struct {
	p atomic.Pointer[secrets]
}

// NewKeys returns Keys with a random secret.
func NewKeys() *Keys {
	k := &Keys{}
	k.Rotate(RandomSecret())
	return k
}

// MaxSecrets is how many secrets Keys holds: the one cookies are made
// with, and one more that is accepted.
const MaxSecrets = 2

// Set makes list[0] the secret cookies are made with and list[1],
// when there is one, a secret also accepted: the one used
// before (RFC 9018 §4.5: its cookies stay valid until they expire), or
// the next one, staged on every server of an anycast set before any
// makes cookies with it (NSD's staging secret). Secrets past
// MaxSecrets are ignored; with none, Keys are left as they are. The
// secrets Replace kept stay accepted until their time.
func (k *Keys) Set(list []Secret) {
	if len(list) == 0 {
		return
	}
	k.p.Store(k.set(list, k.p.Load()))
}

// set is Set's new secrets: list's, with old's replaced secret.
func (k *Keys) set(list []Secret, old *secrets) *secrets {
	next := &secrets{}
	next.cur[0], next.cur[1] = list[0].words()
	if len(list) > 1 {
		next.prev[0], next.prev[1] = list[1].words()
		next.hasPrev = true
	}
	next.keepOld(old)
	return next
}

// Replace is Set, for a switch between the random secret and a
// configured one (a reload adding or removing it): every secret
// accepted until now, the one that made cookies and the other (a
// configured list's second: the previous secret or the staged next
// one; the random secret's previous), stays accepted until until (Unix
// seconds; the secret-lifetime a rotation keeps the previous secret
// for), so that the cookies clients hold keep working without a
// BADCOOKIE round trip (RFC 9018 §4.5). They take the place of those
// an earlier Replace kept. With an empty list, Keys are left as they
// are.
func (k *Keys) Replace(list []Secret, until uint32) {
	if len(list) == 0 {
		return
	}
	old := k.p.Load()
	next := k.set(list, nil)
	if old != nil {
		next.old[0], next.nOld, next.oldUntil = old.cur, 1, until
		if old.hasPrev {
			next.old[1], next.nOld = old.prev, 2
		}
	}
	k.p.Store(next)
}

// ParseSecret reads a secret written as 32 hexadecimal digits (128
// bits, the SipHash-2-4 key of RFC 9018 §4.4), as BIND's
// cookie-secret, NSD's and PowerDNS's take it; Knot's 0x prefix is
// accepted. Its error does not repeat the text (a secret).
func ParseSecret(text string) (Secret, error) {
	var s Secret
	text = strings.TrimPrefix(strings.TrimPrefix(text, "0x"), "0X")
	if len(text) != 2*len(s) {
		return s, fmt.Errorf("a secret is 32 hexadecimal digits (128 bits), got %d characters", len(text))
	}
	if _, err := hex.Decode(s[:], []byte(text)); err != nil {
		return s, errors.New("a secret is 32 hexadecimal digits (128 bits): not hexadecimal")
	}
	return s, nil
}

// ParseSecrets parses each of texts (ParseSecret), in order: the first
// the one cookies are made with (Keys.Set).
func ParseSecrets(texts []string) ([]Secret, error) {
	var out []Secret
	for _, t := range texts {
		s, err := ParseSecret(t)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// ReadSecretFile reads a file of secrets in the form of NSD's and
// Unbound's cookie-secret-file: one secret a line (ParseSecret), the
// first the one cookies are made with, the next (at most one more)
// accepted too (Keys.Set); blank lines and lines starting with # are
// skipped. Errors name the file and line.
func ReadSecretFile(path string) ([]Secret, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cookie secret file: %w", err)
	}
	var out []Secret
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if len(out) == MaxSecrets {
			return nil, fmt.Errorf("%s:%d: more than %d secrets (the one cookies are made with, and one more accepted)", path, i+1, MaxSecrets)
		}
		s, err := ParseSecret(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no secret (want one a line, 32 hexadecimal digits)", path)
	}
	return out, nil
}

// RandomSecret returns a new random secret: 16 random bytes.
func RandomSecret() Secret {
	var s Secret
	rand.Read(s[:])
	return s
}

// Rotate makes s the current secret and the current one the previous,
// still accepted (RFC 9018 §4.5: a cookie made with it stays valid until
// it expires). The secrets Replace kept stay accepted until their time.
func (k *Keys) Rotate(s Secret) {
	next := &secrets{}
	next.cur[0], next.cur[1] = s.words()
	if old := k.p.Load(); old != nil {
		next.prev, next.hasPrev = old.cur, true
		next.keepOld(old)
	}
	k.p.Store(next)
}

// RotateRandom rotates to a new random secret.
func (k *Keys) RotateRandom() { k.Rotate(RandomSecret()) }

// hash is the RFC 9018 §4.4 hash of a server cookie's first eight bytes
// (version, reserved, timestamp) for client cookie cc and address addr
// under key.
func hash(key [2]uint64, cc []byte, head []byte, addr netip.Addr) uint64 {
	var buf [ClientLen + 8 + 16]byte
	copy(buf[:], cc[:ClientLen])
	copy(buf[ClientLen:], head[:8])
	n := ClientLen + 8
	if addr.Is4() || addr.Is4In6() {
		a := addr.Unmap().As4()
		n += copy(buf[n:], a[:])
	} else {
		a := addr.As16()
		n += copy(buf[n:], a[:])
	}
	return SipHash24(key[0], key[1], buf[:n])
}

// Make writes into dst (16 bytes) the server cookie for client cookie cc
// (8 bytes) and addr at time now (Unix seconds) under the current
// secret.
func (k *Keys) Make(dst, cc []byte, addr netip.Addr, now uint32) {
	s := k.p.Load()
	make1(s, dst, cc, addr, now)
}

func make1(s *secrets, dst, cc []byte, addr netip.Addr, now uint32) {
	dst[0], dst[1], dst[2], dst[3] = 1, 0, 0, 0
	binary.BigEndian.PutUint32(dst[4:], now)
	binary.LittleEndian.PutUint64(dst[8:], hash(s.cur, cc, dst[:8], addr))
}

// Verdict is what a query's COOKIE option says.
type Verdict uint8

// The verdicts.
const (
	// None: no COOKIE option.
	None Verdict = iota
	// ClientOnly: a client cookie alone (RFC 7873 §5.2.3).
	ClientOnly
	// Valid: a server cookie of ours, made less than MaxAge ago.
	Valid
	// Stale: Valid, but older than RefreshAge or made under a secret
	// accepted but no longer making cookies: replaced by a fresh one.
	Stale
	// Bad: a server cookie that is not ours, or expired (§5.2.4).
	Bad
	// Malformed: an option of another length than 8 or 16..40 (§5.2.2:
	// FORMERR).
	Malformed
)

// String names v in lower case.
func (v Verdict) String() string {
	return [...]string{"none", "client-only", "valid", "stale", "bad", "malformed"}[v]
}

// Check judges the COOKIE option data opt (from Find) of a query from
// addr at time now.
func (k *Keys) Check(opt []byte, addr netip.Addr, now uint32) Verdict {
	return check(k.p.Load(), opt, addr, now)
}

func check(s *secrets, opt []byte, addr netip.Addr, now uint32) Verdict {
	n := len(opt)
	switch {
	case n == ClientLen:
		return ClientOnly
	case n < ClientLen+minServer || n > ClientLen+maxServer:
		return Malformed
	case n != ClientLen+ServerLen || opt[ClientLen] != 1:
		// Not a server cookie of RFC 9018's version 1: not ours.
		return Bad
	}
	sc := opt[ClientLen:]
	age := int32(now - binary.BigEndian.Uint32(sc[4:]))
	if age > MaxAge || age < -MaxAhead {
		return Bad
	}
	got := binary.LittleEndian.Uint64(sc[8:])
	switch {
	case hash(s.cur, opt, sc[:8], addr) == got:
		if age > RefreshAge {
			return Stale
		}
		return Valid
	case s.hasPrev && hash(s.prev, opt, sc[:8], addr) == got:
		// Made under the other secret: valid, and replaced by one of
		// the current secret (as PowerDNS and NSD do), so that the
		// other can be dropped an hour after it stopped making
		// cookies.
		return Stale
	case s.oldAccepted(now):
		// Made under a secret a switch between random and configured
		// replaced (Replace): likewise.
		for _, key := range s.old[:s.nOld] {
			if hash(key, opt, sc[:8], addr) == got {
				return Stale
			}
		}
	}
	return Bad
}

// Find returns the data of the first COOKIE option of query pkt's OPT
// record (RFC 7873 §5.2: later ones are ignored), and whether there is
// one. It reads nothing past pkt and allocates nothing; a query it
// cannot walk has none (the engine answers it FORMERR).
func Find(pkt []byte) ([]byte, bool) {
	opt, _, ok := find(pkt)
	return opt, ok
}

// find is Find, and the OPT record's UDP payload size.
func find(pkt []byte) (opt []byte, size uint16, ok bool) {
	if len(pkt) < 12 || pkt[10] == 0 && pkt[11] == 0 {
		return nil, 0, false
	}
	qd := int(binary.BigEndian.Uint16(pkt[4:]))
	rest := int(binary.BigEndian.Uint16(pkt[6:])) + int(binary.BigEndian.Uint16(pkt[8:]))
	ar := int(binary.BigEndian.Uint16(pkt[10:]))
	off := 12
	for range qd {
		end, ok := wire.SkipName(pkt, off)
		if !ok || end+4 > len(pkt) {
			return nil, 0, false
		}
		off = end + 4
	}
	for i := range rest + ar {
		end, ok := wire.SkipName(pkt, off)
		if !ok || end+10 > len(pkt) {
			return nil, 0, false
		}
		rdata := end + 10
		next := rdata + int(binary.BigEndian.Uint16(pkt[end+8:]))
		if next > len(pkt) {
			return nil, 0, false
		}
		if i >= rest && binary.BigEndian.Uint16(pkt[end:]) == 41 {
			size := binary.BigEndian.Uint16(pkt[end+2:])
			opts := pkt[rdata:next]
			for len(opts) >= 4 {
				code := binary.BigEndian.Uint16(opts)
				l := int(binary.BigEndian.Uint16(opts[2:]))
				if 4+l > len(opts) {
					return nil, 0, false
				}
				if code == OptionCode {
					return opts[4 : 4+l], size, true
				}
				opts = opts[4+l:]
			}
			return nil, 0, false
		}
		off = next
	}
	return nil, 0, false
}
