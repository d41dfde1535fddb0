// Package control is the server's control channel, as Knot's knotc and
// NSD's nsd-control have one: a unix socket (mode 0600: whoever may write
// it may reload zones) on which each line a client writes is a JSON
// Request and each line the server writes back is a JSON Response. The
// commands are handlers the server registers; this package knows nothing
// of zones.
package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Request is one command.
type Request struct {
	Command string `json:"command"`
	// Zone is the zone the command is about, "" for all or none.
	Zone string `json:"zone,omitempty"`
	// Settings are zone-add's: the zone's as a [[zone]] table has them.
	Settings *ZoneSettings `json:"settings,omitempty"`
}

// ZoneSettings are the settings of a zone added at run time, as the
// keys of a [[zone]] table: names of [[remote]] and [[acl]] tables of
// the running configuration.
type ZoneSettings struct {
	// File is the zone file (an absolute path; a secondary's default is
	// under server.data-dir).
	File    string   `json:"file,omitempty"`
	Primary []string `json:"primary,omitempty"`
	ACL     []string `json:"acl,omitempty"`
	Notify  []string `json:"notify,omitempty"`
	// Catalog names the catalog zone produced here that lists the zone
	// (RFC 9432), as the [[zone]] key catalog does.
	Catalog string `json:"catalog,omitempty"`
}

