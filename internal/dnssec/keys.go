package dnssec

import (
	"crypto"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/durable"
)

// DNSKEY flag values (RFC 4034 §2.1.1, RFC 3757): a ZSK has only the Zone
// Key bit; a KSK also has the Secure Entry Point bit.
const (
	FlagsZSK = 256
	FlagsKSK = 257
)

// Key is one DNSSEC key of a zone. A Key passed to SignZone is published in
// the DNSKEY RRset; the Sign* fields say what it signs during this signing
// run, which lets the key manager publish keys before they sign (ZSK
// pre-publication) and keep them after they stop (RFC 7583 §3).
type Key struct {
	// DNSKEY is the public key record (owner is the zone apex).
	DNSKEY *dns.DNSKEY
	// Signer is the private key; nil for a key that is only published.
	Signer crypto.Signer
	// Base is the BIND-style file name without extension
	// (K<zone>+<alg>+<tag>), empty for keys that were never written.
	Base string
	// SignZone makes the key sign every authoritative RRset other than
	// the DNSKEY, CDS and CDNSKEY RRsets (the ZSK role).
	SignZone bool
	// SignKeys makes the key sign the DNSKEY, CDS and CDNSKEY RRsets (the
	// KSK role, RFC 6781 §3.1).
	SignKeys bool
	// CDS publishes CDS and CDNSKEY records for this key at the apex so
	// the parent can pick up its DS (RFC 7344 §4, RFC 8078).
	CDS bool
	// CDSOnly leaves the key out of the DNSKEY RRset while its CDS and
	// CDNSKEY are published: the incoming KSK of a double-DS rollover
	// (RFC 7583 §3.3.2). It implies that the key signs nothing.
	CDSOnly bool
}

// Tag returns the key tag (RFC 4034 Appendix B).
func (k *Key) Tag() uint16 { return k.DNSKEY.KeyTag() }

// IsKSK reports whether the key has the Secure Entry Point flag.
func (k *Key) IsKSK() bool { return k.DNSKEY.Flags&1 == 1 }

// ParseAlgorithm maps an algorithm name (as in the CLI, case-insensitive,
// or its number) to the DNSSEC algorithm number. Only algorithms
// recommended for signing by RFC 8624 §3.1 are accepted.
func ParseAlgorithm(s string) (uint8, error) {
	switch strings.ToLower(s) {
	case "ecdsap256sha256", "13", "ecdsa256", "ecdsap256":
		return dns.ECDSAP256SHA256, nil
	case "ed25519", "15":
		return dns.ED25519, nil
	case "ecdsap384sha384", "14":
		return dns.ECDSAP384SHA384, nil
	case "rsasha256", "8":
		return dns.RSASHA256, nil
	}
	return 0, fmt.Errorf("unsupported DNSSEC algorithm %q (want ecdsap256sha256 or ed25519)", s)
}

// keyBits returns the key size miekg/dns's Generate expects for alg.
func keyBits(alg uint8) int {
	switch alg {
	case dns.ECDSAP384SHA384:
		return 384
	case dns.RSASHA256, dns.RSASHA512:
		return 2048
	}
	return 256
}

// GenerateKey creates a new key for zone origin with the given flags
// (FlagsKSK or FlagsZSK), algorithm and DNSKEY TTL. avoid lists key tags
// already in use: RFC 6781 §3.4 asks signers to avoid tag collisions within
// a zone, so a colliding key is thrown away and generated again, and so is
// one with key tag 0, which miekg/dns cannot sign with.
func GenerateKey(origin string, flags uint16, alg uint8, ttl uint32, avoid map[uint16]bool) (*Key, error) {
	origin = dns.CanonicalName(origin)
	for range 64 {
		pub := &dns.DNSKEY{
			Hdr:       dns.RR_Header{Name: origin, Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: ttl},
			Flags:     flags,
			Protocol:  3,
			Algorithm: alg,
		}
		priv, err := pub.Generate(keyBits(alg))
		if err != nil {
			return nil, fmt.Errorf("generate %s key for %s: %w", dns.AlgorithmToString[alg], origin, err)
		}
		signer, ok := priv.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("generate key for %s: private key %T cannot sign", origin, priv)
		}
		// miekg/dns's RRSIG.Sign refuses key tag 0 (ErrKey, "bad key"),
		// though RFC 4034 Appendix B allows it: one key in 65,536 would
		// make signing fail (a 1,000-zone hierarchy hit it), so draw again.
		if tag := pub.KeyTag(); tag == 0 || avoid[tag] {
			continue
		}
		return &Key{DNSKEY: pub, Signer: signer, SignZone: flags&1 == 0, SignKeys: flags&1 == 1}, nil
	}
	return nil, fmt.Errorf("generate key for %s: could not avoid key tag collisions", origin)
}

// KeyBaseName returns the BIND file name stem K<zone>+<alg>+<tag> for a key
// (the zone without its trailing dot, except for the root).
func KeyBaseName(k *dns.DNSKEY) string {
	name := strings.TrimSuffix(dns.CanonicalName(k.Hdr.Name), ".")
	if name == "" {
		name = "."
	}
	return fmt.Sprintf("K%s+%03d+%05d", name, k.Algorithm, k.KeyTag())
}

