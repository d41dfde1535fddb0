package wire

import (
	"bytes"
	"testing"

	"github.com/miekg/dns"
)

// TestOPTOptions: the OPT record's RDATA holds each option as OPTION-CODE,
// OPTION-LENGTH, OPTION-DATA (RFC 6891 §6.1.2), RDLENGTH covers them all,
// and an EDE option (RFC 8914 §2) is code 15, length 2, the INFO-CODE and
// no EXTRA-TEXT; miekg/dns reads the message back the same.
func TestOPTOptions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nsid  []byte
		ede   int // -1: none
		rdata []byte
	}{
		{"bare", nil, -1, nil},
		{"nsid", []byte("ns1"), -1, []byte{0, 3, 0, 3, 'n', 's', '1'}},
		{"ede invalid data", nil, EDEInvalidData, []byte{0, 15, 0, 2, 0, 24}},
		{"nsid and ede", []byte("n"), EDEInvalidData, []byte{0, 3, 0, 1, 'n', 0, 15, 0, 2, 0, 24}},
		{"ede two-byte code", nil, 0x1234, []byte{0, 15, 0, 2, 0x12, 0x34}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Builder
			b.Reset(make([]byte, 0, 512), 512)
			b.Header(1, FlagQR|RcodeServFail)
			b.OPT(1232, 0, true, tc.nsid)
			if tc.ede >= 0 {
				b.EDE(uint16(tc.ede))
			}
			msg := b.Finish()
			opt := msg[HeaderLen:]
			want := append([]byte{0, 0, TypeOPT, 1232 >> 8, 1232 & 0xFF, 0, 0, 0x80, 0, 0, byte(len(tc.rdata))}, tc.rdata...)
			if !bytes.Equal(opt, want) {
				t.Fatalf("OPT record % x, want % x", opt, want)
			}
			var m dns.Msg
			if err := m.Unpack(msg); err != nil {
				t.Fatal(err)
			}
			o := m.IsEdns0()
			if o == nil || len(m.Extra) != 1 {
				t.Fatalf("additional %v", m.Extra)
			}
			var got *dns.EDNS0_EDE
			for _, e := range o.Option {
				if e, ok := e.(*dns.EDNS0_EDE); ok {
					got = e
				}
			}
			switch {
			case tc.ede < 0 && got != nil:
				t.Errorf("unexpected EDE %v", got)
			case tc.ede >= 0 && (got == nil || got.InfoCode != uint16(tc.ede) || got.ExtraText != ""):
				t.Errorf("EDE %v, want INFO-CODE %d without EXTRA-TEXT", got, tc.ede)
			}
		})
	}
}
