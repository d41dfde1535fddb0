package upstream

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// misbehaving is a fake authority on 127.0.0.1, UDP and TCP on one
// kernel-picked port. udp answers each UDP query with the packets it
// returns, each sent from the server's socket or, with wrongPort, from
// another one; tcp, when set, answers a TCP query with raw message bytes
// (no length prefix: the test server adds it). Every query is counted.
type misbehaving struct {
	udp     func(q *dns.Msg) []packet
	tcp     func(q *dns.Msg) []byte
	queries chan *dns.Msg
}

// packet is one datagram a fake server sends.
type packet struct {
	msg       *dns.Msg
	raw       []byte // sent instead of msg when set
	wrongPort bool
}

// start serves m and returns its address.
func (m *misbehaving) start(t *testing.T) netip.AddrPort {
	t.Helper()
	m.queries = make(chan *dns.Msg, 100)
	var ln net.Listener
	var conn *net.UDPConn
	// The TCP and UDP sockets need the same port: take one the kernel
	// picks for TCP and try it for UDP, a few times if it is taken.
	for i := 0; conn == nil; i++ {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		conn, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(ln.Addr().(*net.TCPAddr).AddrPort()))
		if err != nil {
			ln.Close()
			if i == 10 {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() { ln.Close() })
	other, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	serveUDP(t, conn, func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg) {
		m.queries <- q
		for _, p := range m.udp(q) {
			c := conn
			if p.wrongPort {
				c = other
			}
			raw := p.raw
			if raw == nil {
				var err error
				if raw, err = p.msg.Pack(); err != nil {
					panic(err)
				}
			}
			c.WriteToUDP(raw, from)
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				co := &dns.Conn{Conn: c}
				q, err := co.ReadMsg()
				if err != nil || m.tcp == nil {
					return
				}
				m.queries <- q
				if p := m.tcp(q); p != nil {
					co.Write(p)
				}
			}()
		}
	}()
	return addrPort(conn)
}

// pack is m's wire form.
func pack(m *dns.Msg) []byte {
	p, err := m.Pack()
	if err != nil {
		panic(err)
	}
	return p
}

// manyA is the answer to q with n A records (an RRset far over any sane
// size: a resolver's limit, not the transport's, must refuse it).
func manyA(q *dns.Msg, n int) *dns.Msg {
	r := answer(q, "192.0.2.1")
	r.Compress = true
	for i := 1; i < n; i++ {
		rr := dns.Copy(r.Answer[0]).(*dns.A)
		rr.A = net.IPv4(10, byte(i>>16), byte(i>>8), byte(i)).To4()
		r.Answer = append(r.Answer, rr)
	}
	return r
}

// TestMisbehavingServers: what Exchange returns from servers that answer
// with a wrong ID, from a wrong port, to another question, with garbage,
// out-of-bailiwick or oversized records, truncated, with FORMERR to EDNS,
// or never; on each way of making UDP queries.
func TestMisbehavingServers(t *testing.T) { forEachPath(t, testMisbehavingServers) }

