// Package tsig verifies the TSIG records of queries and signs the
// responses (RFC 8945), one message or each message of a stream such as
// an AXFR, with miekg/dns's implementation of the MAC.
//
// It works on wire-form messages: the query as received, the response
// as the answer path built it. Signing unpacks the response into a
// dns.Msg and packs it again with the TSIG record, which costs
// allocations: it is for the few queries that carry a TSIG, never the
// plain query path.
package tsig

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/miekg/dns"
)

// TSIG ERROR values (RFC 8945 §5.2): the verification failures a
// response reports, with RCODE NOTAUTH.
const (
	BadSig  = dns.RcodeBadSig  // 16: the MAC does not verify
	BadKey  = dns.RcodeBadKey  // 17: the key (name and algorithm) is not known
	BadTime = dns.RcodeBadTime // 18: the time signed is outside the fudge
)

// Fudge is the time difference allowed, in seconds, written in the
// records Tern signs (RFC 8945 §10 recommends 300).
const Fudge = 300

// Key is a TSIG key.
type Key struct {
	// Name is the key's name, lowercase and fully qualified ("xfr.").
	Name string
	// Algorithm is the algorithm's name as TSIG carries it, lowercase
	// and fully qualified ("hmac-sha256.").
	Algorithm string
	// Secret is the shared secret, base64 (as miekg/dns takes it).
	Secret string
}

// Keyring holds the keys a server knows, by name.
type Keyring struct {
	keys map[string]*Key
}

// NewKeyring returns a keyring of keys; names and algorithms are
// canonicalised (lowercase, fully qualified: "hmac-sha256" is
// "hmac-sha256.").
func NewKeyring(keys []Key) *Keyring {
	kr := &Keyring{keys: make(map[string]*Key, len(keys))}
	for _, k := range keys {
		k.Name = dns.CanonicalName(k.Name)
		k.Algorithm = dns.CanonicalName(k.Algorithm)
		kr.keys[k.Name] = &k
	}
	return kr
}

// Key returns the key named name (any case, with or without the final
// dot), or nil.
func (kr *Keyring) Key(name string) *Key {
	if kr == nil {
		return nil
	}
	return kr.keys[dns.CanonicalName(name)]
}

// Request is the outcome of verifying a query's TSIG, and what signing
// the responses needs.
type Request struct {
	// Key is the key that signed the query; nil when it is not known
	// (BADKEY).
	Key *Key
	// Error is 0 when the query verified, else BadKey, BadSig or BadTime.
	Error uint16
	// name and alg are the query's key name and algorithm, echoed in the
	// TSIG of an error response whatever they are.
	name, alg string
	// mac is the query's MAC, hex, which the first response's MAC covers
	// (RFC 8945 §5.3); timeSigned is its time, which a BADTIME response
	// echoes.
	mac        string
	timeSigned uint64
}

// KeyName is the name of the key the query was signed with, lowercase and
// fully qualified, as ACLs name keys; "" when the query did not verify.
func (r *Request) KeyName() string {
	if r.Error != 0 || r.Key == nil {
		return ""
	}
	return r.Key.Name
}

