package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// exchange sends one query and waits up to timeout for its reply: over
// UDP, or over TCP (RFC 1035 §4.2.2 framing, one query per connection)
// when conn is a TCP connection. rd asks for recursion (a resolver).
func exchange(conn net.Conn, id uint16, name, qtype string, edns, do, rd bool, timeout time.Duration) (reply, error) {
	q, err := buildQuery(id, name, qtype, edns, do)
	if err != nil {
		return reply{}, err
	}
	if rd {
		q[2] |= 0x01 // RFC 1035 §4.1.1: RD
	}
	_, tcp := conn.(*net.TCPConn)
	if tcp {
		q = append([]byte{byte(len(q) >> 8), byte(len(q))}, q...)
	}
	if _, err := conn.Write(q); err != nil {
		return reply{}, err
	}
	buf := make([]byte, 65535)
	deadline := time.Now().Add(timeout)
	for {
		conn.SetReadDeadline(deadline)
		var n int
		if tcp {
			if _, err = io.ReadFull(conn, buf[:2]); err == nil {
				n = int(buf[0])<<8 | int(buf[1])
				_, err = io.ReadFull(conn, buf[:n])
			}
		} else {
			n, err = conn.Read(buf)
		}
		if err != nil {
			return reply{}, err
		}
		r, err := parseReply(buf[:n])
		if err != nil || r.id != id {
			continue // stale reply to an earlier attempt
		}
		return r, nil
	}
}

// loopback refuses any address that is not on the loopback network: the
// harness must never send traffic anywhere else.
func loopback(addr string) (*net.UDPAddr, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	if !ua.IP.IsLoopback() {
		return nil, fmt.Errorf("%s is not a loopback address", addr)
	}
	return ua, nil
}

