package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/catalog"
	"github.com/tern-dns/tern/internal/config"
)

// fakeMembers is a consumer's zones without a server: what
// consumeVersion did to them, in order.
type fakeMembers struct {
	served map[string]string // zone -> catalog consumed ("" for none)
	did    []string
	fail   string // a zone whose add fails
}

func (f *fakeMembers) add(zc config.Zone) error {
	if zc.Origin == f.fail {
		f.did = append(f.did, "add "+zc.Origin+" failed")
		return errors.New("no")
	}
	if _, ok := f.served[zc.Origin]; ok {
		return fmt.Errorf("%s served already", zc.Origin)
	}
	f.served[zc.Origin] = zc.MemberOf
	f.did = append(f.did, fmt.Sprintf("add %s of %s from %v acl %v", zc.Origin, zc.MemberOf, zc.Primary, zc.ACL))
	return nil
}

func (f *fakeMembers) remove(origin string, purge bool) error {
	if _, ok := f.served[origin]; !ok {
		return fmt.Errorf("%s not served", origin)
	}
	delete(f.served, origin)
	f.did = append(f.did, fmt.Sprintf("remove %s purge=%v", origin, purge))
	return nil
}

func (f *fakeMembers) owner(origin string) (string, bool) {
	c, ok := f.served[origin]
	return c, ok
}

// catVersion is a catalog origin's version listing members: "zone" at its
// stable ID, "zone@id" at another, "zone>coo" with a coo property.
func catVersion(t *testing.T, origin string, members ...string) *catalog.Catalog {
	t.Helper()
	var names []string
	for _, m := range members {
		names = append(names, strings.FieldsFunc(m, func(r rune) bool { return r == '@' || r == '>' })[0]+".")
	}
	rrs := catalog.Build(origin, 1, nil)
	for i, m := range members {
		id := catalog.ID(names[i])
		if _, after, ok := strings.Cut(m, "@"); ok {
			id = after
		}
		rrs = append(rrs, &dns.PTR{Hdr: dns.RR_Header{Name: id + ".zones." + origin, Rrtype: dns.TypePTR, Class: dns.ClassINET}, Ptr: names[i]})
		if _, coo, ok := strings.Cut(m, ">"); ok {
			rrs = append(rrs, &dns.PTR{Hdr: dns.RR_Header{Name: "coo." + id + ".zones." + origin, Rrtype: dns.TypePTR, Class: dns.ClassINET}, Ptr: coo})
		}
	}
	c, err := catalog.Parse(origin, rrs)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestConsumeVersion: a consumer's state transitions (RFC 9432 §5) as
// consumeVersion makes them on a fake server: the catalog's versions
// one after another, what was done to the member zones.
func TestConsumeVersion(t *testing.T) {
	cat := config.Zone{Origin: "cat.test.", Primary: []string{"p"}, ACL: []string{"xfr"}, CatalogRole: config.CatalogInterpret}
	for _, tc := range []struct {
		name   string
		served map[string]string // before: zone -> catalog consumed
		other  *catalog.Catalog  // another catalog consumed, other.test.
		prev   []string          // nil: first version
		next   []string
		fail   string
		want   []string
		failed []string
	}{
		{name: "first version", next: []string{"a.test", "b.test"},
			want: []string{"add a.test. of cat.test. from [p] acl [xfr]", "add b.test. of cat.test. from [p] acl [xfr]"}},
		{name: "unchanged", served: map[string]string{"a.test.": "cat.test."}, prev: []string{"a.test"}, next: []string{"a.test"}},
		{name: "added and removed", served: map[string]string{"a.test.": "cat.test."}, prev: []string{"a.test"}, next: []string{"b.test"},
			want: []string{"remove a.test. purge=false", "add b.test. of cat.test. from [p] acl [xfr]"}},
		{name: "reset: ID changed", served: map[string]string{"a.test.": "cat.test."}, prev: []string{"a.test"}, next: []string{"a.test@new"},
			want: []string{"remove a.test. purge=true", "add a.test. of cat.test. from [p] acl [xfr]"}},
		{name: "served by the config: not taken", served: map[string]string{"a.test.": ""}, next: []string{"a.test"}},
		{name: "another catalog's, no coo: not taken", served: map[string]string{"a.test.": "other.test."},
			other: catVersion(t, "other.test.", "a.test"), next: []string{"a.test"}},
		{name: "another catalog's, coo names this one: adopted", served: map[string]string{"a.test.": "other.test."},
			other: catVersion(t, "other.test.", "a.test>cat.test."), next: []string{"a.test"},
			want: []string{"remove a.test. purge=false", "add a.test. of cat.test. from [p] acl [xfr]"}},
		{name: "released to its coo target: data kept", served: map[string]string{"a.test.": "cat.test."}, prev: []string{"a.test>other.test."}, next: nil,
			want: []string{"remove a.test. purge=false"}},
		{name: "an add fails: reported, retried next time", next: []string{"a.test", "b.test"}, fail: "a.test.",
			want: []string{"add a.test. failed", "add b.test. of cat.test. from [p] acl [xfr]"}, failed: []string{"a.test."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeMembers{served: map[string]string{}, fail: tc.fail}
			for z, c := range tc.served {
				f.served[z] = c
			}
			consumed := map[string]*catalog.Catalog{}
			if tc.other != nil {
				consumed["other.test."] = tc.other
			}
			var prev *catalog.Catalog
			if tc.prev != nil {
				prev = catVersion(t, "cat.test.", tc.prev...)
				consumed["cat.test."] = prev
			}
			_, failed, err := consumeVersion(cat, prev, catVersion(t, "cat.test.", tc.next...), f, consumed)
			if !slices.Equal(f.did, tc.want) {
				t.Errorf("did\n%q\nwant\n%q", f.did, tc.want)
			}
			if !slices.Equal(failed, tc.failed) || (err != nil) != (len(tc.failed) > 0) {
				t.Errorf("failed %v (%v), want %v", failed, err, tc.failed)
			}
		})
	}
}
