package perf

import (
	"strings"
	"testing"

	"github.com/miekg/dns"
)

func TestParseQueryFileGood(t *testing.T) {
	in := strings.Join([]string{
		"www.example.com A",
		"",
		"; a comment",
		"   ;indented comment",
		"example.com.\tMX",
		"  spaced.example   aaaa  ",
		"odd.example TYPE65534",
		".  NS",
		`esc\.aped.example TXT`,
		"Mixed.Example sOa",
	}, "\n")
	got, err := ParseQueryFile(strings.NewReader(in))
	if err != nil {
		t.Fatalf("ParseQueryFile: %v", err)
	}
	want := []Query{
		{"www.example.com.", dns.TypeA},
		{"example.com.", dns.TypeMX},
		{"spaced.example.", dns.TypeAAAA},
		{"odd.example.", 65534},
		{".", dns.TypeNS},
		{`esc\.aped.example.`, dns.TypeTXT},
		{"Mixed.Example.", dns.TypeSOA},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d queries %v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("query %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParseQueryFileBad(t *testing.T) {
	long := strings.Repeat("a", 64)
	tests := []struct {
		name    string
		in      string
		wantErr string // substring, including the line number
	}{
		{"missing type", "ok.example A\nlonely.example\n", "line 2: want \"name TYPE\""},
		{"extra field", "a.example A IN\n", "line 1: want \"name TYPE\""},
		{"unknown type", "\n\na.example BOGUS\n", "line 3: unknown query type \"BOGUS\""},
		{"type number too big", "a.example TYPE65536", "line 1: unknown query type"},
		{"empty label", "; c\na..example A", "line 2: bad name \"a..example\": empty label"},
		{"label too long", long + ".example A", "line 1: bad name"},
		{"name too long", strings.Repeat("abcdefghi.", 26) + " A", "line 1: bad name"},
		{"bad escape", `a\2.example A`, "line 1: bad name"},
		{"escape over 255", `a\256.example A`, "line 1: bad name"},
		{"trailing backslash", `a\ A`, "line 1: bad name"},
		{"overlong line", "x A\n" + strings.Repeat("b", maxLineLen+10) + " A\n", "line 2:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseQueryFile(strings.NewReader(tc.in))
			if err == nil {
				t.Fatalf("no error for %q", tc.in)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}

// FuzzQueryFile checks that the parser never panics and that everything it
// accepts encodes and is understood by miekg/dns the same way.
func FuzzQueryFile(f *testing.F) {
	for _, s := range []string{
		"www.example.com A\n",
		"; comment\n\nexample.com. MX\n",
		`a\.b\065.example TXT`,
		". NS",
		"x TYPE12\ny AAAA",
		"a..b A",
		`\255\000.x A`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		qs, err := ParseQueryFile(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, q := range qs {
			wire, err := AppendQuery(nil, q.Name, q.Type, EncodeOptions{})
			if err != nil {
				t.Fatalf("accepted %q but cannot encode: %v", q.Name, err)
			}
			var m dns.Msg
			if err := m.Unpack(wire); err != nil {
				t.Fatalf("encoding of %q does not unpack: %v", q.Name, err)
			}
			if len(m.Question) != 1 || m.Question[0].Qtype != q.Type {
				t.Fatalf("encoding of %q/%d unpacks as %v", q.Name, q.Type, m.Question)
			}
		}
	})
}
