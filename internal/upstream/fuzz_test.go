package upstream

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// FuzzValidate feeds arbitrary packets to the check every upstream answer
// goes through: no panic, and whatever is accepted matches the query.
func FuzzValidate(f *testing.F) {
	q := new(dns.Msg)
	q.SetQuestion(question.Name, question.Qtype)
	q.Id = 4242
	for _, r := range []*dns.Msg{answer(q, "192.0.2.1"), new(dns.Msg).SetRcode(q, dns.RcodeNameError)} {
		p, _ := r.Pack()
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		r, err := Validate(pkt, q.Id, question)
		if err != nil {
			return
		}
		if !r.Response || r.Id != q.Id {
			t.Fatalf("accepted %v", r)
		}
		if len(r.Question) == 0 {
			if r.Rcode != dns.RcodeFormatError && r.Rcode != dns.RcodeNotImplemented {
				t.Fatalf("accepted an answer without a question: %v", r)
			}
			return
		}
		if got := r.Question[0]; dns.CanonicalName(got.Name) != question.Name || got.Qtype != question.Qtype || got.Qclass != question.Qclass {
			t.Fatalf("accepted the answer to %v", got)
		}
	})
}

// FuzzTCP feeds an arbitrary byte stream to the TCP exchange, as a server
// would write it after reading the query (its bytes 2-3, the ID of a
// length-prefixed message, are set to the query's when the stream is that
// long): no panic, no hang, and whatever is accepted matches the query.
func FuzzTCP(f *testing.F) {
	q := new(dns.Msg)
	q.SetQuestion(question.Name, question.Qtype)
	for _, r := range []*dns.Msg{answer(q, "192.0.2.1"), new(dns.Msg).SetRcode(q, dns.RcodeFormatError)} {
		p, _ := r.Pack()
		f.Add(append(binary.BigEndian.AppendUint16(nil, uint16(len(p))), p...))
	}
	f.Add([]byte{0xff, 0xff, 0, 0, 1})
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, stream []byte) {
		client, server := net.Pipe()
		defer client.Close()
		go func() {
			defer server.Close()
			sq, err := (&dns.Conn{Conn: server}).ReadMsg()
			if err != nil {
				return
			}
			out := append([]byte(nil), stream...)
			if len(out) >= 4 {
				binary.BigEndian.PutUint16(out[2:], sq.Id)
			}
			server.Write(out)
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := exchangeConn(ctx, &dns.Conn{Conn: client}, question, header{size: DefaultUDPSize})
		if err != nil {
			return
		}
		if !r.Response {
			t.Fatalf("accepted %v", r)
		}
		if len(r.Question) == 1 {
			if got := r.Question[0]; dns.CanonicalName(got.Name) != question.Name || got.Qtype != question.Qtype || got.Qclass != question.Qclass {
				t.Fatalf("accepted the answer to %v", got)
			}
		} else if r.Rcode != dns.RcodeFormatError && r.Rcode != dns.RcodeNotImplemented {
			t.Fatalf("accepted an answer without a question: %v", r)
		}
	})
}
