package perf

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// rcodeName names a header rcode as dnsperf does, falling back to RCODEn.
func rcodeName(rc int) string {
	if s, ok := dns.RcodeToString[rc]; ok && rc < 16 {
		return s
	}
	return fmt.Sprintf("RCODE%d", rc)
}

func pct(n, of uint64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// reportQuantile is a percentile reported in text (label) and JSON (key).
type reportQuantile struct {
	label string
	key   string
	q     float64
}

// reportQuantiles lists the percentiles reported in text and JSON.
func reportQuantiles() []reportQuantile {
	return []reportQuantile{
		{"p50", "p50", 0.50},
		{"p90", "p90", 0.90},
		{"p99", "p99", 0.99},
		{"p99.9", "p999", 0.999},
	}
}

// WriteText writes dnsperf's "Statistics:" block followed by latency
// percentiles.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Statistics:\n\n")
	fmt.Fprintf(&b, "  Queries sent:         %d\n", r.Sent)
	fmt.Fprintf(&b, "  Queries completed:    %d (%.2f%%)\n", r.Completed, pct(r.Completed, r.Sent))
	fmt.Fprintf(&b, "  Queries lost:         %d (%.2f%%)\n", r.Lost, pct(r.Lost, r.Sent))
	if r.Unexpected > 0 || r.Malformed > 0 || r.SendErrors > 0 {
		fmt.Fprintf(&b, "  Unexpected responses: %d, malformed %d, send errors %d\n", r.Unexpected, r.Malformed, r.SendErrors)
	}
	if r.Reconnects > 0 {
		fmt.Fprintf(&b, "  TCP reconnections:    %d\n", r.Reconnects)
	}
	b.WriteString("\n")
	var parts []string
	for rc, n := range r.Rcodes {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d (%.2f%%)", rcodeName(rc), n, pct(n, r.Completed)))
		}
	}
	fmt.Fprintf(&b, "  Response codes:       %s\n", strings.Join(parts, ", "))
	fmt.Fprintf(&b, "  Average packet size:  request %d, response %d\n", avg(r.ReqBytes, r.Sent), avg(r.RespBytes, r.Completed))
	fmt.Fprintf(&b, "  Run time (s):         %.6f\n", r.RunTime.Seconds())
	fmt.Fprintf(&b, "  Queries per second:   %.6f\n", r.QPS())
	b.WriteString("\n")
	l := &r.Latency
	fmt.Fprintf(&b, "  Average Latency (s):  %.6f (min %.6f, max %.6f)\n", l.Mean(), secs(l.Min), secs(l.Max))
	fmt.Fprintf(&b, "  Latency StdDev (s):   %.6f\n", l.StdDev())
	parts = parts[:0]
	for _, q := range reportQuantiles() {
		parts = append(parts, fmt.Sprintf("%s %.6f", q.label, l.Quantile(q.q).Seconds()))
	}
	parts = append(parts, fmt.Sprintf("max %.6f", secs(l.Max)))
	fmt.Fprintf(&b, "  Latency percentiles (s): %s\n\n", strings.Join(parts, ", "))
	_, err := io.WriteString(w, b.String())
	return err
}

func avg(sum, n uint64) uint64 {
	if n == 0 {
		return 0
	}
	return sum / n
}

func secs(ns int64) float64 { return time.Duration(ns).Seconds() }

// Summary is the machine-readable form of a Result (tern perf -j).
// Latencies are in seconds.
type Summary struct {
	Server      string             `json:"server"`
	Transport   string             `json:"transport"`
	QPS         float64            `json:"qps"`
	Sent        uint64             `json:"sent"`
	Completed   uint64             `json:"completed"`
	Lost        uint64             `json:"lost"`
	Unexpected  uint64             `json:"unexpected"`
	Malformed   uint64             `json:"malformed"`
	SendErrors  uint64             `json:"send_errors"`
	Reconnects  uint64             `json:"tcp_reconnects"`
	GSOSends    uint64             `json:"gso_sends"`
	SendCalls   uint64             `json:"send_calls"`
	RecvCalls   uint64             `json:"recv_calls"`
	Waits       uint64             `json:"waits"`
	Rcodes      map[string]uint64  `json:"rcodes"`
	AvgRequest  uint64             `json:"avg_request_bytes"`
	AvgResponse uint64             `json:"avg_response_bytes"`
	RunTime     float64            `json:"runtime_s"`
	LatencyAvg  float64            `json:"latency_avg_s"`
	LatencyMin  float64            `json:"latency_min_s"`
	LatencyMax  float64            `json:"latency_max_s"`
	LatencyStd  float64            `json:"latency_stddev_s"`
	Percentiles map[string]float64 `json:"latency_percentiles_s"`
	Interrupted bool               `json:"interrupted"`
	Clients     int                `json:"clients"`
	Outstanding int                `json:"max_outstanding"`
	MaxQPS      float64            `json:"max_qps"`
	Engine      string             `json:"engine"`
}

// Summary builds the JSON summary.
func (r *Result) Summary() Summary {
	l := &r.Latency
	s := Summary{
		Server:      r.Config.Server.String(),
		Transport:   "udp",
		QPS:         r.QPS(),
		Sent:        r.Sent,
		Completed:   r.Completed,
		Lost:        r.Lost,
		Unexpected:  r.Unexpected,
		Malformed:   r.Malformed,
		SendErrors:  r.SendErrors,
		Reconnects:  r.Reconnects,
		GSOSends:    r.GSOSends,
		SendCalls:   r.SendCalls,
		RecvCalls:   r.RecvCalls,
		Waits:       r.Waits,
		Rcodes:      map[string]uint64{},
		AvgRequest:  avg(r.ReqBytes, r.Sent),
		AvgResponse: avg(r.RespBytes, r.Completed),
		RunTime:     r.RunTime.Seconds(),
		LatencyAvg:  l.Mean(),
		LatencyMin:  secs(l.Min),
		LatencyMax:  secs(l.Max),
		LatencyStd:  l.StdDev(),
		Percentiles: map[string]float64{},
		Interrupted: r.Interrupted,
		Clients:     r.Config.Clients,
		Outstanding: r.Config.MaxOutstanding,
		MaxQPS:      r.Config.MaxQPS,
		Engine:      r.Config.Engine,
	}
	if r.Config.TCP {
		s.Transport = "tcp"
		s.Engine = "tcp"
	}
	for rc, n := range r.Rcodes {
		if n > 0 {
			s.Rcodes[rcodeName(rc)] = n
		}
	}
	for _, q := range reportQuantiles() {
		s.Percentiles[q.key] = l.Quantile(q.q).Seconds()
	}
	s.Percentiles["max"] = secs(l.Max)
	return s
}

// WriteJSON writes the summary as one indented JSON object.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r.Summary()); err != nil {
		return fmt.Errorf("write JSON summary: %w", err)
	}
	return nil
}
