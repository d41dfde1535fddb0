package metrics

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Listener serves /metrics (Prometheus's text format) and the status
// page (/, /status.json) on an HTTP address of its own.
type Listener struct {
	ln   net.Listener
	srv  *http.Server
	log  *slog.Logger
	stop context.CancelFunc
}

// page is the status page: its HTML, style and script, no other asset.
//
//go:embed status
var page embed.FS

// pageCSP lets the page load only its own script and style and fetch
// only its own origin: no inline script, no other origin, no frames.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Listen binds addr (host:port) and serves s's metrics there, with the
// Go runtime's and the process's, and the status page, until Close; it
// runs s's status ticks (Set.Run) meanwhile.
func Listen(addr string, s *Set, log *slog.Logger) (*Listener, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(s); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slogError{log}}))
	for path, file := range map[string]string{"/{$}": "status/index.html", "/status.js": "status/status.js", "/status.css": "status/status.css"} {
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Content-Security-Policy", pageCSP)
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Referrer-Policy", "no-referrer")
			http.ServeFileFS(w, r, page, file)
		})
	}
	mux.HandleFunc("GET /status.json", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		if err := json.NewEncoder(w).Encode(s.Status()); err != nil {
			log.Debug("status.json", "err", err)
		}
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listen %s: %w", addr, err)
	}
	ctx, stop := context.WithCancel(context.Background())
	go s.Run(ctx)
	l := &Listener{ln: ln, log: log, stop: stop, srv: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
	}}
	go func() {
		if err := l.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "addr", addr, "err", err)
		}
	}()
	return l, nil
}

// Addr is the address bound (with its port when addr asked for 0).
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Close stops the listener, letting requests in progress end for up to
// a second.
func (l *Listener) Close() {
	l.stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = l.srv.Shutdown(ctx)
}

// slogError is promhttp's error log on a slog.Logger.
type slogError struct{ log *slog.Logger }

func (e slogError) Println(v ...any) { e.log.Error("metrics: " + fmt.Sprint(v...)) }
