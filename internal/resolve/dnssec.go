package resolve

import (
	"strings"

	"github.com/miekg/dns"
)

// What the resolver keeps of the DNSSEC records authorities send (it asks
// with DO=1 unless Options.NoDNSSEC): the RRSIGs of each RRset it uses and
// the NSEC and NSEC3 proofs, in Result and in the cache, for a validator.

// RRset is one RRset and the RRSIGs covering it, as the validator's
// VerifyRRset takes them.
type RRset struct {
	Name    string // canonical
	Type    uint16
	Records []dns.RR
	Sigs    []*dns.RRSIG
}

// RRsets splits rrs (a section of a Result or of an answer) into its
// RRsets, in the order of their first record, each RRSIG with the RRset
// it covers (same owner, case aside, and its type covered). An RRset of
// RRSIGs alone (signatures of records not in rrs) has no Records.
func RRsets(rrs []dns.RR) []RRset {
	type key struct {
		name string
		t    uint16
	}
	var out []RRset
	index := map[key]int{}
	for _, rr := range rrs {
		h := rr.Header()
		k := key{canonical(h.Name), h.Rrtype}
		sig, isSig := rr.(*dns.RRSIG)
		if isSig {
			k.t = sig.TypeCovered
		}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, RRset{Name: k.name, Type: k.t})
		}
		if isSig {
			out[i].Sigs = append(out[i].Sigs, sig)
		} else {
			out[i].Records = append(out[i].Records, rr)
		}
	}
	return out
}

// sigsOf returns the RRSIGs of rrs covering the RRset of name and type t.
func sigsOf(rrs []dns.RR, name string, t uint16) []dns.RR {
	var out []dns.RR
	for _, rr := range rrs {
		if sig, ok := rr.(*dns.RRSIG); ok && sig.TypeCovered == t && strings.EqualFold(sig.Hdr.Name, name) {
			out = append(out, rr)
		}
	}
	return out
}

// withSigs returns the RRset rrs of name and type t followed by the RRSIGs
// of from covering it (none for the types a signature cannot cover: ANY,
// and RRSIG itself, RFC 4034 §3.1.1).
func withSigs(rrs, from []dns.RR, name string, t uint16) []dns.RR {
	if t == dns.TypeANY || t == dns.TypeRRSIG {
		return rrs
	}
	return append(rrs, sigsOf(from, name, t)...)
}

// proof returns the NSEC and NSEC3 records of an authority section and
// the RRSIGs covering them: the proof of a negative answer or of a
// wildcard answer (RFC 4035 §3.1.3).
func proof(ns []dns.RR) []dns.RR {
	var out []dns.RR
	for _, rr := range ns {
		t := rr.Header().Rrtype
		if sig, ok := rr.(*dns.RRSIG); ok {
			t = sig.TypeCovered
		}
		if t == dns.TypeNSEC || t == dns.TypeNSEC3 {
			out = append(out, rr)
		}
	}
	return out
}

// dnssecType reports whether t is a type RFC 4035 §3.2.1 keeps from a
// client that did not set DO, unless it asked for it.
func dnssecType(t uint16) bool {
	return t == dns.TypeRRSIG || t == dns.TypeNSEC || t == dns.TypeNSEC3
}

// WithoutDNSSEC returns the answer and authority sections for a client
// that did not set DO (RFC 4035 §3.2.1): without RRSIG, NSEC and NSEC3
// records, except those of the type it asked (qtype) in the answer
// section. The Result is not changed (other clients of the same
// resolution may have set DO); the sections are copied only when
// something is dropped.
func (r *Result) WithoutDNSSEC(qtype uint16) (answer, authority []dns.RR) {
	strip := func(rrs []dns.RR, keep uint16) []dns.RR {
		i := 0
		for i < len(rrs) {
			if t := rrs[i].Header().Rrtype; dnssecType(t) && t != keep {
				break
			}
			i++
		}
		if i == len(rrs) {
			return rrs
		}
		out := append([]dns.RR(nil), rrs[:i]...)
		for _, rr := range rrs[i:] {
			if t := rr.Header().Rrtype; !dnssecType(t) || t == keep {
				out = append(out, rr)
			}
		}
		return out
	}
	return strip(r.Answer, qtype), strip(r.Authority, 0)
}