func testMisbehavingServers(t *testing.T, path udpPath) {
	truncated := func(q *dns.Msg) *dns.Msg {
		r := answer(q, "192.0.2.66")
		r.Answer, r.Truncated = nil, true
		return r
	}
	formerr := func(q *dns.Msg, withOPT bool) *dns.Msg {
		r := new(dns.Msg).SetRcode(q, dns.RcodeFormatError)
		r.Question = nil
		if withOPT {
			r.SetEdns0(1232, false)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		srv  misbehaving
		// want checks the answer; nil means Exchange must fail, and
		// wantErr (if set) say how.
		want    func(t *testing.T, r *dns.Msg)
		wantErr func(err error) bool
		// queries is the number of queries the server must have seen
		// (UDP and TCP), when not 0.
		queries int
	}{{
		name: "wrong ID, then the answer",
		srv: misbehaving{udp: func(q *dns.Msg) []packet {
			bad := answer(q, "192.0.2.66")
			bad.Id ^= 0x8000
			return []packet{{msg: bad}, {msg: answer(q, "192.0.2.1")}}
		}},
		want: func(t *testing.T, r *dns.Msg) { onlyA(t, r, "192.0.2.1") },
	}, {
		name: "only wrong IDs: timeout",
		srv: misbehaving{udp: func(q *dns.Msg) []packet {
			var ps []packet
			for i := range 20 {
				bad := answer(q, "192.0.2.66")
				bad.Id = q.Id + 1 + uint16(i)
				ps = append(ps, packet{msg: bad})
			}
			return ps
		}},
		wantErr: isTimeout,
	}, {
		name: "from another port first",
		srv: misbehaving{udp: func(q *dns.Msg) []packet {
			return []packet{{msg: answer(q, "192.0.2.66"), wrongPort: true}, {msg: answer(q, "192.0.2.1")}}
		}},
		want: func(t *testing.T, r *dns.Msg) { onlyA(t, r, "192.0.2.1") },
	}, {
		name: "only from another port: timeout",
		srv: misbehaving{udp: func(q *dns.Msg) []packet {
			return []packet{{msg: answer(q, "192.0.2.66"), wrongPort: true}}
		}},
		wantErr: isTimeout,
	}, {
		name: "another question (and type, and class), then the answer",
		srv: misbehaving{udp: func(q *dns.Msg) []packet {
			name := answer(q, "192.0.2.66")
			name.Question[0].Name = "www.example.evil."
			typ := answer(q, "192.0.2.66")
			typ.Question[0].Qtype = dns.TypeAAAA
			class := answer(q, "192.0.2.66")
			class.Question[0].Qclass = dns.ClassCHAOS
			two := answer(q, "192.0.2.66")
			two.Question = append(two.Question, two.Question[0])
			none := answer(q, "192.0.2.66")
			none.Question = nil
			return []packet{{msg: name}, {msg: typ}, {msg: class}, {msg: two}, {msg: none}, {msg: answer(q, "192.0.2.1")}}
		}},
		want: func(t *testing.T, r *dns.Msg) { onlyA(t, r, "192.0.2.1") },
	}, {
		name: "not a response, another opcode, garbage, then the answer",
		srv: misbehaving{udp: func(q *dns.Msg) []packet {
			noQR := answer(q, "192.0.2.66")
			noQR.Response = false
			notify := answer(q, "192.0.2.66")
			notify.Opcode = dns.OpcodeNotify
			good := pack(answer(q, "192.0.2.1"))
			return []packet{{msg: noQR}, {msg: notify}, {raw: good[:len(good)-3]}, {raw: []byte{byte(q.Id >> 8), byte(q.Id)}}, {raw: good}}
		}},
		want: func(t *testing.T, r *dns.Msg) { onlyA(t, r, "192.0.2.1") },
	}, {
		// Exchange knows no zones: records out of the bailiwick of the
		// zone asked come back as sent, and the resolver drops them.
		name: "out-of-bailiwick records passed through",
		srv: misbehaving{udp: func(q *dns.Msg) []packet {
			r := answer(q, "192.0.2.1")
			evil, _ := dns.NewRR("www.bank.test. 86400 IN A 192.0.2.66")
			r.Extra = append(r.Extra, evil)
			return []packet{{msg: r}}
		}},
		want: func(t *testing.T, r *dns.Msg) {
			if len(r.Extra) != 1 || r.Extra[0].Header().Name != "www.bank.test." {
				t.Errorf("additional %v, want the record as sent", r.Extra)
			}
		},
	}, {
		// A UDP answer larger than the 1232 bytes advertised is taken as
		// it comes: the RRset limit is the resolver's.
		name: "oversized RRset over UDP, in a datagram within the buffer",
		srv: misbehaving{udp: func(q *dns.Msg) []packet {
			return []packet{{msg: manyA(q, 200)}}
		}},
		want: func(t *testing.T, r *dns.Msg) {
			if len(r.Answer) != 200 {
				t.Errorf("%d records, want 200", len(r.Answer))
			}
		},
		queries: 1,
	}, {
		// A datagram over the 4 KiB read buffer (far over the 1232
		// bytes asked for) whose header is the answer's: asked again
		// over TCP, where it is taken whole.
		name: "oversized RRset over UDP, in a datagram over the buffer",
		srv: misbehaving{
			udp: func(q *dns.Msg) []packet { return []packet{{msg: manyA(q, 300)}} },
			tcp: func(q *dns.Msg) []byte { return pack(manyA(q, 300)) },
		},
		want: func(t *testing.T, r *dns.Msg) {
			if len(r.Answer) != 300 {
				t.Errorf("%d records, want 300", len(r.Answer))
			}
		},
		queries: 2,
	}, {
		// The same with another ID: not the answer, so no reason to
		// leave UDP; the wait goes on for the real one.
		name: "oversized datagram with a wrong ID, then the answer",
		srv: misbehaving{udp: func(q *dns.Msg) []packet {
			bad := manyA(q, 300)
			bad.Id ^= 0x8000
			return []packet{{msg: bad}, {msg: answer(q, "192.0.2.1")}}
		}},
		want:    func(t *testing.T, r *dns.Msg) { onlyA(t, r, "192.0.2.1") },
		queries: 1,
	}, {
		name: "truncated, then TCP with an answer near 64 KiB",
		srv: misbehaving{
			udp: func(q *dns.Msg) []packet { return []packet{{msg: truncated(q)}} },
			tcp: func(q *dns.Msg) []byte { return pack(manyA(q, 3500)) },
		},
		want: func(t *testing.T, r *dns.Msg) {
			if len(r.Answer) != 3500 || r.Truncated {
				t.Errorf("%d records, TC %v; want 3500 without TC", len(r.Answer), r.Truncated)
			}
		},
		queries: 2,
	}, {
		name: "truncated with a wrong ID is ignored, not asked over TCP",
		srv: misbehaving{
			udp: func(q *dns.Msg) []packet {
				bad := truncated(q)
				bad.Id ^= 1
				return []packet{{msg: bad}, {msg: answer(q, "192.0.2.1")}}
			},
			tcp: func(q *dns.Msg) []byte { return pack(answer(q, "192.0.2.66")) },
		},
		want:    func(t *testing.T, r *dns.Msg) { onlyA(t, r, "192.0.2.1") },
		queries: 1,
	}, {
		name: "truncated, TCP answer with a wrong ID",
		srv: misbehaving{
			udp: func(q *dns.Msg) []packet { return []packet{{msg: truncated(q)}} },
			tcp: func(q *dns.Msg) []byte {
				r := answer(q, "192.0.2.66")
				r.Id ^= 1
				return pack(r)
			},
		},
		wantErr: func(err error) bool { return errors.Is(err, ErrMismatch) },
	}, {
		name: "truncated, TCP answer to another question",
		srv: misbehaving{
			udp: func(q *dns.Msg) []packet { return []packet{{msg: truncated(q)}} },
			tcp: func(q *dns.Msg) []byte {
				r := answer(q, "192.0.2.66")
				r.Question[0].Name = "www.example.evil."
				return pack(r)
			},
		},
		wantErr: func(err error) bool { return errors.Is(err, ErrMismatch) },
	}, {
		name: "truncated, TCP closed without an answer",
		srv: misbehaving{
			udp: func(q *dns.Msg) []packet { return []packet{{msg: truncated(q)}} },
			tcp: func(q *dns.Msg) []byte { return nil },
		},
		wantErr: func(err error) bool { return err != nil && !isTimeout(err) },
	}, {
		name: "FORMERR without OPT to EDNS: asked again without EDNS",
		srv: misbehaving{udp: func(q *dns.Msg) []packet {
			if q.IsEdns0() != nil {
				return []packet{{msg: formerr(q, false)}}
			}
			return []packet{{msg: answer(q, "192.0.2.1")}}
		}},
		want:    func(t *testing.T, r *dns.Msg) { onlyA(t, r, "192.0.2.1") },
		queries: 2,
	}, {
		name: "NOTIMP without OPT to EDNS: asked again without EDNS",
		srv: misbehaving{udp: func(q *dns.Msg) []packet {
			if q.IsEdns0() != nil {
				return []packet{{msg: new(dns.Msg).SetRcode(q, dns.RcodeNotImplemented)}}
			}
			return []packet{{msg: answer(q, "192.0.2.1")}}
		}},
		want:    func(t *testing.T, r *dns.Msg) { onlyA(t, r, "192.0.2.1") },
		queries: 2,
	}, {
		name: "FORMERR with OPT: EDNS understood, the FORMERR returned",
		srv: misbehaving{udp: func(q *dns.Msg) []packet {
			return []packet{{msg: formerr(q, true)}}
		}},
		want: func(t *testing.T, r *dns.Msg) {
			if r.Rcode != dns.RcodeFormatError {
				t.Errorf("rcode %s, want FORMERR", dns.RcodeToString[r.Rcode])
			}
		},
		queries: 1,
	}, {
		name: "FORMERR with and without EDNS: the second FORMERR returned",
		srv: misbehaving{udp: func(q *dns.Msg) []packet {
			return []packet{{msg: formerr(q, false)}}
		}},
		want: func(t *testing.T, r *dns.Msg) {
			if r.Rcode != dns.RcodeFormatError {
				t.Errorf("rcode %s, want FORMERR", dns.RcodeToString[r.Rcode])
			}
		},
		queries: 2,
	}, {
		name:    "never answers: timeout",
		srv:     misbehaving{udp: func(q *dns.Msg) []packet { return nil }},
		wantErr: isTimeout,
		queries: 1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.srv
			addr := srv.start(t)
			timeout := 5 * time.Second
			if tc.want == nil {
				timeout = 300 * time.Millisecond
			}
			r, err := exchange(t, path, addr, timeout)
			switch {
			case tc.want != nil && err != nil:
				t.Fatal(err)
			case tc.want != nil:
				tc.want(t, r)
			case err == nil:
				t.Fatalf("accepted %v", r)
			case tc.wantErr != nil && !tc.wantErr(err):
				t.Fatalf("error %v", err)
			}
			if tc.queries != 0 {
				if n := len(srv.queries); n != tc.queries {
					t.Errorf("server saw %d queries, want %d", n, tc.queries)
				}
			}
		})
	}
}

