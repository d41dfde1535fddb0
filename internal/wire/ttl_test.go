package wire

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/miekg/dns"
)

// response is a compressed response with a record in every section and
// an OPT record.
func response(t testing.TB) []byte {
	m := new(dns.Msg)
	m.SetQuestion("www.example.com.", dns.TypeA)
	m.Response = true
	for _, s := range []string{"www.example.com. 1 IN CNAME a.example.com.", "a.example.com. 2 IN A 192.0.2.1"} {
		rr, _ := dns.NewRR(s)
		m.Answer = append(m.Answer, rr)
	}
	ns, _ := dns.NewRR("example.com. 3 IN NS ns.example.com.")
	glue, _ := dns.NewRR("ns.example.com. 4 IN A 192.0.2.53")
	m.Ns, m.Extra = []dns.RR{ns}, []dns.RR{glue}
	m.SetEdns0(1232, true) // the OPT's TTL field holds DO: not a TTL
	m.Compress = true
	msg, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func TestTTLOffsets(t *testing.T) {
	msg := response(t)
	offs, ok := TTLOffsets(msg, nil)
	var got []uint32
	for _, o := range offs {
		got = append(got, binary.BigEndian.Uint32(msg[o:]))
	}
	if !ok || !slices.Equal(got, []uint32{1, 2, 3, 4}) {
		t.Errorf("TTLs %v ok %v, want [1 2 3 4] true", got, ok)
	}
	for _, bad := range [][]byte{msg[:len(msg)-1], append(slices.Clone(msg), 0), msg[:5]} {
		if _, ok := TTLOffsets(bad, nil); ok {
			t.Errorf("%d bytes of a %d-byte message parsed", len(bad), len(msg))
		}
	}
}

func FuzzTTLOffsets(f *testing.F) {
	f.Add(response(f))
	f.Fuzz(func(t *testing.T, msg []byte) {
		offs, ok := TTLOffsets(msg, nil)
		if !ok {
			return
		}
		for _, o := range offs {
			if int(o)+4 > len(msg) {
				t.Fatalf("offset %d past the message (%d bytes)", o, len(msg))
			}
		}
	})
}
