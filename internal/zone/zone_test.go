package zone

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/tern-dns/tern/internal/wire"
)

func compileText(t *testing.T, origin, text string) (*Zone, error) {
	t.Helper()
	recs, err := Parse(strings.NewReader(text), "t.zone", origin)
	if err != nil {
		return nil, err
	}
	return Compile(origin, recs)
}

const head = "$ORIGIN example.test.\n$TTL 300\n@ SOA ns1 host 1 2 3 4 60\n@ NS ns1\nns1 A 192.0.2.1\n"

// TestChecks asserts each load-time rule names file:line and the problem.
func TestChecks(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string // substrings of the error, each must appear
	}{
		{"no SOA", "$ORIGIN example.test.\n@ 300 NS ns1\n", []string{"no SOA record at the apex"}},
		{"two SOAs", head + "@ SOA ns2 host 2 2 3 4 60\n", []string{"t.zone:6: second SOA record (first at t.zone:3)"}},
		{"SOA off the apex", head + "x SOA ns1 host 1 2 3 4 60\n", []string{"t.zone:6: SOA record at x.example.test."}},
		{"no apex NS", "$ORIGIN example.test.\n@ 300 SOA ns1 host 1 2 3 4 60\n", []string{"no NS records at the apex"}},
		{"CNAME and other data", head + "w CNAME ns1\nw A 192.0.2.2\n", []string{"t.zone:7: A record beside a CNAME at w.example.test."}},
		{"two CNAMEs", head + "w CNAME ns1\nw CNAME www\n", []string{"t.zone:6: more than one CNAME"}},
		{"data below a delegation", head + "sub NS ns.sub\nns.sub A 192.0.2.3\nx.sub TXT hi\n", []string{"t.zone:8: TXT record at x.sub.example.test. below the delegation sub.example.test."}},
		{"non-glue at a delegation", head + "sub NS ns1\nsub MX 1 ns1\n", []string{"t.zone:7: MX record at the delegation sub.example.test."}},
		{"data below a DNAME", head + "d DNAME t.example.\nx.d A 192.0.2.9\n", []string{"t.zone:7: A record at x.d.example.test. below the DNAME at d.example.test. (RFC 6672 §2.4)"}},
		{"syntax error", head + "x A not-an-address\n", []string{"t.zone:6:"}},
		{"every error reported", head + "x CNAME ns1\nx MX 1 ns1\nw CNAME ns1\nw TXT x\n", []string{"t.zone:7:", "t.zone:9:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compileText(t, "example.test", tc.text)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestIncludeAndGenerate(t *testing.T) {
	_, err := Load("testdata/inc.zone", "example.test")
	if err == nil || !strings.Contains(err.Error(), "included.zone:3: A record beside a CNAME") {
		t.Fatalf("want the included file's line in %v", err)
	}
}

func TestCompiledFacts(t *testing.T) {
	z, err := compileText(t, "example.test.", head+
		"sub NS ns.sub\nns.sub A 192.0.2.3\n*.wild A 192.0.2.4\na.b.ent A 192.0.2.5\nmx MX 10 ns1\n"+
		"dup A 192.0.2.6\ndup A 192.0.2.6\nunk TYPE65280 \\# 2 0102\n")
	if err != nil {
		t.Fatal(err)
	}
	if z.Serial != 1 || z.NegTTL != 60 {
		t.Errorf("serial %d negTTL %d", z.Serial, z.NegTTL)
	}
	get := func(name string) *Node {
		w, _ := wire.NameWire(name)
		return z.Lookup(w)
	}
	if n := get("sub.example.test."); n == nil || n.Flags&Delegation == 0 {
		t.Error("sub is not a delegation")
	}
	if n := get("ns.sub.example.test."); n == nil || n.Cut == nil || NameString(n.Cut.Name) != "sub.example.test." {
		t.Error("glue has no cut")
	}
	if n := get("wild.example.test."); n == nil || n.WildcardChild == nil || n.Flags&NonTerminal == 0 {
		t.Error("wild: want an empty non-terminal with a wildcard child")
	}
	if n := get("b.ent.example.test."); n == nil || n.Flags&NonTerminal == 0 {
		t.Error("b.ent is not an empty non-terminal")
	}
	if n := get("mx.example.test."); n == nil || len(n.Get(15).Additional()) != 1 {
		t.Error("MX target not linked for the additional section")
	}
	if n := get("dup.example.test."); n == nil || n.Get(1).Count != 1 {
		t.Error("duplicate records not merged (RFC 2181 §5)")
	}
	if n := get("UNK.example.test."); n != nil {
		t.Error("lookup must be on canonical (lowercase) names")
	}
	if n := get("unk.example.test."); n == nil || n.Get(65280) == nil {
		t.Error("RFC 3597 type not loaded")
	}
	if z.Records != 10 { // 3 in head, 7 below (the duplicate counted once)
		t.Errorf("records %d, want 10", z.Records)
	}
}

// miekg/dns gives $GENERATE records TTL 3600; the $TTL in force applies.
func TestGenerateTTL(t *testing.T) {
	recs, err := Parse(strings.NewReader("$ORIGIN g.test.\n$TTL 300\n$GENERATE 1-2 h$ A 10.0.0.$\n$GENERATE 3-3 h$ 77 A 10.0.0.$\n$TTL 60\n$GENERATE 4-4 h$ A 10.0.0.$ ; comment\n"), "g", "g.test")
	if err != nil {
		t.Fatal(err)
	}
	want := []uint32{300, 300, 77, 60}
	if len(recs) != len(want) {
		t.Fatalf("%d records", len(recs))
	}
	for i, r := range recs {
		if r.RR.Header().Ttl != want[i] {
			t.Errorf("%v: TTL %d, want %d", r.RR, r.RR.Header().Ttl, want[i])
		}
	}
}

func TestRRsetTTLsAgree(t *testing.T) {
	z, err := compileText(t, "example.test.", head+"x 120 A 192.0.2.10\nx 60 A 192.0.2.11\n")
	if err != nil {
		t.Fatal(err)
	}
	w, _ := wire.NameWire("x.example.test.")
	set := z.Lookup(w).Get(1)
	if set.TTL != 60 {
		t.Errorf("set TTL %d, want the lowest, 60", set.TTL)
	}
	set.Each(func(tail []byte) {
		if ttl := uint32(tail[4])<<24 | uint32(tail[5])<<16 | uint32(tail[6])<<8 | uint32(tail[7]); ttl != 60 {
			t.Errorf("record TTL %d, want 60 (RFC 2181 §5.2)", ttl)
		}
	})
}

// TestNodeLayout keeps Node's comment true: 96 bytes, so that every other
// node of a slab starts a cache line, and the answer's fields (nodeHot,
// CutIndex included) within the first 64.
func TestNodeLayout(t *testing.T) {
	if s := unsafe.Sizeof(Node{}); s != 96 {
		t.Errorf("Node is %d bytes, want 96", s)
	}
	if nodeHot > 64 {
		t.Errorf("the answer's fields span %d bytes, more than a cache line", nodeHot)
	}
}

// TestCutIndex: the delegations are numbered densely from 0 (auth indexes
// its precomputed referrals by it), and nothing else is.
func TestCutIndex(t *testing.T) {
	z, err := compileText(t, "example.test.", head+"a NS ns.a\nns.a A 192.0.2.3\nb NS ns1\nwww A 192.0.2.2\n")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint32]string{}
	z.Nodes(func(n *Node) {
		if n.Flags&Delegation == 0 || n.Cut != nil {
			if n.CutIndex != 0 {
				t.Errorf("%s: not a delegation, CutIndex %d", name(n), n.CutIndex)
			}
			return
		}
		if int(n.CutIndex) >= z.Cuts || seen[n.CutIndex] != "" {
			t.Errorf("%s: CutIndex %d of %d cuts, seen at %s", name(n), n.CutIndex, z.Cuts, seen[n.CutIndex])
		}
		seen[n.CutIndex] = name(n)
	})
	if z.Cuts != 2 || len(seen) != 2 {
		t.Errorf("%d cuts, %d numbered, want 2 (a and b)", z.Cuts, len(seen))
	}
}