// isTimeout reports whether err is a timeout, as Exchange says it.
func isTimeout(err error) bool { return errors.Is(err, context.DeadlineExceeded) }

// TestRefused: a port where nothing listens fails at once (ICMP port
// unreachable), not after the timeout.
func TestRefused(t *testing.T) { forEachPath(t, testRefused) }

func testRefused(t *testing.T, path udpPath) {
	u, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	addr := addrPort(u)
	u.Close()
	_, err = exchange(t, path, addr, time.Minute)
	if err == nil || isTimeout(err) {
		t.Fatalf("error %v, want connection refused", err)
	}
}

// TestOptions: what ExchangeOptions takes from its caller (no EDNS, a
// UDP timeout that does not cut a TCP retry short) and reports.
func TestOptions(t *testing.T) { forEachPath(t, testOptions) }

func testOptions(t *testing.T, path udpPath) {
	withOPT := func(r *dns.Msg) *dns.Msg {
		r.SetEdns0(1232, false)
		return r
	}
	c := newClient(t, path, time.Hour)
	for _, tc := range []struct {
		name string
		srv  misbehaving
		opt  Options
		q    dns.Question // question when not zero
		want Report       // RTT not compared
		// noEDNS: every query the server saw was without EDNS.
		noEDNS bool
	}{{
		name: "EDNS answered",
		srv: misbehaving{udp: func(q *dns.Msg) []packet {
			return []packet{{msg: withOPT(answer(q, "192.0.2.1"))}}
		}},
		want: Report{EDNSAnswered: true},
	}, {
		name: "EDNS rejected",
		srv: misbehaving{udp: func(q *dns.Msg) []packet {
			if q.IsEdns0() != nil {
				return []packet{{msg: new(dns.Msg).SetRcode(q, dns.RcodeFormatError)}}
			}
			return []packet{{msg: answer(q, "192.0.2.1")}}
		}},
		want: Report{EDNSRejected: true},
	}, {
		name: "asked without EDNS",
		srv: misbehaving{udp: func(q *dns.Msg) []packet {
			return []packet{{msg: answer(q, "192.0.2.1")}}
		}},
		opt:    Options{NoEDNS: true},
		noEDNS: true,
	}, {
		// The UDP answer is quick, the TCP one slower than the UDP
		// timeout: it is waited for.
		name: "UDP timeout does not bound the TCP retry",
		srv: misbehaving{
			udp: func(q *dns.Msg) []packet {
				r := answer(q, "192.0.2.66")
				r.Answer, r.Truncated = nil, true
				return []packet{{msg: r}}
			},
			tcp: func(q *dns.Msg) []byte {
				time.Sleep(1300 * time.Millisecond)
				return pack(answer(q, "192.0.2.1"))
			},
		},
		opt:  Options{UDPTimeout: time.Second},
		want: Report{TCP: true},
	}, {
		name: "recursive: RD set",
		srv: misbehaving{udp: func(q *dns.Msg) []packet {
			return []packet{{msg: answer(q, "192.0.2.1")}}
		}},
		opt: Options{Recursive: true},
	}, {
		// The first answer spells the name in another case: a forgery
		// that guessed ID and port but not the case is dropped.
		name: "exact case: an answer in another case dropped",
		srv: misbehaving{udp: func(q *dns.Msg) []packet {
			lower := q.Copy()
			lower.Question[0].Name = strings.ToLower(q.Question[0].Name)
			forged := answer(lower, "192.0.2.66")
			forged.Id = q.Id
			return []packet{{msg: forged}, {msg: answer(q, "192.0.2.1")}}
		}},
		q:   dns.Question{Name: "wWw.ExaMple.tEST.", Qtype: dns.TypeA, Qclass: dns.ClassINET},
		opt: Options{ExactCase: true},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.srv
			q := tc.q
			if q.Name == "" {
				q = question
			}
			r, rep, err := c.ExchangeOptions(context.Background(), srv.start(t), q, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			onlyA(t, r, "192.0.2.1")
			if rep.RTT <= 0 {
				t.Errorf("RTT %v", rep.RTT)
			}
			rep.RTT = 0
			if rep != tc.want {
				t.Errorf("report %+v, want %+v", rep, tc.want)
			}
			for len(srv.queries) > 0 {
				q := <-srv.queries
				if tc.noEDNS && q.IsEdns0() != nil {
					t.Errorf("query with EDNS: %v", q)
				}
				// RFC 1035 §4.1.1: RD only when asked for.
				if q.RecursionDesired != tc.opt.Recursive {
					t.Errorf("query with RD %v, want %v", q.RecursionDesired, tc.opt.Recursive)
				}
			}
		})
	}
	// A server that never answers: the UDP timeout ends the wait long
	// before the Client's hour.
	srv := misbehaving{udp: func(q *dns.Msg) []packet { return nil }}
	if _, _, err := c.ExchangeOptions(context.Background(), srv.start(t), question, Options{UDPTimeout: 100 * time.Millisecond}); !isTimeout(err) {
		t.Fatalf("error %v, want a timeout", err)
	}
}

