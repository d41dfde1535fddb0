package perf

import (
	"bytes"
	"testing"

	"github.com/miekg/dns"
)

func TestAppendQueryMatchesMiekg(t *testing.T) {
	names := []string{
		"www.example.com.", "example.com", ".", "a.b.c.d.e.f.g.",
		`esc\.aped.example.`, `\065bc.example.`, `sp\032ace.example.`,
		"UPPER.Example.ORG.", "xn--bcher-kva.example.",
	}
	opts := []struct {
		name string
		o    EncodeOptions
	}{
		{"plain", EncodeOptions{}},
		{"norecurse", EncodeOptions{NoRecurse: true}},
		{"edns", EncodeOptions{EDNS: true, UDPSize: 4096}},
		{"do", EncodeOptions{DO: true, UDPSize: 1232}},
		{"options", EncodeOptions{EDNS: true, UDPSize: 4096, Options: []EDNSOption{{Code: 10, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}}, {Code: 12, Data: nil}}}},
	}
	for _, n := range names {
		for _, tc := range opts {
			got, err := AppendQuery(nil, n, dns.TypeAAAA, tc.o)
			if err != nil {
				t.Fatalf("%s/%s: %v", n, tc.name, err)
			}
			m := new(dns.Msg)
			m.Id = 0
			m.SetQuestion(dns.Fqdn(n), dns.TypeAAAA)
			m.Id = 0
			m.RecursionDesired = !tc.o.NoRecurse
			if tc.o.EDNS || tc.o.DO || len(tc.o.Options) > 0 {
				m.SetEdns0(tc.o.UDPSize, tc.o.DO)
				opt := m.IsEdns0()
				for _, o := range tc.o.Options {
					opt.Option = append(opt.Option, &dns.EDNS0_LOCAL{Code: o.Code, Data: o.Data})
				}
			}
			m.Compress = false
			want, err := m.Pack()
			if err != nil {
				t.Fatalf("miekg pack %s: %v", n, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s/%s:\n got %x\nwant %x", n, tc.name, got, want)
			}
		}
	}
}

func TestAppendQueryAppends(t *testing.T) {
	prefix := []byte("keep")
	got, err := AppendQuery(prefix, "a.", dns.TypeA, EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(got[:4]) != "keep" || len(got) != 4+12+3+4 {
		t.Fatalf("got %x", got)
	}
	// A failed encoding leaves buf as it was.
	got, err = AppendQuery(prefix, "a..b", dns.TypeA, EncodeOptions{})
	if err == nil || string(got) != "keep" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestAppendQueryTooLarge(t *testing.T) {
	_, err := AppendQuery(nil, "a.", dns.TypeA, EncodeOptions{Options: []EDNSOption{{Code: 1, Data: make([]byte, 600)}}, MaxMsgSize: 512})
	if err == nil {
		t.Fatal("no error for a query over MaxMsgSize")
	}
}

func TestParseEDNSOption(t *testing.T) {
	o, err := ParseEDNSOption("10:0102ab")
	if err != nil || o.Code != 10 || !bytes.Equal(o.Data, []byte{1, 2, 0xab}) {
		t.Fatalf("got %+v, %v", o, err)
	}
	o, err = ParseEDNSOption("12:")
	if err != nil || o.Code != 12 || len(o.Data) != 0 {
		t.Fatalf("empty value: got %+v, %v", o, err)
	}
	for _, bad := range []string{"10", "x:01", "70000:01", "10:0g", "10:123"} {
		if _, err := ParseEDNSOption(bad); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}
