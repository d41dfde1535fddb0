package tsig

import (
	"crypto/hmac"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"time"

	"github.com/miekg/dns"
)

// maxUnsigned is the number of messages of a stream that may follow one
// another without TSIG (RFC 8945 §5.3.1: "at least every 100th message
// MUST be signed").
const maxUnsigned = 99

// Stream checks the TSIG records of the responses to one request that a
// client signed with a key: a single response, or the messages of a
// stream such as a zone transfer in turn (RFC 8945 §5.3.1). The first
// message's MAC covers the request's MAC and all the TSIG variables,
// each later one the MAC before it, the messages since (unsigned ones
// included) and the timers only. It works on the messages as received,
// as Signer does on those it sends. It is not safe for concurrent use.
type Stream struct {
	key      Key
	nameWire []byte
	algWire  []byte
	h        hash.Hash
	prior    []byte // the request's MAC, then the last verified one's
	signed   int    // messages verified
	unsigned int    // messages since the last signed one
	now      func() time.Time
	scratch  [600]byte
}

// NewStream returns a Stream for the responses to a request signed with
// k whose MAC was requestMAC.
func NewStream(k Key, requestMAC []byte) (*Stream, error) {
	k.Name, k.Algorithm = dns.CanonicalName(k.Name), dns.CanonicalName(k.Algorithm)
	h, err := k.newMAC()
	if err != nil {
		return nil, err
	}
	s := &Stream{key: k, h: h, prior: append([]byte(nil), requestMAC...), now: time.Now}
	if s.nameWire, err = wireName(k.Name); err != nil {
		return nil, err
	}
	if s.algWire, err = wireName(k.Algorithm); err != nil {
		return nil, err
	}
	return s, nil
}

// Next checks msg, the next message of the stream, whose TSIG record is
// at offset at (its last record), or which has none (at < 0). A message
// without one is accepted where RFC 8945 §5.3.1 allows it (not the
// first, and at most 99 in a row); Done checks that the stream ended
// signed. msg is not changed.
func (s *Stream) Next(msg []byte, at int) error {
	if len(msg) < 12 {
		return errors.New("tsig: not a DNS message")
	}
	if s.unsigned == 0 {
		// RFC 8945 §4.3.1, §5.3.1: the prior MAC, length first.
		s.h.Reset()
		s.h.Write(binary.BigEndian.AppendUint16(s.scratch[:0], uint16(len(s.prior))))
		s.h.Write(s.prior)
	}
	if at < 0 {
		if s.signed == 0 {
			return errors.New("tsig: the answer to a signed request is not signed")
		}
		if s.unsigned++; s.unsigned > maxUnsigned {
			return fmt.Errorf("tsig: %d messages in a row without TSIG (RFC 8945 §5.3.1: at most %d)", s.unsigned, maxUnsigned)
		}
		s.h.Write(msg)
		return nil
	}
	if at < 12 || at > len(msg) || binary.BigEndian.Uint16(msg[10:]) == 0 {
		return errors.New("tsig: not the last record of the message")
	}
	rr, off, err := dns.UnpackRR(msg, at)
	if err != nil {
		return fmt.Errorf("tsig: unreadable record: %w", err)
	}
	t, ok := rr.(*dns.TSIG)
	if !ok || off != len(msg) {
		return errors.New("tsig: not the last record of the message")
	}
	if dns.CanonicalName(t.Hdr.Name) != s.key.Name || dns.CanonicalName(t.Algorithm) != s.key.Algorithm {
		return fmt.Errorf("tsig: signed with key %s (%s), not %s (%s)", t.Hdr.Name, t.Algorithm, s.key.Name, s.key.Algorithm)
	}
	if t.Error != 0 {
		// RFC 8945 §5.3.2: the server could not verify the request.
		return fmt.Errorf("tsig: answered %s", dns.RcodeToString[int(t.Error)])
	}
	mac, err := hex.DecodeString(t.MAC)
	if err != nil {
		return fmt.Errorf("tsig: unreadable MAC: %w", err)
	}
	if len(mac) != s.h.Size() {
		// RFC 8945 §5.2.4's policy, as for requests: the whole MAC.
		return fmt.Errorf("tsig: a MAC of %d octets for %s (%d)", len(mac), s.key.Algorithm, s.h.Size())
	}
	other, err := hex.DecodeString(t.OtherData)
	if err != nil {
		return fmt.Errorf("tsig: unreadable other data: %w", err)
	}
	// The message as the server signed it: without the TSIG record,
	// ARCOUNT one less, the original ID (RFC 8945 §4.3.2).
	var head [12]byte
	copy(head[:], msg)
	binary.BigEndian.PutUint16(head[0:], t.OrigId)
	binary.BigEndian.PutUint16(head[10:], binary.BigEndian.Uint16(msg[10:])-1)
	s.h.Write(head[:])
	s.h.Write(msg[12:at])
	v := variables{name: s.nameWire, alg: s.algWire, timeSigned: t.TimeSigned, fudge: t.Fudge, other: other}
	v.write(s.h, s.signed > 0, s.scratch[:0])
	if !hmac.Equal(s.h.Sum(s.scratch[:0]), mac) {
		return fmt.Errorf("tsig: message %d of the answer: the MAC does not verify (BADSIG)", s.signed+s.unsigned+1)
	}
	// RFC 8945 §5.2.3 (and §5.4 for the client): the time within the fudge.
	now := uint64(s.now().Unix())
	if d := max(now, t.TimeSigned) - min(now, t.TimeSigned); d > uint64(t.Fudge) {
		return fmt.Errorf("tsig: signed at %d, %d s from our clock, over the fudge of %d (BADTIME)", t.TimeSigned, d, t.Fudge)
	}
	s.prior = append(s.prior[:0], mac...)
	s.signed++
	s.unsigned = 0
	return nil
}

// Done reports whether the stream ended as RFC 8945 §5.3.1 requires: its
// last message signed.
func (s *Stream) Done() error {
	if s.signed == 0 || s.unsigned > 0 {
		return errors.New("tsig: the last message of the answer is not signed")
	}
	return nil
}