// Response answers one Request: Error is "" when it succeeded. A command
// may fail in part and still have a Result (a reload of several zones).
type Response struct {
	Error  string          `json:"error,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// The commands and their results, shared by the server and tern ctl.
const (
	CommandStatus = "status" // Status
	CommandZones  = "zones"  // []Zone
	CommandReload = "reload" // []Zone: the zones reloaded, as they are after it
	// CommandNotify sends a zone's NOTIFYs now.
	CommandNotify = "notify" // ZoneResult: ResultSent, To
	// CommandRefresh starts a secondary zone's refresh (SOA query,
	// transfer when newer) and returns at once.
	CommandRefresh = "refresh" // ZoneResult: ResultStarted
	// CommandRetransfer starts a secondary zone's transfer of the whole
	// zone (AXFR), whatever the serials, and returns at once.
	CommandRetransfer = "retransfer" // ZoneResult: ResultStarted
	// CommandZoneAdd serves a zone the configuration does not name,
	// with Request.Settings, until zone-remove (kept across reloads and
	// restarts).
	CommandZoneAdd = "zone-add" // []Zone: the zone added
	// CommandZoneRemove stops serving a zone.
	CommandZoneRemove = "zone-remove" // ZoneResult: ResultRemoved
	// CommandStats gives the server's counters (those of its
	// Prometheus metrics) summed now.
	CommandStats = "stats" // the server's counters (cmd/tern's statsResult)
)

// Status is the result of "status".
type Status struct {
	Version string    `json:"version"`
	Started time.Time `json:"started"`
	// Uptime is in whole seconds.
	Uptime   int64 `json:"uptime"`
	Zones    int   `json:"zones"`
	Resolver bool  `json:"resolver"`
}

// ZoneResult is the result of a command that acts on one zone and has
// no zone list to show: notify, refresh, retransfer, zone-remove.
type ZoneResult struct {
	// Zone is the zone's origin, canonical ("example.com.").
	Zone string `json:"zone"`
	// Result is what was done: ResultSent, ResultStarted or
	// ResultRemoved.
	Result string `json:"result"`
	// To are the addresses notify sent NOTIFYs to.
	To []string `json:"to,omitempty"`
}

// ZoneResult.Result values.
const (
	// ResultSent: the NOTIFYs were sent (their answers are logged).
	ResultSent = "sent"
	// ResultStarted: the refresh or transfer started; the log says how
	// it ends.
	ResultStarted = "started"
	ResultRemoved = "removed"
)

// Zone states.
const (
	ZoneLoaded = "loaded"
	// ZoneFailed: the last load failed; the zone serves the version it
	// had (Serial), or answers SERVFAIL when it never loaded.
	ZoneFailed = "failed"
	// ZoneLoading: a reload of the zone waits for another event of it
	// (a transfer) to end, and runs then; the zone serves the version it
	// had (Serial) meanwhile.
	ZoneLoading = "loading"
)

// Zone roles.
const (
	RolePrimary   = "primary"
	RoleSecondary = "secondary"
)

// Zone is one zone in the results of "zones" and "reload".
type Zone struct {
	Origin string `json:"origin"`
	Role   string `json:"role"`
	// Serial is the serial served; Serving is false when the zone has
	// no data (answered SERVFAIL).
	Serial  uint32 `json:"serial"`
	Serving bool   `json:"serving"`
	State   string `json:"state"`
	// Loaded is when the version served was loaded.
	Loaded time.Time `json:"loaded,omitzero"`
	File   string    `json:"file,omitempty"`
	// Error is why the last load failed (file:line and what is wrong).
	Error string `json:"error,omitempty"`
	// LastRefresh (a secondary's) is when the primary last confirmed
	// the version served (a transfer, or the serial found current).
	LastRefresh time.Time `json:"last-refresh,omitzero"`
	// NextRefresh (a secondary's) is when its next SOA query is due;
	// zero while one runs.
	NextRefresh time.Time `json:"next-refresh,omitzero"`
	// Expires (a secondary's) is when the version served stops being
	// served without a successful refresh; zero when none is served.
	Expires time.Time `json:"expires,omitzero"`
}

// Handler runs one command; its result is encoded as JSON.
type Handler func(ctx context.Context, req Request) (any, error)

// Limits of a connection: a control client is a person or a script, not
// a load; these bound what a stuck or hostile local client can hold.
const (
	maxLine     = 64 << 10
	idleTimeout = time.Minute
	maxConns    = 16
)

// Server answers the control socket.
type Server struct {
	path     string
	log      *slog.Logger
	handlers map[string]Handler

	ln     net.Listener
	conns  chan struct{} // one token per open connection
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a Server for the socket at path, logging to log (nil:
// nowhere). Register handlers with Handle, then Start.
func New(path string, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{path: path, log: log, handlers: map[string]Handler{}, conns: make(chan struct{}, maxConns)}
}

// Handle registers h as the handler of command. Call it before Start.
func (s *Server) Handle(command string, h Handler) { s.handlers[command] = h }

// ErrInUse is Start's error when another server answers on the socket.
var ErrInUse = errors.New("another server answers on it")

// Start creates the socket, replacing a stale file left by a server that
// is gone (one still answering is left alone: ErrInUse), and serves it
// until Close or ctx ends.
func (s *Server) Start(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o750); err != nil {
		return fmt.Errorf("control socket %s: %w", s.path, err)
	}
	if c, err := net.DialTimeout("unix", s.path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("control socket %s: %w", s.path, ErrInUse)
	}
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("control socket %s: %w", s.path, err)
	}
	ln, err := net.Listen("unix", s.path)
	if err != nil {
		return fmt.Errorf("control socket %s: %w", s.path, err)
	}
	// Between Listen and Chmod the socket has the umask's mode (0755
	// under the usual 022: no one else may connect, which takes write
	// permission); the directory (0750 when made above) keeps others out
	// too.
	if err := os.Chmod(s.path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("control socket %s: %w", s.path, err)
	}
	// The file is removed by Close, not by the listener.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	s.ln = ln
	ctx, s.cancel = context.WithCancel(ctx)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.accept(ctx)
	}()
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	return nil
}

// Path is the socket's file.
func (s *Server) Path() string { return s.path }

// Close stops serving, waits for the connections to end and removes the
// socket file.
func (s *Server) Close() error {
	if s.ln == nil {
		return nil
	}
	s.cancel()
	s.ln.Close()
	s.wg.Wait()
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func (s *Server) accept(ctx context.Context) {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				s.log.Error("control: accept", "err", err)
			}
			return
		}
		select {
		case s.conns <- struct{}{}:
		default:
			// Too many clients at once: this one is told so, not queued.
			c.SetWriteDeadline(time.Now().Add(time.Second))
			writeResponse(c, Response{Error: "too many control connections"})
			c.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-s.conns }()
			s.serve(ctx, c)
		}()
	}
}

// serve answers the requests of one connection, in order, until the
// client closes it, stays idle too long, or sends a line too long to be
// a request.
func (s *Server) serve(ctx context.Context, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for {
		c.SetReadDeadline(time.Now().Add(idleTimeout))
		if !sc.Scan() {
			if errors.Is(sc.Err(), bufio.ErrTooLong) {
				writeResponse(c, Response{Error: fmt.Sprintf("request longer than %d octets", maxLine)})
			}
			return
		}
		resp := s.Answer(ctx, sc.Bytes())
		c.SetWriteDeadline(time.Now().Add(idleTimeout))
		if err := writeResponse(c, resp); err != nil {
			return
		}
	}
}

// Answer runs the request in line (one JSON object) and returns its
// response: a request that cannot be parsed, or names no known command,
// is answered with an error.
func (s *Server) Answer(ctx context.Context, line []byte) Response {
	var req Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return Response{Error: "bad request: " + err.Error()}
	}
	if dec.More() {
		return Response{Error: "bad request: more than one JSON value on the line"}
	}
	h := s.handlers[req.Command]
	if h == nil {
		return Response{Error: fmt.Sprintf("unknown command %q", req.Command)}
	}
	// As knotc's commands are in Knot's log: who changed what, and when.
	s.log.Info("control command", "command", req.Command, "zone", req.Zone)
	result, err := h(ctx, req)
	var resp Response
	if result != nil {
		b, merr := json.Marshal(result)
		if merr != nil {
			return Response{Error: fmt.Sprintf("%s: encoding the result: %v", req.Command, merr)}
		}
		resp.Result = b
	}
	if err != nil {
		resp.Error = err.Error()
	}
	return resp
}

func writeResponse(c net.Conn, r Response) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = c.Write(append(b, '\n'))
	return err
}

// Call sends req to the server at the socket path and returns its
// response. An error is the exchange's (no server, a broken line); the
// command's own failure is in Response.Error.
func Call(ctx context.Context, path string, req Request) (Response, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return Response{}, fmt.Errorf("control socket: %w", err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	b, err := json.Marshal(req)
	if err != nil {
		return Response{}, err
	}
	if _, err := c.Write(append(b, '\n')); err != nil {
		return Response{}, fmt.Errorf("control socket %s: %w", path, err)
	}
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 4096), 64<<20)
	if !sc.Scan() {
		err := sc.Err()
		if err == nil {
			err = errors.New("the server closed the connection without an answer")
		}
		return Response{}, fmt.Errorf("control socket %s: %w", path, err)
	}
	var resp Response
	if err := json.Unmarshal(sc.Bytes(), &resp); err != nil {
		return Response{}, fmt.Errorf("control socket %s: bad response: %w", path, err)
	}
	return resp, nil
}
