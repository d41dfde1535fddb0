package wire

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// collidingLabels returns two different labels whose one-label names have
// the same suffix hash, found by search (the hash is fixed, so the search
// is deterministic).
func collidingLabels(t *testing.T) (string, string) {
	t.Helper()
	var b Builder
	seen := make(map[uint32]string)
	for i := 0; i < 1<<21; i++ {
		l := fmt.Sprintf("c%x", i)
		h := b.suffixHashes(wireName(t, l+"."))[0]
		if o, ok := seen[h]; ok {
			return o, l
		}
		seen[h] = l
	}
	t.Fatal("no colliding labels found")
	return "", ""
}

// TestCompressionPointers writes names after a question and decodes the
// message with miekg/dns: every name must decode to what was written
// (with the client's case where it was compressed against the question,
// whose suffixes are matched by their lowercase form), and names sharing a
// suffix save exactly the bytes of the longest suffix they share. Each case is run with the
// table searched one by one and with it hashed (after filler names).
func TestCompressionPointers(t *testing.T) {
	c1, c2 := collidingLabels(t)
	for _, tc := range []struct {
		name  string
		qname string
		names []string // written in order, as CNAME targets (owner: a pointer to the question)
		want  []string // the names decoded, when not the names written
		saved int      // bytes saved against the names written in full
	}{
		{"suffix of the question", "www.example.test.",
			[]string{"mail.example.test.", "example.test.", "test."}, nil, 12 + 12 + 4},
		{"suffix of an earlier name", "q.",
			[]string{"a.b.c.", "x.b.c.", "b.c.", "c.", "y.a.b.c."}, nil, 0 + 3 + 3 + 1 + 5},
		{"question in upper case: lowercase names point at it", "WWW.Example.TEST.",
			[]string{"mail.example.test.", "www.example.test."},
			[]string{"mail.Example.TEST.", "WWW.Example.TEST."}, 12 + 16},
		{"names with upper case are not folded", "www.example.test.",
			[]string{"Mail.Example.TEST.", "x.Example.TEST.", "x.example.test."}, nil, 0 + 12 + 12},
		{"names differing in case only", "q.",
			[]string{"ab.cd.", "AB.cd.", "ab.CD.", "Ab.cd.", "ab.cd."}, nil, 0 + 2 + 0 + 2 + 5},
		{"colliding suffix hashes", "q.",
			[]string{c1 + ".", c2 + ".", "x." + c1 + ".", "x." + c2 + ".", c2 + ".", c1 + "."}, nil,
			0 + 0 + len(c1) + len(c2) + len(c2) + len(c1)},
		{"root and single labels", "q.",
			[]string{".", "q.", "r.", "."}, nil, 0 + 1 + 0 + 0},
	} {
		for _, fill := range []int{0, linearMax + 8} {
			t.Run(fmt.Sprintf("%s/filler %d", tc.name, fill), func(t *testing.T) {
				var q Query
				raw := parsedQuestion(t, &q, tc.qname, dns.TypeCNAME)
				var b Builder
				b.Reset(make([]byte, 0, 65535), 65535)
				b.Header(7, FlagQR|FlagAA)
				b.Question(raw, &q)
				names := tc.names
				for i := 0; i < fill; i++ {
					names = append([]string{fmt.Sprintf("f%d.filler.", i)}, names...)
				}
				full, start := 0, 0
				for i, n := range names {
					if i == fill {
						start = b.Len()
					}
					w := wireName(t, n)
					if i >= fill {
						full += 12 + len(w)
					}
					b.RRAt(HeaderLen, rrTail(TypeCNAME, nil, w))
				}
				if fill > 0 && !b.hashed {
					t.Fatal("the table was not hashed")
				}
				b.CountAnswer(len(names))
				msg := b.Finish()
				var m dns.Msg
				if err := m.Unpack(msg); err != nil {
					t.Fatalf("unpack: %v\n% x", err, msg)
				}
				if len(m.Answer) != len(names) {
					t.Fatalf("%d answers, want %d", len(m.Answer), len(names))
				}
				want := tc.want
				if want == nil {
					want = tc.names
				}
				for i, rr := range m.Answer[fill:] {
					if got := rr.(*dns.CNAME).Target; got != want[i] {
						t.Errorf("name %d decodes to %q, want %q", i, got, want[i])
					}
				}
				if saved := full - (len(msg) - start); saved != tc.saved {
					t.Errorf("%d bytes saved by compression, want %d\n% x", saved, tc.saved, msg[start:])
				}
			})
		}
	}
}

