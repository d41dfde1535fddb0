package difftest

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// pipeline writes every query to one TCP connection before reading any
// answer, then reads them all and returns them by query index. RFC 7766
// section 6.2.1.1 lets a server answer pipelined queries out of order, so
// answers are matched by ID.
func pipeline(ctx context.Context, addr string, qs []Query) ([]*dns.Msg, error) {
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	defer conn.Close()
	// Unloaded, the 200 answers take milliseconds; the bound is for a
	// server that stops answering, not a measure of speed.
	if err := conn.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		return nil, fmt.Errorf("set deadline: %w", err)
	}
	var out []byte
	byID := map[uint16]int{}
	for i, q := range qs {
		id := uint16(1000 + i)
		byID[id] = i
		wire, err := q.Msg(id).Pack()
		if err != nil {
			return nil, fmt.Errorf("pack %s: %w", q, err)
		}
		out = binary.BigEndian.AppendUint16(out, uint16(len(wire)))
		out = append(out, wire...)
	}
	// One write for all: the queries arrive as a burst, as from a
	// resolver that multiplexes a connection.
	if _, err := conn.Write(out); err != nil {
		return nil, fmt.Errorf("write %d pipelined queries: %w", len(qs), err)
	}
	answers := make([]*dns.Msg, len(qs))
	for range qs {
		var l [2]byte
		if _, err := io.ReadFull(conn, l[:]); err != nil {
			return answers, fmt.Errorf("read length: %w", err)
		}
		buf := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(conn, buf); err != nil {
			return answers, fmt.Errorf("read message: %w", err)
		}
		m := new(dns.Msg)
		if err := m.Unpack(buf); err != nil {
			return answers, fmt.Errorf("unpack: %w", err)
		}
		i, ok := byID[m.Id]
		if !ok || answers[i] != nil {
			return answers, fmt.Errorf("answer with unexpected or repeated ID %d", m.Id)
		}
		answers[i] = m
	}
	return answers, nil
}

// TestTCPPipelining sends 200 queries down one TCP connection to Knot and
// to Tern without waiting for answers and requires the same answers
// query by query (RFC 7766 section 6.2.1.1: pipelined queries must all
// be answered; order may differ).
func TestTCPPipelining(t *testing.T) {
	zones, err := TestZones("testdata")
	if err != nil {
		t.Fatal(err)
	}
	var qs []Query
	for i, q := range Generate(zones) {
		// Every tenth ordinary query, sent as TCP with EDNS.
		if i%10 == 0 && q.Mutate == "" && q.Opcode == 0 && len(qs) < 200 {
			q.Net = "tcp"
			if q.EDNS == 0 {
				q.EDNS = 1232
			}
			qs = append(qs, q)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), queryBudget)
	defer cancel()
	knot := startKnot(t, zones)
	want, err := pipeline(ctx, knot.addr, qs)
	if err != nil {
		t.Fatalf("knot: %v", err)
	}
	tern := startTern(t, zones)
	got, err := pipeline(ctx, tern.addr, qs)
	if err != nil {
		t.Fatalf("tern: %v", err)
	}
	allow, err := LoadAllowlist("allowlist.txt")
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i, q := range qs {
		w, g := Normalize(want[i]), Normalize(got[i])
		for _, d := range Compare(w, g) {
			if allow.Allowed(q, d, w, g) != nil {
				continue
			}
			bad++
			if bad <= 10 {
				t.Errorf("%s: %s", q, d)
			}
		}
	}
	if bad > 10 {
		t.Errorf("... %d differences in all", bad)
	}
}
