// Package signed serves a signed DNS hierarchy on loopback for the tests
// of validating resolvers (issue 12): a root, two TLDs and leaf zones
// signed by Tern's signer at the time of the test (NSEC, NSEC3, NSEC3
// with opt-out; RSA/SHA-256 and SHA-512, ECDSA P-256 and P-384,
// Ed25519), unsigned delegations, a DS of an unsupported algorithm or
// digest type alone, and the broken zones a validator must refuse, each with
// its own defect (zones.go). Every zone is served by Tern's authoritative
// engine; the root's DS is the trust anchor, written to a file in the
// form Unbound's trust-anchor-file and Tern's trust-anchor read.
package signed

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnssec"
	"github.com/tern-dns/tern/internal/dnstest/hierarchy"
	"github.com/tern-dns/tern/internal/trustanchor"
	"github.com/tern-dns/tern/internal/validator"
	"github.com/tern-dns/tern/internal/zone"
)

// Tree is a running signed hierarchy.
type Tree struct {
	// Addrs are its Addrs addresses, Port every server's port (53, or
	// the kernel's pick where 53 cannot be bound).
	Addrs []netip.Addr
	Port  uint16
	// Dir holds the root hints and the trust anchor.
	Dir string
	// HintsFile names the local root server (root.hints form);
	// AnchorFile holds the root's DS records (the trust anchor).
	HintsFile, AnchorFile string
	// Anchors are the trust anchors AnchorFile holds.
	Anchors validator.Anchors
	// Signed is when the zones were signed.
	Signed time.Time
}

// Start signs the hierarchy at the current time and serves it on the
// Addrs addresses 127.0.0.first and up (the caller's block of the
// address plan), until the test ends.
func Start(t testing.TB, first byte) *Tree {
	t.Helper()
	tr := &Tree{Dir: t.TempDir(), Signed: time.Now()}
	for i := range Addrs {
		tr.Addrs = append(tr.Addrs, netip.AddrFrom4([4]byte{127, 0, 0, first + byte(i)}))
	}
	tr.Port = hierarchy.ChoosePort(t, tr.Addrs)
	signed, anchor, err := signTree(tr.Addrs, tr.Signed)
	if err != nil {
		t.Fatalf("signed: %v", err)
	}
	var b strings.Builder
	for _, ds := range anchor {
		fmt.Fprintln(&b, ds.String())
	}
	tr.AnchorFile = filepath.Join(tr.Dir, "root.ds")
	tr.HintsFile = filepath.Join(tr.Dir, "root.hints")
	hints := fmt.Sprintf(".\t3600000\tNS\ta.root.\na.root.\t3600000\tA\t%s\n", tr.Addrs[0])
	if err := os.WriteFile(tr.AnchorFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tr.HintsFile, []byte(hints), 0o644); err != nil {
		t.Fatal(err)
	}
	if tr.Anchors, err = trustanchor.Read(strings.NewReader(b.String()), tr.AnchorFile); err != nil {
		t.Fatal(err)
	}
	for i, a := range tr.Addrs {
		var zs []*zone.Zone
		for _, s := range signed {
			if s.server == i {
				zs = append(zs, s.zone)
			}
		}
		srv, err := hierarchy.Serve([]string{netip.AddrPortFrom(a, tr.Port).String()}, zs)
		if err != nil {
			t.Fatalf("signed: %v", err)
		}
		t.Cleanup(srv.Close)
	}
	return tr
}

// servedZone is a zone ready to serve, its records, and the server
// (address offset) that serves it.
type servedZone struct {
	server int
	zone   *zone.Zone
	rrs    []dns.RR
}

// signTree builds every zone of the layout, children before their
// parents (whose DS records they give), and returns them with the root's
// DS records.
func signTree(addrs []netip.Addr, now time.Time) ([]servedZone, []*dns.DS, error) {
	ds := map[string][]*dns.DS{}
	var out []servedZone
	for _, spec := range layout() {
		text := spec.text
		for i, a := range addrs {
			text = strings.ReplaceAll(text, fmt.Sprintf("{%d}", i), a.String())
		}
		for _, child := range spec.children {
			for _, d := range ds[child] {
				d.Hdr = dns.RR_Header{Name: child, Rrtype: dns.TypeDS, Class: dns.ClassINET, Ttl: 3600}
				text += d.String() + "\n"
			}
		}
		rrs, err := parse(spec.origin, text)
		if err != nil {
			return nil, nil, err
		}
		var parentDS []*dns.DS
		if spec.alg != 0 {
			if rrs, parentDS, err = spec.sign(rrs, now); err != nil {
				return nil, nil, err
			}
		}
		if spec.publish != nil {
			var extra []dns.RR
			extra, parentDS = spec.publish(spec.origin)
			rrs = append(rrs, extra...)
		}
		if spec.tamper != nil {
			if rrs, err = spec.tamper(rrs); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", spec.origin, err)
			}
		}
		ds[spec.origin] = parentDS
		var b strings.Builder
		for _, rr := range rrs {
			fmt.Fprintln(&b, rr.String())
		}
		z, err := zone.Read(strings.NewReader(b.String()), spec.origin, spec.origin)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, servedZone{spec.server, z, rrs})
	}
	return out, ds["."], nil
}

