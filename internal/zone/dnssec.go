package zone

import (
	"bytes"
	"crypto/sha1"
	"encoding/base32"
	"encoding/binary"
	"sort"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/wire"
)

// NSEC3Chain is a zone's NSEC3 records (RFC 5155), kept apart from the
// normal name space: their owner names are hashes, and a query for one is
// answered as for any other absent name (RFC 5155 §7.2.8).
type NSEC3Chain struct {
	Iterations uint16
	Salt       []byte
	// Nodes are the NSEC3 owners sorted by hash; Hashes[i] is the raw
	// hash of Nodes[i]. Each node's NSEC3 RRset carries its RRSIGs.
	Nodes  []*Node
	Hashes [][sha1.Size]byte
}

// Hash computes the NSEC3 hash of a canonical wire name (RFC 5155 §5)
// without allocating: buf must hold the name plus the salt.
func (c *NSEC3Chain) Hash(name []byte, buf []byte) [sha1.Size]byte {
	n := copy(buf, name)
	n += copy(buf[n:], c.Salt)
	h := sha1.Sum(buf[:n])
	for i := uint16(0); i < c.Iterations; i++ {
		m := copy(buf, h[:])
		m += copy(buf[m:], c.Salt)
		h = sha1.Sum(buf[:m])
	}
	return h
}

// Find returns the NSEC3 node whose hash equals h (match true), or else
// the one that covers h: the last hash below it, wrapping around (RFC 5155
// §7.2: "covers").
func (c *NSEC3Chain) Find(h [sha1.Size]byte) (n *Node, match bool) {
	// The first index whose hash is greater than h.
	lo, hi := 0, len(c.Hashes)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(c.Hashes[m][:], h[:]) <= 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return c.Nodes[len(c.Nodes)-1], false
	}
	i := lo - 1
	return c.Nodes[i], c.Hashes[i] == h
}

// NSECCover returns the node with an NSEC record that is name itself or
// the closest before it in canonical order: the NSEC that matches or
// covers name (RFC 4034 §4.1.1). key is wire.CanonicalKey(name). nil in
// zones without NSEC.
func (z *Zone) NSECCover(key []byte) *Node {
	if len(z.nsec) == 0 {
		return nil
	}
	i := upperBound(z.nsecHeads, z.nsecKeys, key)
	if i == 0 {
		return z.nsec[len(z.nsec)-1]
	}
	return z.nsec[i-1]
}

// upperBound returns how many of the sorted keys are <= key; heads[i] is
// keyHead(keys[i]). Heads order keys as the keys do, ties aside (a zero
// pad byte may tie with a zero separator), so keys[i] <= key exactly when
// its head is smaller, or equal with the whole key <= key.
func upperBound(heads []uint64, keys [][]byte, key []byte) int {
	h := keyHead(key)
	lo, hi := 0, len(keys)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if hm := heads[m]; hm < h || hm == h && string(keys[m]) <= string(key) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// keyHead is the first 8 bytes of a canonical key as a big-endian word,
// zero-padded.
func keyHead(key []byte) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(key)
	}
	var b [8]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:])
}

// buildDNSSEC indexes the NSEC and NSEC3 chains of a signed zone.
func (c *compiler) buildDNSSEC() {
	z := c.z
	z.Signed = z.Apex.Get(dns.TypeDNSKEY) != nil
	var key []byte
	if !z.Signed {
		return
	}
	for _, n := range c.list {
		if n.Get(dns.TypeNSEC) != nil {
			z.nsec = append(z.nsec, n)
		}
	}
	keys := make([][]byte, len(z.nsec))
	for i, n := range z.nsec {
		key = wire.CanonicalKey(key, n.Name)
		keys[i] = append([]byte(nil), key...)
	}
	idx := make([]int, len(z.nsec))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return string(keys[idx[a]]) < string(keys[idx[b]]) })
	z.nsecKeys = make([][]byte, len(idx))
	z.nsecHeads = make([]uint64, len(idx))
	sorted := make([]*Node, len(idx))
	for i, j := range idx {
		z.nsecKeys[i] = keys[j]
		z.nsecHeads[i] = keyHead(keys[j])
		sorted[i] = z.nsec[j]
	}
	z.nsec = sorted

	if len(c.nsec3) == 0 {
		return
	}
	ch := &NSEC3Chain{}
	type hn struct {
		h [sha1.Size]byte
		n *Node
	}
	var list []hn
	first := true
	for _, n := range c.nsec3 {
		s := n.Get(dns.TypeNSEC3)
		if s == nil {
			continue
		}
		rd := s.Wire[10:]
		// RDATA: alg, flags, iterations(2), salt length, salt, ...
		if first && len(rd) >= 5 && len(rd) >= 5+int(rd[4]) {
			ch.Iterations = uint16(rd[2])<<8 | uint16(rd[3])
			ch.Salt = append([]byte(nil), rd[5:5+int(rd[4])]...)
			first = false
		}
		label := n.Name[1 : 1+int(n.Name[0])]
		raw, err := base32.HexEncoding.WithPadding(base32.NoPadding).DecodeString(string(bytes.ToUpper(label)))
		if err != nil || len(raw) != sha1.Size {
			continue
		}
		var h [sha1.Size]byte
		copy(h[:], raw)
		list = append(list, hn{h, n})
	}
	if len(list) == 0 {
		return
	}
	sort.Slice(list, func(a, b int) bool { return bytes.Compare(list[a].h[:], list[b].h[:]) < 0 })
	for _, e := range list {
		ch.Nodes = append(ch.Nodes, e.n)
		ch.Hashes = append(ch.Hashes, e.h)
	}
	z.NSEC3 = ch
	buf := make([]byte, 255+255+sha1.Size)
	for _, n := range c.list {
		if m, ok := ch.Find(ch.Hash(n.Name, buf)); ok {
			n.NSEC3 = m
		}
	}
}
