package hierarchy

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// The names of evil.tld., the zone of the misbehaving server at AddrEvil,
// and what it does with a question for each (anything else: NXDOMAIN).
const (
	// EvilSpoof: before its answer (192.0.2.200) it sends one with a wrong
	// ID and one from another port, both with 6.6.6.6 (RFC 5452 §9.1:
	// neither may be accepted).
	EvilSpoof = "spoof.evil.tld."
	// EvilPoison: its answer (192.0.2.201) carries records out of its
	// bailiwick: www.example.net. A 6.6.6.6 in the answer section, NS
	// records for example.net. in the authority section and an address
	// for one in the additional section (RFC 2181 §5.4.1: never to be
	// believed).
	EvilPoison = "poison.evil.tld."
	// EvilTruncated: over UDP an empty answer with TC set, over TCP the
	// answer (192.0.2.202).
	EvilTruncated = "tc.evil.tld."
	// EvilUpward: a referral to the root (an upward referral, which would
	// send a resolver round in circles: the server is lame). In a zone of
	// its own, upward.tld. on the same server, so that the lameness a
	// resolver remembers (per server and zone) leaves evil.tld. alone.
	EvilUpward = "www.upward.tld."
)

// startEvil serves evil.tld. and upward.tld. on ap (UDP and TCP) the way EvilSpoof,
// EvilPoison, EvilTruncated and EvilUpward say, and correctly otherwise:
// the SOA and NS at the apex, NXDOMAIN below.
func (h *Standard) startEvil(t testing.TB, ap netip.AddrPort) {
	t.Helper()
	u, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
	if err != nil {
		t.Fatalf("hierarchy: evil server: %v", err)
	}
	// The socket the answers from another port come from.
	other, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ap.Addr(), 0)))
	if err != nil {
		u.Close()
		t.Fatalf("hierarchy: evil server: %v", err)
	}
	l, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(ap))
	if err != nil {
		u.Close()
		other.Close()
		t.Fatalf("hierarchy: evil server: %v", err)
	}
	ns := h.Addrs[AddrEvil].String()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 65535)
		for {
			n, from, err := u.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			q := new(dns.Msg)
			if q.Unpack(buf[:n]) != nil || len(q.Question) != 1 || q.Response {
				continue
			}
			if strings.EqualFold(q.Question[0].Name, EvilSpoof) {
				for _, bad := range []struct {
					conn *net.UDPConn
					id   uint16
				}{{u, q.Id + 1}, {other, q.Id}} {
					m, _ := evilAnswer(q, ns, false)
					m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 300}, A: net.IPv4(6, 6, 6, 6)}}
					m.Id = bad.id
					if pkt, err := m.Pack(); err == nil {
						bad.conn.WriteToUDPAddrPort(pkt, from)
					}
				}
			}
			if m, err := evilAnswer(q, ns, false); err == nil {
				if pkt, err := m.Pack(); err == nil {
					u.WriteToUDPAddrPort(pkt, from)
				}
			}
		}
	}()
	tc := acceptTCP(l, func(c net.Conn) {
		defer c.Close()
		serveEvilTCP(c, ns)
	})
	t.Cleanup(func() {
		u.Close()
		other.Close()
		tc.close()
		wg.Wait()
	})
}

// serveEvilTCP answers the queries of one TCP connection (RFC 7766
// framing) until it is closed.
func serveEvilTCP(c net.Conn, ns string) {
	var lenBuf [2]byte
	for {
		if _, err := io.ReadFull(c, lenBuf[:]); err != nil {
			return
		}
		pkt := make([]byte, binary.BigEndian.Uint16(lenBuf[:]))
		if _, err := io.ReadFull(c, pkt); err != nil {
			return
		}
		q := new(dns.Msg)
		if q.Unpack(pkt) != nil || len(q.Question) != 1 || q.Response {
			return
		}
		m, err := evilAnswer(q, ns, true)
		if err != nil {
			return
		}
		out, err := m.Pack()
		if err != nil {
			return
		}
		if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(out))), out...)); err != nil {
			return
		}
	}
}

// evilAnswer is the evil server's answer to q (over TCP when tcp); an
// error only for a typo in its records, which the package's tests find.
func evilAnswer(q *dns.Msg, ns string, tcp bool) (*dns.Msg, error) {
	m := new(dns.Msg).SetReply(q)
	m.Authoritative = true
	qn := strings.ToLower(q.Question[0].Name)
	qt := q.Question[0].Qtype
	const soa = "evil.tld. 3600 SOA ns.evil.tld. hostmaster.evil.tld. 1 3600 900 604800 300"
	var answer, authority, additional []string
	switch {
	case qn == "evil.tld." && qt == dns.TypeSOA:
		answer = []string{soa}
	case qn == "evil.tld." && qt == dns.TypeNS:
		answer = []string{"evil.tld. 3600 NS ns.evil.tld."}
	case qn == "ns.evil.tld." && qt == dns.TypeA:
		answer = []string{"ns.evil.tld. 3600 A " + ns}
	case qn == "ns.evil.tld." || qn == "evil.tld.":
		authority = []string{soa}
	case qn == EvilSpoof && qt == dns.TypeA:
		answer = []string{EvilSpoof + " 300 A 192.0.2.200"}
	case qn == EvilPoison && qt == dns.TypeA:
		answer = []string{EvilPoison + " 300 A 192.0.2.201", "www.example.net. 300 A 6.6.6.6"}
		authority = []string{"example.net. 3600 NS ns.evil.tld.", "example.net. 3600 NS ns.example.net."}
		additional = []string{"ns.example.net. 3600 A 6.6.6.6"}
	case qn == EvilTruncated && qt == dns.TypeA && !tcp:
		m.Truncated = true
	case qn == EvilTruncated && qt == dns.TypeA:
		answer = []string{EvilTruncated + " 300 A 192.0.2.202"}
	case dns.IsSubDomain("upward.tld.", qn):
		m.Authoritative = false
		authority = []string{". 3600 NS a.root."}
	case qn == EvilSpoof || qn == EvilPoison || qn == EvilTruncated:
		authority = []string{soa}
	default:
		m.Rcode = dns.RcodeNameError
		authority = []string{soa}
	}
	var err error
	for _, sec := range []struct {
		to   *[]dns.RR
		from []string
	}{{&m.Answer, answer}, {&m.Ns, authority}, {&m.Extra, additional}} {
		for _, s := range sec.from {
			rr, e := dns.NewRR(s)
			err = errors.Join(err, e)
			if rr != nil {
				*sec.to = append(*sec.to, rr)
			}
		}
	}
	if q.IsEdns0() != nil {
		m.SetEdns0(1232, false)
	}
	return m, err
}