// parse reads zone-file text ($TTL 300 unless it sets one).
func parse(origin, text string) ([]dns.RR, error) {
	var rrs []dns.RR
	zp := dns.NewZoneParser(strings.NewReader("$TTL 300\n"+text), origin, origin)
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		rrs = append(rrs, rr)
	}
	if err := zp.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", origin, err)
	}
	return rrs, nil
}

// sign signs rrs with a new key of the zone's algorithm (a CSK: flags
// 257 unless the spec says otherwise, signing everything) and the
// spec's extra keys, and returns the signed records and the DS records
// the parent publishes.
func (s zoneSpec) sign(rrs []dns.RR, now time.Time) ([]dns.RR, []*dns.DS, error) {
	flags := uint16(dnssec.FlagsKSK)
	if s.flags != 0 {
		flags = s.flags
	}
	k, err := dnssec.GenerateKey(s.origin, flags, s.alg, 3600, nil)
	if err != nil {
		return nil, nil, err
	}
	k.SignZone, k.SignKeys = true, true
	keys := []*dnssec.Key{k}
	if s.extraKeys != nil {
		extra, err := s.extraKeys(k)
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, extra...)
	}
	opts := s.opts
	if s.window != nil {
		opts.Inception, opts.Expiration = s.window(now)
	}
	signed, err := dnssec.SignZone(context.Background(), rrs, s.origin, keys, opts, now)
	if err != nil {
		return nil, nil, err
	}
	ds := []*dns.DS{k.DNSKEY.ToDS(dns.SHA256)}
	if s.parentDS != nil {
		if ds, err = s.parentDS(); err != nil {
			return nil, nil, err
		}
	}
	if s.resign != nil {
		if signed, err = resign(signed, k, s.resign); err != nil {
			return nil, nil, err
		}
	}
	return signed, ds, nil
}

// resign applies change to the records it selects (returning true) and
// signs their RRsets again with k, so that the changed records carry
// valid signatures: a defect of content, not of signature.
func resign(rrs []dns.RR, k *dnssec.Key, change func(dns.RR) bool) ([]dns.RR, error) {
	type key struct {
		name string
		typ  uint16
	}
	changed := map[key][]dns.RR{}
	var order []key
	for _, rr := range rrs {
		if _, ok := rr.(*dns.RRSIG); ok || !change(rr) {
			continue
		}
		h := rr.Header()
		kk := key{dns.CanonicalName(h.Name), h.Rrtype}
		if changed[kk] == nil {
			order = append(order, kk)
		}
		changed[kk] = append(changed[kk], rr)
	}
	out := rrs[:0:0]
	var template *dns.RRSIG
	for _, rr := range rrs {
		if sig, ok := rr.(*dns.RRSIG); ok {
			if changed[key{dns.CanonicalName(sig.Hdr.Name), sig.TypeCovered}] != nil {
				template = sig
				continue
			}
		}
		out = append(out, rr)
	}
	if template == nil {
		return nil, fmt.Errorf("resign: nothing changed")
	}
	for _, kk := range order {
		set := changed[kk]
		sig := &dns.RRSIG{
			Hdr:        dns.RR_Header{Name: set[0].Header().Name, Rrtype: dns.TypeRRSIG, Class: dns.ClassINET, Ttl: set[0].Header().Ttl},
			Algorithm:  k.DNSKEY.Algorithm,
			KeyTag:     k.Tag(),
			SignerName: template.SignerName,
			Inception:  template.Inception,
			Expiration: template.Expiration,
		}
		if err := sig.Sign(k.Signer, set); err != nil {
			return nil, fmt.Errorf("resign %s: %w", kk.name, err)
		}
		out = append(out, sig)
	}
	return out, nil
}
