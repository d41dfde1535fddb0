// Package tsig verifies the TSIG records of queries and signs the
// responses (RFC 8945), one message or each message of a stream such as
// an AXFR.
//
// It works on wire-form messages: the query as received, the response
// as the answer path built it. The MAC is computed over those bytes as
// they are and the TSIG record appended to them, so that signing a
// message of a zone transfer costs its HMAC and nothing more (1,000,000
// records signed through miekg/dns's unpack and pack took 1.7-4.3 s of
// CPU, where Knot takes 0.22 s).
package tsig

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
)

// TSIG ERROR values (RFC 8945 §5.2): the verification failures a
// response reports, with RCODE NOTAUTH.
const (
	BadSig   = dns.RcodeBadSig   // 16: the MAC does not verify
	BadKey   = dns.RcodeBadKey   // 17: the key (name and algorithm) is not known
	BadTime  = dns.RcodeBadTime  // 18: the time signed is outside the fudge, or a replay
	BadTrunc = dns.RcodeBadTrunc // 22: the MAC is truncated below the local policy
)

// Fudge is the time difference allowed, in seconds, written in the
// records Tern signs (RFC 8945 §10 recommends 300).
const Fudge = 300

// ErrDrop is the error of a query whose TSIG must not be answered at all
// (RFC 8945 §5.2.2.1: a MAC longer than the algorithm's, or shorter than
// the shortest truncation allowed, is dropped and logged).
var ErrDrop = errors.New("tsig: message dropped")

// Key is a TSIG key.
type Key struct {
	// Name is the key's name, lowercase and fully qualified ("xfr.").
	Name string
	// Algorithm is the algorithm's name as TSIG carries it, lowercase
	// and fully qualified ("hmac-sha256.").
	Algorithm string
	// Secret is the shared secret, base64.
	Secret string
}

// algorithms are the HMACs TSIG names (RFC 8945 §6): hmac-sha256 is the
// one every implementation has; hmac-md5 only for old peers.
var algorithms = map[string]func() hash.Hash{
	"hmac-md5.sig-alg.reg.int.": md5.New,
	"hmac-sha1.":                sha1.New,
	"hmac-sha224.":              sha256.New224,
	"hmac-sha256.":              sha256.New,
	"hmac-sha384.":              sha512.New384,
	"hmac-sha512.":              sha512.New,
}

// newMAC returns the HMAC of k's algorithm keyed with its secret.
func (k *Key) newMAC() (hash.Hash, error) {
	h, ok := algorithms[dns.CanonicalName(k.Algorithm)]
	if !ok {
		return nil, fmt.Errorf("tsig: key %s: unknown algorithm %q", k.Name, k.Algorithm)
	}
	secret, err := base64.StdEncoding.DecodeString(k.Secret)
	if err != nil {
		return nil, fmt.Errorf("tsig: key %s: secret: %w", k.Name, err)
	}
	return hmac.New(h, secret), nil
}

// Keyring holds the keys a server knows, by name, and for each the
// latest time signed of a query it verified (RFC 8945 §5.2.3).
type Keyring struct {
	keys map[string]*entry
}

// entry is one key of a Keyring.
type entry struct {
	key Key
	// latest is the largest time signed of a verified query signed
	// with the key: one signed earlier is a replay (BADTIME).
	latest atomic.Uint64
}

// NewKeyring returns a keyring of keys; names and algorithms are
// canonicalised (lowercase, fully qualified: "hmac-sha256" is
// "hmac-sha256.").
func NewKeyring(keys []Key) *Keyring {
	kr := &Keyring{keys: make(map[string]*entry, len(keys))}
	for _, k := range keys {
		k.Name = dns.CanonicalName(k.Name)
		k.Algorithm = dns.CanonicalName(k.Algorithm)
		kr.keys[k.Name] = &entry{key: k}
	}
	return kr
}