// runProbe polls a server (every 10 ms) until it answers name/type with
// the expected rcode and, unless -echo, the AA bit: i.e. until the zone is
// loaded. With -resolver it asks with RD and waits for a NOERROR answer
// (a resolver that has walked the hierarchy). It prints the milliseconds
// it waited, or fails after -timeout.
func runProbe(args []string) error {
	fs := flag.NewFlagSet("probe", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:53", "server address (loopback only)")
	name := fs.String("name", ".", "query name")
	qtype := fs.String("type", "SOA", "query type")
	echo := fs.Bool("echo", false, "the echo floor: accept any reply with QR set")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	pid := fs.Int("pid", 0, "give up as soon as this process has exited (0: don't watch)")
	resolver := fs.Bool("resolver", false, "a resolver: ask with RD and accept NOERROR with an answer, without AA")
	fs.Parse(args)
	ua, err := loopback(*addr)
	if err != nil {
		return err
	}
	start := time.Now()
	id := uint16(start.UnixNano())
	var last string
	for time.Since(start) < *timeout {
		if *pid > 0 {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", *pid)); err != nil {
				return fmt.Errorf("server process %d exited before answering", *pid)
			}
			if st, err := readStat(*pid); err == nil && st.zombie {
				return fmt.Errorf("server process %d exited before answering", *pid)
			}
		}
		id++
		conn, err := net.DialUDP("udp", nil, ua)
		if err != nil {
			return err
		}
		wait := 20 * time.Millisecond
		if *resolver {
			wait = time.Second // the first answer walks the hierarchy
		}
		r, err := exchange(conn, id, *name, *qtype, false, false, *resolver, wait)
		conn.Close()
		if err == nil {
			last = r.String()
			if r.qr && (*echo || (r.aa && r.rcode == 0) || (*resolver && r.rcode == 0 && len(r.sections[0]) > 0)) {
				fmt.Println(time.Since(start).Milliseconds())
				return nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("%s: no authoritative answer to %s %s within %v (last reply: %s)", *addr, *name, *qtype, *timeout, last)
}

// runCheck sends the first -n queries of a query file one by one and checks
// that every reply is the kind the workload is meant to produce:
//
//	answer   NOERROR, AA, an answer section
//	large    NOERROR, AA, at least 1000 records in the answer section
//	nxdomain NXDOMAIN, AA, SOA in authority
//	referral NOERROR, no AA, empty answer, NS in authority
//	resolved NOERROR, RA, an answer section (asked with RD: a resolver)
//
// With -tcp each query goes over its own TCP connection.
// With -do the query has the DO bit and the reply must carry RRSIGs (the
// signed root zone). Truncated (TC) replies are counted, not judged. It
// prints one line per problem and fails if any.
func runCheck(args []string) error {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:53", "server address (loopback only)")
	queries := fs.String("queries", "", "query file (dnsperf format)")
	expect := fs.String("expect", "answer", "answer, large, nxdomain, referral or resolved")
	overTCP := fs.Bool("tcp", false, "ask over TCP")
	do := fs.Bool("do", false, "set DO (implies -edns) and require RRSIGs")
	edns := fs.Bool("edns", false, "send EDNS0 (4096-byte payload)")
	n := fs.Int("n", 20, "how many queries to check")
	fs.Parse(args)
	rd := *expect == "resolved"
	ua, err := loopback(*addr)
	if err != nil {
		return err
	}
	f, err := os.Open(*queries)
	if err != nil {
		return err
	}
	defer f.Close()
	conn, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		return err
	}
	defer conn.Close()
	sc := bufio.NewScanner(f)
	bad, done, tc := 0, 0, 0
	for sc.Scan() && done < *n {
		fld := strings.Fields(sc.Text())
		if len(fld) < 2 {
			continue
		}
		done++
		var r reply
		if *overTCP {
			var c net.Conn
			if c, err = net.DialTimeout("tcp", ua.String(), time.Second); err == nil {
				r, err = exchange(c, uint16(done), fld[0], fld[1], *edns, *do, rd, 5*time.Second)
				c.Close()
			}
		} else {
			r, err = exchange(conn, uint16(done), fld[0], fld[1], *edns, *do, rd, time.Second)
		}
		if err != nil {
			fmt.Printf("%s %s: %v\n", fld[0], fld[1], err)
			bad++
			continue
		}
		if r.tc {
			// A truncated reply says "ask again over TCP"; for a 512-byte
			// query that is legitimate and has nothing more to judge.
			tc++
			continue
		}
		var why []string
		switch *expect {
		case "answer":
			if r.rcode != 0 || !r.aa || len(r.sections[0]) == 0 {
				why = append(why, "want NOERROR+AA with an answer")
			}
		case "large":
			if r.rcode != 0 || !r.aa || len(r.sections[0]) < 1000 {
				why = append(why, "want NOERROR+AA with at least 1000 answer records")
			}
		case "nxdomain":
			if r.rcode != 3 || !r.aa || !r.has(1, "SOA") {
				why = append(why, "want NXDOMAIN+AA with SOA in authority")
			}
		case "resolved":
			if r.rcode != 0 || !r.ra || len(r.sections[0]) == 0 {
				why = append(why, "want NOERROR+RA with an answer")
			}
		case "referral":
			if r.rcode != 0 || r.aa || len(r.sections[0]) != 0 || !r.has(1, "NS") {
				why = append(why, "want a referral (NOERROR, no AA, NS in authority)")
			}
		default:
			return fmt.Errorf("unknown -expect %q", *expect)
		}
		if *do && !(r.has(0, "RRSIG") || r.has(1, "RRSIG")) {
			why = append(why, "DO set but no RRSIG")
		}
		if len(why) > 0 {
			fmt.Printf("%s %s: got %s: %s\n", fld[0], fld[1], r, strings.Join(why, "; "))
			bad++
		}
	}
	if tc > 0 {
		fmt.Printf("note: %d of %d replies were truncated (TC)\n", tc, done)
	}
	if done == 0 {
		return fmt.Errorf("%s: no queries", *queries)
	}
	if tc == done {
		return fmt.Errorf("%s: all %d replies were truncated", *addr, done)
	}
	if bad > 0 {
		return fmt.Errorf("%s: %d of %d replies are not %s", *addr, bad, done, *expect)
	}
	return nil
}