// Verify checks the TSIG record at offset at of msg (a query whose last
// record it is) against the keyring, in RFC 8945 §5.2's order: the key
// (name and algorithm), then the MAC, then the time, against the clock
// (dns.TsigVerify reads it). It returns an error only when the record
// cannot be read (the query then deserves FORMERR); a failed check is
// in Request.Error. msg is not changed.
func (kr *Keyring) Verify(msg []byte, at int) (*Request, error) {
	rr, _, err := dns.UnpackRR(msg, at)
	if err != nil {
		return nil, fmt.Errorf("tsig: unreadable record: %w", err)
	}
	t, ok := rr.(*dns.TSIG)
	if !ok {
		return nil, errors.New("tsig: not a TSIG record")
	}
	req := &Request{name: dns.CanonicalName(t.Hdr.Name), alg: dns.CanonicalName(t.Algorithm), mac: t.MAC, timeSigned: t.TimeSigned}
	k := kr.Key(t.Hdr.Name)
	// RFC 8945 §5.2.1: a key we do not have, or have for another
	// algorithm, is BADKEY.
	if k == nil || k.Algorithm != req.alg {
		req.Error = BadKey
		return req, nil
	}
	req.Key = k
	// miekg/dns rewrites the ID and ARCOUNT of the message it verifies.
	switch err := dns.TsigVerify(append([]byte(nil), msg...), k.Secret, "", false); {
	case err == nil:
	case errors.Is(err, dns.ErrTime):
		// RFC 8945 §5.2.3, checked after the MAC (so that a forged
		// message learns nothing of the time).
		req.Error = BadTime
	default:
		// RFC 8945 §5.2.2: a MAC that does not verify. A truncated
		// MAC (§5.2.2.1) is not accepted either: Tern's policy is
		// the whole MAC, and a shorter one fails the comparison.
		req.Error = BadSig
	}
	return req, nil
}

// Signer signs the responses to one request: a single response, or each
// message of a stream in turn (RFC 8945 §5.3.1: the first message's MAC
// covers the query's MAC and the whole TSIG variables, each later one
// the MAC before it and only the timers). It is not safe for concurrent
// use.
type Signer struct {
	req  *Request
	prev string // the MAC of the last message signed, hex
	n    int    // messages signed
	now  func() time.Time
}

// Signer returns a Signer for the responses to r.
func (r *Request) Signer() *Signer {
	return &Signer{req: r, now: time.Now}
}

// Sign returns msg, a response without TSIG, with its TSIG record
// appended: signed with the request's key, or, for a request that failed
// with BADKEY or BADSIG, unsigned with the error (RFC 8945 §5.3.2). A
// BADTIME response is signed and carries the server's time in Other Data
// (§5.2.3). The result may be larger than msg by the record (MaxLen).
func (s *Signer) Sign(msg []byte) ([]byte, error) {
	m := new(dns.Msg)
	if err := m.Unpack(msg); err != nil {
		return nil, fmt.Errorf("tsig: sign: %w", err)
	}
	m.Compress = true
	now := uint64(s.now().Unix())
	t := &dns.TSIG{
		Hdr:        dns.RR_Header{Name: s.req.name, Rrtype: dns.TypeTSIG, Class: dns.ClassANY},
		Algorithm:  s.req.alg,
		TimeSigned: now,
		Fudge:      Fudge,
		OrigId:     m.Id,
		Error:      s.req.Error,
	}
	if s.req.Error == BadTime {
		// RFC 8945 §5.2.3: the request's time signed, and ours in
		// Other Data, so that the client can see the difference.
		t.TimeSigned = s.req.timeSigned
		var other [8]byte
		binary.BigEndian.PutUint64(other[:], now)
		t.OtherLen, t.OtherData = 6, hex.EncodeToString(other[2:])
	}
	m.Extra = append(m.Extra, t)
	secret := ""
	if s.req.Key != nil {
		secret = s.req.Key.Secret
	}
	requestMAC, timersOnly := s.req.mac, false
	if s.n > 0 {
		requestMAC, timersOnly = s.prev, true
	}
	out, mac, err := dns.TsigGenerate(m, secret, requestMAC, timersOnly)
	if err != nil {
		return nil, fmt.Errorf("tsig: sign: %w", err)
	}
	s.prev = mac
	s.n++
	return out, nil
}

// MaxLen is an upper bound of the size of the TSIG record Sign appends to
// a response to r, for answers that must leave room for it.
func (r *Request) MaxLen() int {
	// Owner and algorithm names (at most 255 bytes each in wire form,
	// here uncompressed), type, class, TTL, RDLENGTH, time signed, fudge,
	// MAC size, the MAC (SHA-512 at most), original ID, error, other
	// length and the six bytes of a BADTIME's time.
	return len(r.name) + 1 + 10 + len(r.alg) + 1 + 6 + 2 + 2 + 64 + 2 + 2 + 2 + 6
}
