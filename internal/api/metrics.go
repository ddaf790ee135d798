package api

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg *prometheus.Registry) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kura_http_requests_total",
			Help: "HTTP requests by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kura_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern and method.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route", "method"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

func (m *httpMetrics) observe(route, method string, status int, d time.Duration) {
	method = metricMethod(method)
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route, method).Observe(d.Seconds())
}

// metricMethod keeps the method label bounded: any client can send an
// invented method, and each would otherwise become a new series.
func metricMethod(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
		return m
	}
	return "other"
}

// registerBodyMetrics exports the request body budget (bodybudget.go).
func registerBodyMetrics(reg *prometheus.Registry, b *bodyBudget) {
	if b == nil {
		return
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_http_inflight_body_bytes", Help: "Bytes of request bodies reserved by the requests being served (declared length, or the body limit when chunked)."},
			func() float64 { return float64(b.held.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_http_inflight_body_limit_bytes", Help: "The budget of request body bytes in flight (max-inflight-body-bytes)."},
			func() float64 { return float64(b.size) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_http_inflight_body_waiting", Help: "Requests waiting for room in the request body budget."},
			func() float64 { return float64(b.waiting.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kura_http_body_budget_refused_total", Help: "Requests answered 503 because the request body budget had no room in time."},
			func() float64 { return float64(b.refused.Load()) }),
	)
}

// readinessCollector exports the /readyz checks, one series per check, read
// at scrape time, so that an alert can fire on a degraded kurad (a full
// disk, a doorbell that cannot publish) that still answers /readyz 200.
type readinessCollector struct {
	s    *Server
	desc *prometheus.Desc
}

func registerReadinessMetrics(reg *prometheus.Registry, s *Server) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_events_polls_waiting", Help: "Long polls of GET /v1/events waiting for a commit."},
		func() float64 { return float64(s.polling.Load()) }))
	reg.MustRegister(readinessCollector{s: s, desc: prometheus.NewDesc("kura_readiness_check",
		"1 while the /readyz check passes, 0 while it fails (check: database, writer, nats, storage, integrity, log, doorbell).",
		[]string{"check"}, nil)})
}

func (c readinessCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c readinessCollector) Collect(ch chan<- prometheus.Metric) {
	// A scrape must not hang on a stuck database; a check that cannot
	// answer in time is failing.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, checks, _ := c.s.readiness(ctx)
	for name, state := range checks {
		v := 0.0
		if state == "ok" {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, name)
	}
}
