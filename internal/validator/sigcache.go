package validator

import (
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"sync"

	"github.com/miekg/dns"
)

// maxVerified bounds the signatures a sigCache remembers; when full it is
// emptied.
const maxVerified = 1 << 16

// sigCache remembers the signatures that verified, by what they were
// verified over: the key, the RRSIG's RDATA (signature, validity window
// and all) and the RRset as the signature covers it (RFC 4034 §3.1.8.1,
// §6.2: the owner lower-cased and, for a wildcard expansion, the
// wildcard's; each record's type, class and RDATA). The same signature
// over the same data by the same key verifies again: it is not computed
// again. This is what a cold answer from a wildcard costs most (every
// expansion carries the wildcard's one signature over the same signed
// data, RFC 4035 §5.3.2) and what the NSEC proof beside it costs (the
// same NSEC RRset for most names). The validity window is still checked
// at each use (VerifyRRset), before the cache. The key holds the RDATA
// as received (names in it not lower-cased), so that two entries are
// never taken as one when their signed data could differ.
type sigCache struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]struct{}
}

// scratch is a buffer to build a sigCache key in.
type scratch struct{ key, pack []byte }

var scratchPool = sync.Pool{New: func() any { return &scratch{pack: make([]byte, dns.MaxMsgSize)} }}

// sigKey returns the sigCache key of sig over rrset with k; false when
// it cannot be made (a record that does not pack).
func sigKey(sig *dns.RRSIG, k *dns.DNSKEY, rrset []dns.RR) ([sha256.Size]byte, bool) {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	b := s.key[:0]
	str := func(v string) {
		b = binary.BigEndian.AppendUint16(b, uint16(len(v)))
		b = append(b, v...)
	}
	b = binary.BigEndian.AppendUint16(b, k.Flags)
	b = append(b, k.Protocol, k.Algorithm)
	str(k.PublicKey)
	b = binary.BigEndian.AppendUint16(b, sig.TypeCovered)
	b = append(b, sig.Algorithm, sig.Labels)
	b = binary.BigEndian.AppendUint32(b, sig.OrigTtl)
	b = binary.BigEndian.AppendUint32(b, sig.Expiration)
	b = binary.BigEndian.AppendUint32(b, sig.Inception)
	b = binary.BigEndian.AppendUint16(b, sig.KeyTag)
	str(strings.ToLower(sig.SignerName))
	str(sig.Signature)
	// The owner as signed (RFC 4035 §5.3.2): a wildcard expansion's is
	// "*." and the signature's Labels rightmost labels.
	owner := rrset[0].Header().Name
	if n := dns.CountLabel(owner); int(sig.Labels) < n {
		idx := dns.Split(owner)
		owner = "*." + owner[idx[n-int(sig.Labels)]:]
	}
	str(strings.ToLower(owner))
	var ok bool
	for _, rr := range rrset {
		h := rr.Header()
		if !strings.EqualFold(h.Name, rrset[0].Header().Name) {
			return [sha256.Size]byte{}, false
		}
		end, err := dns.PackRR(rr, s.pack, 0, nil, false)
		if err != nil {
			return [sha256.Size]byte{}, false
		}
		// The RDATA: what follows the owner, type, class, TTL and
		// RDLENGTH (the owner packs uncompressed).
		start := end - int(h.Rdlength)
		if start < 0 {
			return [sha256.Size]byte{}, false
		}
		b = binary.BigEndian.AppendUint16(b, h.Rrtype)
		b = binary.BigEndian.AppendUint16(b, h.Class)
		b = binary.BigEndian.AppendUint16(b, h.Rdlength)
		b = append(b, s.pack[start:end]...)
		ok = true
	}
	s.key = b
	return sha256.Sum256(b), ok
}

// has reports whether the signature of key verified before.
func (c *sigCache) has(key [sha256.Size]byte) bool {
	c.mu.Lock()
	_, ok := c.m[key]
	c.mu.Unlock()
	return ok
}

// add remembers that the signature of key verified.
func (c *sigCache) add(key [sha256.Size]byte) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxVerified {
		c.m = make(map[[sha256.Size]byte]struct{}, 1024)
	}
	c.m[key] = struct{}{}
	c.mu.Unlock()
}
