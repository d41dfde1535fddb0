package recursor

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/dnstest"
	"github.com/tern-dns/tern/internal/server"
)

// queryLine is a query log line's fields.
type queryLine struct {
	Msg, Client, Qname, Qtype, Rcode, Transport string
	Size                                        int
}

func queryLines(t *testing.T, text string) []queryLine {
	t.Helper()
	var lines []queryLine
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if l == "" {
			continue
		}
		var q queryLine
		if err := json.Unmarshal([]byte(l), &q); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		lines = append(lines, q)
	}
	return lines
}

// TestQueryLog: with LogQueries(log, 2) a worker logs every second
// query's answer: a cache hit when it is made, a deferred query's when
// its resolution sends it (one not its worker's turn is not logged);
// then 1 in 10 of 320 hits answered in batches (32 lines); without a
// query log a hit still allocates nothing.
func TestQueryLog(t *testing.T) {
	var buf dnstest.LogBuffer
	r := newRecursor(t, &fakeResolver{}, Options{ResponseCache: 64})
	r.LogQueries(slog.New(slog.NewJSONHandler(&buf, nil)), 2)
	w := r.NewWorker(false).(*Worker)
	ask := func(name string, wantDeferred bool) {
		t.Helper()
		resp, deferred := exchange(t, w, query(name, dns.TypeA, true, true), client, false)
		if deferred != wantDeferred || resp.Rcode != dns.RcodeSuccess {
			t.Fatalf("%s: deferred %v, %v", name, deferred, resp)
		}
	}
	ask("cached.example.tld.", true) // 1: deferred, not logged
	mailed(t, w)
	ask("cached.example.tld.", false) // 2: a hit, logged
	// A resolution logs a deferred answer after it sends it, and mails
	// the response after that: once it is mailed, its line is written
	// if it is to be (the next query takes the mail).
	ask("other.example.tld.", true) // 3: deferred, not logged
	mailed(t, w)
	ask("third.example.tld.", true) // 4: deferred, logged when sent
	mailed(t, w)
	lines := queryLines(t, buf.String())
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), buf.String())
	}
	for i, name := range []string{"cached.example.tld.", "third.example.tld."} {
		q := lines[i]
		if q.Msg != "query" || q.Qname != name || q.Qtype != "A" || q.Rcode != "NOERROR" || q.Transport != "udp" || q.Client != client.String() || q.Size < 12 {
			t.Errorf("line %d: %+v, want %s from %s", i, q, name, client)
		}
	}

	var batchBuf dnstest.LogBuffer
	r.LogQueries(slog.New(slog.NewJSONHandler(&batchBuf, nil)), 10)
	bw := r.NewWorker(false).(*Worker)
	exchange(t, bw, query("cached.example.tld.", dns.TypeA, true, true), client, false)
	mailed(t, bw)
	pkt, _ := query("cached.example.tld.", dns.TypeA, true, true).Pack()
	reqs := make([]server.Request, 32)
	outs := make([][]byte, 32)
	for range 10 {
		for i := range reqs {
			reqs[i] = *server.NewRequest(pkt, client, false, nil)
			outs[i] = make([]byte, 0, server.BufferSize)
		}
		bw.AnswerBatch(reqs, outs)
	}
	// 1 + 320 queries: the 10th, 20th, ... 320th are logged.
	if n := len(queryLines(t, batchBuf.String())); n != 32 {
		t.Errorf("batches: %d lines, want 32", n)
	}

	r.LogQueries(nil, 10)
	nw := r.NewWorker(false).(*Worker)
	exchange(t, nw, query("cached.example.tld.", dns.TypeA, true, true), client, false)
	mailed(t, nw)
	hitAllocsNothing(t, nw, "cached.example.tld.")
}
