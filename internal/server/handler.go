package server

// Handler makes the state through which the server's goroutines answer
// queries, as net/http's Handler answers requests: the server asks it for
// one Worker per UDP socket it serves and for TCP Workers that busy
// connections take from a pool (an idle connection holds none), and calls
// each Worker from one goroutine at a time. The authoritative
// engine (auth) is one Handler; a resolver can be another on the same
// sockets.
type Handler interface {
	// NewWorker returns a Worker for a UDP socket (tcp false) or for TCP
	// connections (tcp true), whose answers then have TCP's size limit.
	NewWorker(tcp bool) Worker
}

// HandlerFunc adapts a function to a Handler, as http.HandlerFunc does.
type HandlerFunc func(tcp bool) Worker

// NewWorker calls f(tcp).
func (f HandlerFunc) NewWorker(tcp bool) Worker { return f(tcp) }

// Worker is the state of one goroutine's answers, reused from query to
// query (buffers, caches), so that answering allocates nothing.
type Worker interface {
	// Answer writes the response to the query in pkt into out, which is
	// empty with capacity BufferSize, and returns it, or nil to send
	// nothing. A response larger than out's capacity may be a slice of
	// the Worker's own; it must stay valid until the next call. pkt is
	// the server's buffer and must not be kept.
	Answer(pkt, out []byte) []byte
}

// Batcher is a UDP Worker that answers a batch of datagrams in one call,
// as http.Flusher is a ResponseWriter that can flush: with a batch in
// hand it can overlap the queries' memory loads (auth.Ahead). A UDP
// Worker that implements it gets every batch through AnswerBatch, one
// interface call per batch; the others get one Answer call per datagram.
type Batcher interface {
	// AnswerBatch answers pkts[i] into outs[i] for every i, as Answer
	// does, and stores each response (or nil) back into outs[i]. The
	// slices have the same length, at most the server's batch size.
	AnswerBatch(pkts, outs [][]byte)
}

// BufferSize is the capacity of the response buffers a Worker is given:
// the largest DNS message and room for a builder to run past its size
// limit before it notices and truncates.
const BufferSize = 65535 + 512