// refBuilder is the compression model the Builder must match byte for
// byte: every suffix written where a pointer reaches is remembered (the
// question's lowercased) until rolled back, at most maxCompress of them,
// and a name points at its longest remembered suffix.
type refBuilder struct {
	buf  []byte
	seen map[string]int
}

func (r *refBuilder) question(raw []byte, q *Query) {
	r.buf = append(r.buf, raw...)
	for i := 0; i < q.nlabels-1; i++ {
		r.seen[string(q.Suffix(i))] = HeaderLen + q.SuffixOffset(i)
	}
}

func (r *refBuilder) name(name []byte) {
	for len(name) > 1 {
		if off, ok := r.seen[string(name)]; ok {
			r.buf = append(r.buf, 0xC0|byte(off>>8), byte(off))
			return
		}
		if len(r.seen) < maxCompress && len(r.buf) <= maxPointer {
			r.seen[string(name)] = len(r.buf)
		}
		l := int(name[0]) + 1
		r.buf = append(r.buf, name[:l]...)
		name = name[l:]
	}
	r.buf = append(r.buf, 0)
}

func (r *refBuilder) rollback(n int) {
	r.buf = r.buf[:n]
	for k, off := range r.seen {
		if off >= n {
			delete(r.seen, k)
		}
	}
}

// modelPair is a Builder and its refBuilder written in step, with the
// marks taken in both.
type modelPair struct {
	b        Builder
	r        refBuilder
	marks    []Mark
	refMarks []int
}

func newModelPair(raw []byte, q *Query) *modelPair {
	p := &modelPair{r: refBuilder{seen: make(map[string]int)}}
	p.b.Reset(make([]byte, 0, 70000), 70000)
	p.b.Header(0, 0)
	p.b.Question(raw, q)
	p.r.buf = append(p.r.buf, p.b.Bytes()[:HeaderLen]...)
	p.r.question(raw, q)
	p.r.buf[4], p.r.buf[5] = 0, 1
	return p
}

func (p *modelPair) mark() {
	p.marks = append(p.marks, p.b.Mark())
	p.refMarks = append(p.refMarks, len(p.r.buf))
}

// rollback goes back to the k-th mark, which it and later ones forget.
func (p *modelPair) rollback(k int) {
	p.b.Rollback(p.marks[k])
	p.r.rollback(p.refMarks[k])
	p.marks, p.refMarks = p.marks[:k], p.refMarks[:k]
}

// name writes w in both and reports where the messages first differ, or -1.
func (p *modelPair) name(w []byte) int {
	p.b.Name(w)
	p.r.name(w)
	if string(p.b.Bytes()) == string(p.r.buf) {
		return -1
	}
	return firstDiff(p.b.Bytes(), p.r.buf)
}

