package auth

import (
	"context"
	"log/slog"
	"net/netip"

	"github.com/miekg/dns"

	"github.com/tern-dns/tern/internal/server"
	"github.com/tern-dns/tern/internal/zone"
)

// LogQueries makes w log one answer in every (server.query-log) at
// info level on log: client, qname, qtype,
// rcode, transport and size. The count is w's own (no shared state);
// the first logged is w's every-th answer. every <= 0 or a nil log: no
// query log, which costs one nil check per answer.
func (w *Worker) LogQueries(log *slog.Logger, every int) {
	if log == nil || every <= 0 {
		w.qlog = nil
		return
	}
	w.qlog, w.qevery, w.qleft = log, every, every
}

// logQuery counts resp, the answer to req, towards w's query log and
// logs it when its turn comes; only answers are logged (a dropped
// query has no rcode nor size).
func (w *Worker) logQuery(req *server.Request, resp []byte) {
	if resp == nil {
		return
	}
	if w.qleft--; w.qleft > 0 {
		return
	}
	w.qleft = w.qevery
	LogAnswer(w.qlog, req.Remote(), zone.NameString(w.scr.q.Name()), w.scr.q.QType, w.tcp, resp)
}

// LogAnswer writes the query log's line (server.query-log) for resp,
// the answer to a query for qname and qtype from client: an info line
// "query" with client, qname, qtype, rcode, transport and size. The
// resolver's sampled answers are logged by it too.
func LogAnswer(log *slog.Logger, client netip.AddrPort, qname string, qtype uint16, tcp bool, resp []byte) {
	transport := "udp"
	if tcp {
		transport = "tcp"
	}
	rcode := 0
	if len(resp) >= 4 {
		rcode = int(resp[3] & 0x0f)
	}
	log.LogAttrs(context.Background(), slog.LevelInfo, "query",
		slog.String("client", client.String()),
		slog.String("qname", qname),
		slog.String("qtype", dns.Type(qtype).String()),
		slog.String("rcode", dns.RcodeToString[rcode]),
		slog.String("transport", transport),
		slog.Int("size", len(resp)))
}
