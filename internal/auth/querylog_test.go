package auth

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/tern-dns/tern/internal/server"
)

// TestQueryLog: a Worker with a query log of 1 in 10 logs about a tenth
// of a bounded burst of answers (80-120 of 1,000, through AnswerBatch
// over UDP and Answer over TCP), each a JSON line with the client,
// qname, qtype, rcode, transport and size; without one it logs nothing
// and answering still allocates nothing.
func TestQueryLog(t *testing.T) {
	r := New(cacheResponder(t).Zones(), Options{})
	pkts := cacheQueries(t)
	client := netip.MustParseAddrPort("192.0.2.7:5353")
	for _, tcp := range []bool{false, true} {
		var buf bytes.Buffer
		w := r.NewWorker(tcp, 0)
		w.LogQueries(slog.New(slog.NewJSONHandler(&buf, nil)), 10)
		answered := 0
		tb := newTestBatch(len(pkts))
		for answered < 1000 {
			if tcp {
				out := w.Answer(server.NewRequest(pkts[answered%len(pkts)], client, true, nil), make([]byte, 0, BufferSize))
				if out == nil {
					t.Fatal("no answer")
				}
				answered++
				continue
			}
			tb.answer(w, pkts)
			answered += len(pkts)
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if n := len(lines); n < answered*8/100 || n > answered*12/100 {
			t.Errorf("tcp %v: %d of %d answers logged, want about a tenth", tcp, n, answered)
		}
		var q struct {
			Msg, Client, Qname, Qtype, Rcode, Transport string
			Size                                        int
		}
		if err := json.Unmarshal([]byte(lines[0]), &q); err != nil {
			t.Fatalf("%v: %q", err, lines[0])
		}
		transport := map[bool]string{false: "udp", true: "tcp"}[tcp]
		if q.Msg != "query" || q.Qname == "" || q.Qtype == "" || q.Rcode == "" || q.Transport != transport || q.Size < 12 {
			t.Errorf("logged %+v from %q", q, lines[0])
		}
		if tcp && q.Client != client.String() {
			t.Errorf("client %q, want %s", q.Client, client)
		}
	}
	w := r.NewWorker(false, 0)
	w.LogQueries(nil, 10)
	tb := newTestBatch(len(pkts))
	if n := testing.AllocsPerRun(20, func() { tb.answer(w, pkts) }); n != 0 {
		t.Errorf("no query log: %v allocations per batch, want 0", n)
	}
}