// TestCompressionMatchesModel writes random names (few distinct labels,
// mixed case, so that suffixes repeat and differ in case) with random
// rollbacks, across the 16 KiB pointer limit and past maxCompress
// entries, and compares the message with refBuilder's after every step.
func TestCompressionMatchesModel(t *testing.T) {
	labels := []string{"a", "b", "B", "mx", "mail", "example", "Example", "test", "x1", "longer-label-here"}
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		var q Query
		qname := "www.example.test."
		if seed%2 == 0 {
			qname = "WWW.Example.TEST."
		}
		p := newModelPair(parsedQuestion(t, &q, qname, dns.TypeMX), &q)
		names := 1000 + rng.IntN(4000)
		for i := 0; i < names && p.b.Len() < 64000; i++ {
			var sb strings.Builder
			if rng.IntN(4) == 0 {
				fmt.Fprintf(&sb, "u%d.", rng.IntN(100000)) // mostly new labels
			}
			for n := rng.IntN(4); n >= 0; n-- {
				sb.WriteString(labels[rng.IntN(len(labels))] + ".")
			}
			w := wireName(t, sb.String())
			switch rng.IntN(20) {
			case 0:
				p.mark()
			case 1:
				if len(p.marks) > 0 {
					p.rollback(rng.IntN(len(p.marks)))
				}
			}
			if d := p.name(w); d >= 0 {
				t.Fatalf("seed %d, name %d %q: message differs from the model at byte %d (length %d, model %d)",
					seed, i, sb.String(), d, p.b.Len(), len(p.r.buf))
			}
		}
		if p.b.ncomp != len(p.r.seen) {
			t.Fatalf("seed %d: %d entries, model %d", seed, p.b.ncomp, len(p.r.seen))
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestResetClearsTable: a message's names are not compressed against the
// previous message's, whether or not its table was hashed.
func TestResetClearsTable(t *testing.T) {
	var q Query
	raw := parsedQuestion(t, &q, "q.", dns.TypeMX)
	var b Builder
	buf := make([]byte, 0, 65535)
	for _, n := range []int{3, 3 * linearMax, 3} {
		b.Reset(buf, 65535)
		b.Header(0, 0)
		b.Question(raw, &q)
		start := b.Len()
		b.Name(wireName(t, fmt.Sprintf("n%d.x.", n)))
		if got := b.Bytes()[start:]; got[len(got)-1] != 0 {
			t.Fatalf("first name after Reset compressed: % x", got)
		}
		for i := 0; i < n; i++ {
			b.Name(wireName(t, fmt.Sprintf("%d.x.", i)))
		}
		// The slots of a hashed message must all be free again.
		b.Reset(buf, 65535)
		for s, i := range b.slots {
			if i != 0 {
				t.Fatalf("slot %d holds %d after Reset", s, i)
			}
		}
	}
}

// FuzzCompression drives the Builder and refBuilder with names and
// rollbacks spelled by the input (each byte: a label, an end of name, a
// mark or a rollback) and compares the messages after every name.
func FuzzCompression(f *testing.F) {
	f.Add([]byte{1, 2, 3, 0xF0, 1, 2, 0xF0, 3, 0xF0, 0xF1, 4, 5, 0xF0, 0xF2, 4, 0xF0})
	f.Add([]byte(strings.Repeat("\x01\x02\x03\xF0\x07\x02\xF0\x09\xF0\xF1\x04\xF0\x06\x05\x03\xF0\xF2", 40)))
	labels := []string{"a", "b", "B", "mx", "mail", "example", "Example", "test", "www", "WWW"}
	var q Query
	raw := parsedQuestion(f, &q, "www.Example.test.", dns.TypeMX)
	f.Fuzz(func(t *testing.T, in []byte) {
		p := newModelPair(raw, &q)
		var name []string
		for i, c := range in {
			switch {
			case c == 0xF1:
				p.mark()
			case c == 0xF2:
				if len(p.marks) > 0 {
					p.rollback(len(p.marks) - 1)
				}
			case c < 0xF0 && len(name) < 20:
				l := labels[int(c)%len(labels)]
				if c >= 0x80 {
					l = fmt.Sprintf("n%d", c)
				}
				name = append(name, l)
			case c == 0xF0:
				w := wireName(t, strings.Join(name, ".")+".")
				name = name[:0]
				for range 1 + i%40 { // repeated: the later ones are pointers
					if d := p.name(w); d >= 0 {
						t.Fatalf("message differs from the model at byte %d (length %d, model %d)", d, p.b.Len(), len(p.r.buf))
					}
				}
				if p.b.Len() > 65000 {
					return
				}
			}
		}
	})
}

// TestSuffixHashesDefinition: suffixHashes, which reads a label's last
// octets with one load where it can, gives the hashes of its definition
// (each label folded a word at a time, the tail octet by octet), for
// every tail length and position in the name.
func TestSuffixHashesDefinition(t *testing.T) {
	const mul = 0x9E3779B97F4A7C15
	plain := func(name []byte) []uint32 {
		var starts []int
		for i := 0; name[i] != 0; i += int(name[i]) + 1 {
			starts = append(starts, i)
		}
		starts = append(starts, len(name)-1)
		n := len(starts) - 1
		hs := make([]uint32, n+1)
		h := uint64(0xcbf29ce484222325)
		hs[n] = uint32((h * mul) >> 32)
		for k := n - 1; k >= 0; k-- {
			label := name[starts[k]:starts[k+1]]
			for len(label) > 0 {
				var w uint64
				for i := 0; i < 8 && i < len(label); i++ {
					w |= uint64(label[i]) << (8 * i)
				}
				h = (h ^ w) * mul
				h ^= h >> 29
				if len(label) < 8 {
					break
				}
				label = label[8:]
				if len(label) == 0 {
					h = h * mul // the empty tail: w = 0
					h ^= h >> 29
				}
			}
			hs[k] = uint32((h * mul) >> 32)
		}
		return hs
	}
	var b Builder
	for _, n := range []string{".", "a.", "abcdef.", "abcdefg.", "abcdefgh.", "abcdefghijklmno.", "abcdefghi.b.",
		"x.abcdefghijklmno.pq.", "a.b.c.d.e.f.g.h.", "mx0000-6e73e372e2338acae474c66a4b98b0308e7b845f.mail.example."} {
		name := wireName(t, n)
		want := plain(name)
		got := b.suffixHashes(name)
		for k, h := range want {
			if got[k] != h {
				t.Errorf("%s: suffix %d: hash %#x, want %#x", n, k, got[k], h)
			}
		}
	}
}