// TestTimeout: a query to a server that does not answer ends with a
// timeout (context.DeadlineExceeded) when the Client's Timeout, or the
// query's Options.UDPTimeout, has passed, and not before, though the
// caller's context would end only 10 s later: the wait keeps its
// own deadline, not one of the caller's context. A server that keeps
// sending datagrams that are not the answer (another ID) does not make
// the wait longer: each new wait gets what is left of the first.
func TestTimeout(t *testing.T) { forEachPath(t, testTimeout) }

func testTimeout(t *testing.T, path udpPath) {
	silent := addrPort(udpServer(t, func(*net.UDPConn, *net.UDPAddr, *dns.Msg) {}))
	// Not the answer every 10 ms for longer than the caller's context
	// lasts (until the test ends): a wait made whole again by each would
	// end with the caller's context.
	over := make(chan struct{})
	t.Cleanup(func() { close(over) })
	chatty := addrPort(udpServer(t, func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg) {
		r := answer(q, "192.0.2.1")
		r.Id = q.Id + 1
		go func() {
			for {
				send(conn, from, r)
				select {
				case <-over:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
	}))
	const wait = 100 * time.Millisecond
	for _, tc := range []struct {
		name    string
		server  netip.AddrPort
		timeout time.Duration
		opt     Options
	}{
		{"Timeout", silent, wait, Options{}},
		{"UDPTimeout", silent, time.Hour, Options{UDPTimeout: wait}},
		{"Timeout, not the answer every 10 ms", chatty, wait, Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, path, tc.timeout)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			_, _, err := c.ExchangeOptions(ctx, tc.server, question, tc.opt)
			took := time.Since(start)
			if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
				t.Fatalf("error %v after %v (the caller's context: %v), want the query's timeout", err, took, ctx.Err())
			}
			if took < wait {
				t.Errorf("timed out after %v, before the %v the query had", took, wait)
			}
		})
	}
}

// TestCancel: cancelling the caller's context stops the wait for an
// answer (context.Canceled), and the next queries through the same
// Client (through io_uring, the slot the cancelled one left) get their
// own answers.
func TestCancel(t *testing.T) { forEachPath(t, testCancel) }

func testCancel(t *testing.T, path udpPath) {
	asked := make(chan struct{}, 1)
	server := addrPort(udpServer(t, func(conn *net.UDPConn, from *net.UDPAddr, q *dns.Msg) {
		if strings.HasPrefix(q.Question[0].Name, "unanswered.") {
			asked <- struct{}{}
			return
		}
		send(conn, from, answer(q, "192.0.2.1"))
	}))
	c := newClient(t, path, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-asked
		cancel()
	}()
	q := dns.Question{Name: "unanswered.example.test.", Qtype: dns.TypeA, Qclass: dns.ClassINET}
	if _, err := c.Exchange(ctx, server, q); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	for range 3 {
		r, err := c.Exchange(context.Background(), server, question)
		if err != nil {
			t.Fatal(err)
		}
		onlyA(t, r, "192.0.2.1")
	}
}