// WriteKey stores a key as BIND-style files in dir: <base>.key holds the
// DNSKEY record and <base>.private the private key (mode 0600). dir is
// created with mode 0700 when missing. Both files are written atomically.
// created is recorded in the .private file as BIND's Created timing field.
func WriteKey(dir string, k *Key, created time.Time) error {
	return writeKeyFiles(dir, k, created, "")
}

// writeKeyFiles is WriteKey with suffix appended to both file names: the
// key manager writes a new key as <base>.private.pending and
// <base>.key.pending, names no key reader looks at, until the state that
// lists the key is stored.
func writeKeyFiles(dir string, k *Key, created time.Time, suffix string) error {
	if k.Signer == nil {
		return fmt.Errorf("write key %d: no private key", k.Tag())
	}
	if err := durable.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write key: %w", err)
	}
	base := KeyBaseName(k.DNSKEY)
	role := "zone-signing"
	if k.IsKSK() {
		role = "key-signing"
	}
	pub := fmt.Sprintf("; This is a %s key, keyid %d, for %s\n; Created: %s\n%s\n",
		role, k.Tag(), k.DNSKEY.Hdr.Name, created.UTC().Format("20060102150405"), k.DNSKEY.String())
	priv := k.DNSKEY.PrivateKeyString(k.Signer)
	if priv == "" {
		return fmt.Errorf("write key %s: cannot encode private key", base)
	}
	priv += "Created: " + created.UTC().Format("20060102150405") + "\n"
	// Private key first: a .key without its .private would look like a
	// usable key to a later run.
	if err := durable.WriteFile(filepath.Join(dir, base+".private"+suffix), []byte(priv), 0o600); err != nil {
		return err
	}
	if err := durable.WriteFile(filepath.Join(dir, base+".key"+suffix), []byte(pub), 0o644); err != nil {
		return err
	}
	k.Base = base
	return nil
}

// ReadKey loads the key whose files are <base>.key and <base>.private.
func ReadKey(base string) (*Key, error) {
	pubText, err := os.ReadFile(base + ".key")
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	var pub *dns.DNSKEY
	zp := dns.NewZoneParser(strings.NewReader(string(pubText)), "", base+".key")
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		if k, isKey := rr.(*dns.DNSKEY); isKey {
			pub = k
			break
		}
	}
	if err := zp.Err(); err != nil {
		return nil, fmt.Errorf("read key %s.key: %w", base, err)
	}
	if pub == nil {
		return nil, fmt.Errorf("read key %s.key: no DNSKEY record", base)
	}
	pub.Hdr.Name = dns.CanonicalName(pub.Hdr.Name)
	f, err := os.Open(base + ".private")
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	defer f.Close()
	priv, err := pub.ReadPrivateKey(f, base+".private")
	if err != nil {
		return nil, fmt.Errorf("read key %s.private: %w", base, err)
	}
	signer, ok := priv.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("read key %s.private: private key %T cannot sign", base, priv)
	}
	return &Key{DNSKEY: pub, Signer: signer, Base: filepath.Base(base),
		SignZone: pub.Flags&1 == 0, SignKeys: pub.Flags&1 == 1}, nil
}

// LoadKeys reads every key for origin from dir (files K<origin>+*.key with
// a matching .private), sorted KSKs first, then by tag. A missing directory
// yields no keys and no error.
func LoadKeys(dir, origin string) ([]*Key, error) {
	origin = dns.CanonicalName(origin)
	stem := strings.TrimSuffix(origin, ".")
	if stem == "" {
		stem = "."
	}
	matches, err := filepath.Glob(filepath.Join(dir, "K"+durable.GlobEscape(stem)+"+*.key"))
	if err != nil {
		return nil, fmt.Errorf("load keys from %s: %w", dir, err)
	}
	var keys []*Key
	for _, m := range matches {
		k, err := ReadKey(strings.TrimSuffix(m, ".key"))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // public half only: not ours to sign with
			}
			return nil, err
		}
		if k.DNSKEY.Hdr.Name != origin {
			continue
		}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].IsKSK() != keys[j].IsKSK() {
			return keys[i].IsKSK()
		}
		return keys[i].Tag() < keys[j].Tag()
	})
	return keys, nil
}

// EnsureKeys loads the keys of origin from dir and, when there is no KSK or
// no ZSK of algorithm alg, generates and stores the missing one. It returns
// all keys of that algorithm and whether any key was created.
func EnsureKeys(dir, origin string, alg uint8, ttl uint32, now time.Time) ([]*Key, bool, error) {
	all, err := LoadKeys(dir, origin)
	if err != nil {
		return nil, false, err
	}
	var keys []*Key
	used := map[uint16]bool{}
	haveKSK, haveZSK := false, false
	for _, k := range all {
		used[k.Tag()] = true
		if k.DNSKEY.Algorithm != alg {
			continue
		}
		keys = append(keys, k)
		if k.IsKSK() {
			haveKSK = true
		} else {
			haveZSK = true
		}
	}
	created := false
	for _, need := range []struct {
		have  bool
		flags uint16
	}{{haveKSK, FlagsKSK}, {haveZSK, FlagsZSK}} {
		if need.have {
			continue
		}
		k, err := GenerateKey(origin, need.flags, alg, ttl, used)
		if err != nil {
			return nil, false, err
		}
		if err := WriteKey(dir, k, now); err != nil {
			return nil, false, err
		}
		used[k.Tag()] = true
		keys = append(keys, k)
		created = true
	}
	return keys, created, nil
}
