package resolve

// Negative trust anchors (RFC 7646): domains whose DNSSEC validation an
// operator has turned off while their signatures are broken. Data at or
// below one is not validated and is Insecure (no AD, never SERVFAIL for
// being bogus, §2); nothing is synthesised there from NSEC records.
// They are configured (Options.NegativeAnchors, [resolver]
// negative-trust-anchors) and replaced as a whole on a reload
// (SetNegativeAnchors), without an end time: an operator removes one
// when the domain is mended (§6, as Unbound's domain-insecure).

// ntaSet is a set of negative trust anchors, canonical names.
type ntaSet map[string]bool

// SetNegativeAnchors replaces the negative trust anchors: validation is
// not done at and below each of names. Resolutions running keep the set
// they started with only as far as they already looked it up.
func (r *Resolver) SetNegativeAnchors(names []string) {
	s := ntaSet{}
	for _, n := range names {
		s[canonical(n)] = true
	}
	r.ntas.Store(&s)
}

// NegativeAnchor returns the negative trust anchor at or above name, if
// any.
func (r *Resolver) NegativeAnchor(name string) (string, bool) {
	s := r.ntas.Load()
	if s == nil || len(*s) == 0 {
		return "", false
	}
	for n := canonical(name); ; n = parent(n) {
		if (*s)[n] {
			return n, true
		}
		if n == "." {
			return "", false
		}
	}
}