// Key returns the key named name (any case, with or without the final
// dot), or nil.
func (kr *Keyring) Key(name string) *Key {
	if e := kr.entry(name); e != nil {
		return &e.key
	}
	return nil
}

func (kr *Keyring) entry(name string) *entry {
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
	// Error is 0 when the query verified, else BadKey, BadSig, BadTime
	// or BadTrunc.
	Error uint16
	// name and alg are the query's key name and algorithm, lowercase,
	// echoed in the TSIG of every response whatever they are.
	name, alg string
	// nameWire and algWire are name and alg in wire form.
	nameWire, algWire []byte
	// mac is the query's MAC as sent (truncated or not), which the
	// first response's MAC covers (RFC 8945 §5.3, §5.2.2.1);
	// timeSigned is its time, which a BADTIME response echoes.
	mac        []byte
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
// record it is) against the keyring and the clock, in RFC 8945 §5.2's
// order: the key (name and algorithm, §5.2.1), the MAC (§5.2.2), the time
// (§5.2.3), the truncation (§5.2.4). It returns an error when the record
// cannot be read (the query then deserves FORMERR) or is to be dropped
// (ErrDrop); a failed check is in Request.Error. msg is not changed.
func (kr *Keyring) Verify(msg []byte, at int) (*Request, error) {
	return kr.verify(msg, at, uint64(time.Now().Unix()))
}

func (kr *Keyring) verify(msg []byte, at int, now uint64) (*Request, error) {
	if at < 12 || at > len(msg) || binary.BigEndian.Uint16(msg[10:]) == 0 {
		return nil, errors.New("tsig: not the last record of the message")
	}
	rr, off, err := dns.UnpackRR(msg, at)
	if err != nil {
		return nil, fmt.Errorf("tsig: unreadable record: %w", err)
	}
	t, ok := rr.(*dns.TSIG)
	if !ok || off != len(msg) {
		return nil, errors.New("tsig: not the last record of the message")
	}
	mac, err := hexBytes(t.MAC)
	if err != nil {
		return nil, fmt.Errorf("tsig: unreadable MAC: %w", err)
	}
	req := &Request{name: dns.CanonicalName(t.Hdr.Name), alg: dns.CanonicalName(t.Algorithm), mac: mac, timeSigned: t.TimeSigned}
	if req.nameWire, err = wireName(req.name); err != nil {
		return nil, err
	}
	if req.algWire, err = wireName(req.alg); err != nil {
		return nil, err
	}
	e := kr.entry(t.Hdr.Name)
	// RFC 8945 §5.2.1: a key we do not have, or have for another
	// algorithm, is BADKEY.
	if e == nil || e.key.Algorithm != req.alg {
		req.Error = BadKey
		req.mac = nil
		return req, nil
	}
	h, err := e.key.newMAC()
	if err != nil {
		req.Error = BadKey
		req.mac = nil
		return req, nil
	}
	// RFC 8945 §5.2.2.1: a MAC longer than the algorithm's output, or
	// shorter than both 10 octets and half of it, is neither generated
	// nor accepted: the message is dropped (and the caller logs it).
	if n, full := len(mac), h.Size(); n > full || n < max(10, full/2) {
		return nil, fmt.Errorf("%w: key %s: a MAC of %d octets for %s (%d): RFC 8945 §5.2.2.1", ErrDrop, req.name, n, req.alg, full)
	}
	// The message as the client signed it: without the TSIG record,
	// ARCOUNT one less, the original ID (RFC 8945 §4.3.2).
	var head [12]byte
	copy(head[:], msg)
	binary.BigEndian.PutUint16(head[0:], t.OrigId)
	binary.BigEndian.PutUint16(head[10:], binary.BigEndian.Uint16(msg[10:])-1)
	h.Write(head[:])
	h.Write(msg[12:at])
	v := variables{name: req.nameWire, alg: req.algWire, timeSigned: t.TimeSigned, fudge: t.Fudge, err: t.Error}
	if v.other, err = hexBytes(t.OtherData); err != nil {
		return nil, fmt.Errorf("tsig: unreadable other data: %w", err)
	}
	v.write(h, false, make([]byte, 0, 600))
	// RFC 8945 §5.2.2.1: a truncated MAC is compared with as many
	// octets of ours.
	if !hmac.Equal(h.Sum(nil)[:len(mac)], mac) {
		// RFC 8945 §5.2.2: BADSIG, answered unsigned.
		req.Error = BadSig
		req.mac = nil
		return req, nil
	}
	req.Key = &e.key
	// RFC 8945 §5.2.3: the time after the MAC (so that a forged message
	// learns nothing of it): within the fudge of ours, and not earlier
	// than the latest time signed of a query verified with this key
	// (the RFC's SHOULD against replays).
	if d := max(now, t.TimeSigned) - min(now, t.TimeSigned); d > uint64(t.Fudge) || !e.observe(t.TimeSigned) {
		req.Error = BadTime
		return req, nil
	}
	// RFC 8945 §5.2.4: a truncation allowed by §5.2.2.1 but shorter
	// than the local policy is BADTRUNC. Tern's policy is the whole
	// MAC, as it sends it.
	if len(mac) < h.Size() {
		req.Error = BadTrunc
	}
	return req, nil
}

// observe records ts as a verified time signed of the key, and reports
// whether it is not earlier than the latest one recorded.
func (e *entry) observe(ts uint64) bool {
	for {
		last := e.latest.Load()
		if ts < last {
			return false
		}
		if ts == last || e.latest.CompareAndSwap(last, ts) {
			return true
		}
	}
}

// hexBytes decodes a MAC or other data as miekg/dns gives them (hex).
func hexBytes(s string) ([]byte, error) { return hex.DecodeString(s) }

// variables are the TSIG variables a MAC covers (RFC 8945 §4.3.3); name
// and alg in wire form.
type variables struct {
	name, alg  []byte
	timeSigned uint64
	fudge      uint16
	err        uint16
	other      []byte
}

// write writes the variables to h, through scratch: all of them, or with
// timersOnly the time signed and fudge alone (RFC 8945 §5.3.1, the
// messages of a stream after the first).
func (v *variables) write(h hash.Hash, timersOnly bool, scratch []byte) {
	out := scratch[:0]
	if !timersOnly {
		out = append(out, v.name...)
		out = binary.BigEndian.AppendUint16(out, dns.ClassANY)
		out = binary.BigEndian.AppendUint32(out, 0) // TTL
		out = append(out, v.alg...)
	}
	out = binary.BigEndian.AppendUint16(out, uint16(v.timeSigned>>32))
	out = binary.BigEndian.AppendUint32(out, uint32(v.timeSigned))
	out = binary.BigEndian.AppendUint16(out, v.fudge)
	if !timersOnly {
		out = binary.BigEndian.AppendUint16(out, v.err)
		out = binary.BigEndian.AppendUint16(out, uint16(len(v.other)))
		out = append(out, v.other...)
	}
	h.Write(out)
}

// wireName is name (lowercase, fully qualified: a key or algorithm
// name) in uncompressed wire form (RFC 8945 §4.3.3: canonical form).
func wireName(name string) ([]byte, error) {
	w, err := wire.NameWire(name)
	if err != nil {
		return nil, fmt.Errorf("tsig: name %q: %w", name, err)
	}
	return w, nil
}

// Signer signs the responses to one request: a single response, or each
// message of a stream in turn (RFC 8945 §5.3.1: the first message's MAC
// covers the query's MAC and the whole TSIG variables, each later one
// the MAC before it and only the timers). It is not safe for concurrent
// use.
type Signer struct {
	req  *Request
	h    hash.Hash // nil: the responses are not signed (BADKEY, BADSIG)
	prev []byte    // the MAC of the last message signed
	n    int       // messages signed
	now  func() time.Time
	err  error
	// scratch is where the TSIG variables are written for the HMAC:
	// the largest (two names and a BADTIME's time) is under 600 bytes.
	scratch [600]byte
}

// Signer returns a Signer for the responses to r.
func (r *Request) Signer() *Signer {
	s := &Signer{req: r, now: time.Now}
	if r.Key != nil && r.Error != BadKey && r.Error != BadSig {
		s.h, s.err = r.Key.newMAC()
	}
	return s
}

// Sign appends to msg, a response without TSIG, its TSIG record, and
// returns it: signed with the request's key, or, for a request that
// failed with BADKEY or BADSIG, unsigned with the error (RFC 8945
// §5.3.2). A BADTIME response is signed and carries the server's time in
// Other Data (§5.2.3), a BADTRUNC one is signed with the whole MAC
// (§5.3.2). The MAC covers msg as it is (its ID is the original ID);
// msg's ARCOUNT is incremented in place, and the record is appended in
// msg's capacity when it fits (MaxLen bounds it), so that a stream's
// messages are signed without allocating.
func (s *Signer) Sign(msg []byte) ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	if len(msg) < 12 {
		return nil, errors.New("tsig: sign: not a DNS message")
	}
	now := uint64(s.now().Unix())
	v := variables{name: s.req.nameWire, alg: s.req.algWire, timeSigned: now, fudge: Fudge, err: s.req.Error}
	if s.req.Error == BadTime {
		// RFC 8945 §5.2.3: the request's time signed, and ours in
		// Other Data, so that the client can see the difference.
		v.timeSigned = s.req.timeSigned
		v.other = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, uint16(now>>32)), uint32(now))
	}
	var mac []byte
	if s.h != nil {
		h := s.h
		h.Reset()
		prior := s.req.mac
		if s.n > 0 {
			prior = s.prev
		}
		// RFC 8945 §4.3.1, §5.3.1: the request's MAC (or the previous
		// message's), length first; the message; the variables.
		h.Write(binary.BigEndian.AppendUint16(s.scratch[:0], uint16(len(prior))))
		h.Write(prior)
		h.Write(msg)
		v.write(h, s.n > 0, s.scratch[:0])
		s.prev = h.Sum(s.prev[:0])
		mac = s.prev
	} else {
		// RFC 8945 §5.3.2: an unsigned error carries no time either
		// (as miekg/dns and Knot send it).
		v.timeSigned = 0
	}
	origID := binary.BigEndian.Uint16(msg)
	binary.BigEndian.PutUint16(msg[10:], binary.BigEndian.Uint16(msg[10:])+1)
	msg = append(msg, v.name...)
	msg = binary.BigEndian.AppendUint16(msg, dns.TypeTSIG)
	msg = binary.BigEndian.AppendUint16(msg, dns.ClassANY)
	msg = binary.BigEndian.AppendUint32(msg, 0)
	rdlen := len(msg)
	msg = append(msg, 0, 0)
	msg = append(msg, v.alg...)
	msg = binary.BigEndian.AppendUint16(msg, uint16(v.timeSigned>>32))
	msg = binary.BigEndian.AppendUint32(msg, uint32(v.timeSigned))
	msg = binary.BigEndian.AppendUint16(msg, v.fudge)
	msg = binary.BigEndian.AppendUint16(msg, uint16(len(mac)))
	msg = append(msg, mac...)
	msg = binary.BigEndian.AppendUint16(msg, origID)
	msg = binary.BigEndian.AppendUint16(msg, v.err)
	msg = binary.BigEndian.AppendUint16(msg, uint16(len(v.other)))
	msg = append(msg, v.other...)
	binary.BigEndian.PutUint16(msg[rdlen:], uint16(len(msg)-rdlen-2))
	s.n++
	return msg, nil
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
