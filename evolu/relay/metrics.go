package relay

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are one Server's Prometheus metrics, in its own registry.
type metrics struct {
	reg         *prometheus.Registry
	conns       prometheus.Gauge
	accepted    prometheus.Counter
	refused     *prometheus.CounterVec // by reason
	closed      *prometheus.CounterVec // by reason
	requests    prometheus.Counter
	dropped     prometheus.Counter
	bytesIn     prometheus.Counter
	bytesOut    prometheus.Counter
	errors      *prometheus.CounterVec // by protocol error code
	broadcasts  prometheus.Counter
	queued      prometheus.Gauge
	applySecond prometheus.Histogram
	storage     *prometheus.HistogramVec // by storage call
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.conns = prometheus.NewGauge(prometheus.GaugeOpts{Name: "evolu_relay_connections", Help: "Open WebSocket connections."})
	m.accepted = prometheus.NewCounter(prometheus.CounterOpts{Name: "evolu_relay_connections_accepted_total", Help: "WebSocket connections accepted."})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "evolu_relay_connections_refused_total", Help: "Connections refused before the WebSocket upgrade, by reason."}, []string{"reason"})
	m.closed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "evolu_relay_connections_closed_total", Help: "Connections closed, by reason."}, []string{"reason"})
	m.requests = prometheus.NewCounter(prometheus.CounterOpts{Name: "evolu_relay_requests_total", Help: "Protocol requests answered."})
	m.dropped = prometheus.NewCounter(prometheus.CounterOpts{Name: "evolu_relay_requests_dropped_total", Help: "Requests dropped unanswered (malformed or oversize)."})
	m.bytesIn = prometheus.NewCounter(prometheus.CounterOpts{Name: "evolu_relay_received_bytes_total", Help: "Protocol bytes received."})
	m.bytesOut = prometheus.NewCounter(prometheus.CounterOpts{Name: "evolu_relay_sent_bytes_total", Help: "Protocol bytes sent (replies and broadcasts)."})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "evolu_relay_protocol_errors_total", Help: "Replies carrying a protocol error code, by code."}, []string{"code"})
	m.broadcasts = prometheus.NewCounter(prometheus.CounterOpts{Name: "evolu_relay_broadcasts_total", Help: "Broadcast frames queued to subscribers."})
	m.queued = prometheus.NewGauge(prometheus.GaugeOpts{Name: "evolu_relay_queued_bytes", Help: "Outgoing bytes queued over all connections."})
	m.applySecond = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "evolu_relay_apply_seconds", Help: "Time to answer one request, storage included.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)})
	m.storage = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "evolu_relay_storage_seconds", Help: "Latency of storage calls, by call.",
		Buckets: prometheus.ExponentialBuckets(0.00001, 4, 10)}, []string{"op"})
	for _, c := range []prometheus.Collector{m.conns, m.accepted, m.refused, m.closed, m.requests, m.dropped, m.bytesIn, m.bytesOut,
		m.errors, m.broadcasts, m.queued, m.applySecond, m.storage,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	return m
}

func (m *metrics) observeApply(start time.Time) { m.applySecond.Observe(time.Since(start).Seconds()) }

// AdminHandler serves the operator's endpoints, meant for a separate,
// private address (ferry relay --admin-addr): GET /healthz answers 200 "ok"
// when the database answers (503 otherwise), and /metrics the Prometheus
// metrics of this relay.
func (s *Server) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.health)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	return mux
}

// health answers a health check: 200 "ok" when the database answers.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if err := s.store.Ping(r.Context()); err != nil {
		s.log.Warn("evolu relay: health check failed", "err", err)
		http.Error(w, "database unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}
