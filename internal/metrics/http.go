package metrics

import (
	"context"
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

// Listener serves /metrics (Prometheus's text format) on an HTTP
// address of its own.
type Listener struct {
	ln  net.Listener
	srv *http.Server
	log *slog.Logger
}

// Listen binds addr (host:port) and serves s's metrics there, with the
// Go runtime's and the process's, until Close.
func Listen(addr string, s *Set, log *slog.Logger) (*Listener, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(s); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slogError{log}}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listen %s: %w", addr, err)
	}
	l := &Listener{ln: ln, log: log, srv: &http.Server{
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = l.srv.Shutdown(ctx)
}

// slogError is promhttp's error log on a slog.Logger.
type slogError struct{ log *slog.Logger }

func (e slogError) Println(v ...any) { e.log.Error("metrics: " + fmt.Sprint(v...)) }
