package api

import (
	"context"
	"crypto/ed25519"
	"net/http"

	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/keys"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// OpsStore is what the operational routes need from the store.
type OpsStore interface {
	Ping(ctx context.Context) error
	Counts() map[string]int64
	PublicKey() ed25519.PublicKey
}

// integrityChecker is the SQLite store's check of its database at start:
// its state for /v1/info (nil on PostgreSQL) and for /readyz.
type integrityChecker interface {
	IntegrityCheck() *kura.IntegrityCheckInfo
	IntegrityHealth() string
}

// opsRoutes are the probes, the metrics, /v1/info and the MCP endpoint.
func (s *Server) opsRoutes() []route {
	routes := []route{
		{method: http.MethodGet, pattern: "/healthz", open: true, serve: s.handleHealthz},
		{method: http.MethodGet, pattern: "/readyz", open: true, serve: s.handleReadyz},
		{method: http.MethodGet, pattern: "/v1/info", role: auth.RoleReader, serve: s.handleInfo},
		// MCP: any valid token; every tool call is a request to the routes
		// here, carrying the same token, and is checked again as such.
		{method: http.MethodPost, pattern: "/mcp", role: auth.RoleReader, serve: s.mcpHandler()},
	}
	if s.cfg.Registry != nil {
		h := promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{EnableOpenMetrics: true})
		routes = append(routes, route{method: http.MethodGet, pattern: "/metrics", role: auth.RoleReader, serve: h.ServeHTTP})
	}
	return routes
}

// handleHealthz answers while the process is alive.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReadyz answers 200 only while the database, the writer and NATS work.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	status, checks, ok := s.readiness(r.Context())
	if !ok {
		// Non-2xx answers always carry the error body; the checks say what failed.
		e := kura.Errorf(kura.EUnavailable, "kurad is not ready").WithDetail("checks", checks)
		s.writeError(w, r, e)
		return
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"status": status, "checks": checks})
}

// readiness runs the /readyz checks: each check's state ("ok" or why not),
// status "ready" or "degraded", and ok false when kurad cannot serve. The
// readiness metric reads the same checks (metrics.go).
func (s *Server) readiness(ctx context.Context) (status string, checks map[string]string, ok bool) {
	checks = map[string]string{"database": "ok", "writer": "ok", "nats": "ok"}
	ok = true
	if err := s.store.Ping(ctx); err != nil {
		checks["database"] = kura.ErrorMessage(err)
		ok = false
	}
	if wh, isWH := s.store.(interface{ WriterHealth() string }); isWH {
		// A transaction that does not end holds up every write behind it.
		if h := wh.WriterHealth(); h != "" {
			checks["writer"] = h
			ok = false
		}
	}
	if s.bus == nil || !s.bus.Running() {
		checks["nats"] = "not running"
		ok = false
	}
	status = "ready"
	// A full or failing disk refuses writes (507/503) while reads go on, so
	// kurad stays ready for readers and says why writes fail.
	if sh, isSH := s.store.(interface{ StorageHealth() string }); isSH {
		checks["storage"] = "ok"
		if h := sh.StorageHealth(); h != "" {
			checks["storage"] = h
			status = "degraded"
		}
	}
	if ic, isIC := s.store.(integrityChecker); isIC && ic.IntegrityCheck() != nil {
		// Until the full check at start passed, writes are refused (503)
		// while reads go on; a damaged database fails Ping above.
		checks["integrity"] = "ok"
		if h := ic.IntegrityHealth(); h != "" {
			checks["integrity"] = h
			status = "degraded"
		}
	}
	if l := s.cfg.Log; l != nil {
		// A rolled-back or forked log refuses writes: not ready, so a load
		// balancer sends no one here and a person looks.
		// Only a contradiction fails the check: a log no witness has
		// cosigned yet is /v1/info's news, not a readiness problem.
		checks["log"] = "ok"
		if st := l.Status().State; st == kura.LogRollback || st == kura.LogFork {
			checks["log"] = st
			ok = false
		}
	}
	if d := s.cfg.Doorbell; d != nil {
		// SQLite is the truth and the outbox keeps every event, so a stalled
		// doorbell degrades kurad without making it unready for writes.
		checks["doorbell"] = "ok"
		if h := d.Health(); h != "" {
			checks["doorbell"] = h
			status = "degraded"
		}
	}
	return status, checks, ok
}

func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	info := kura.Info{
		Version:       s.cfg.Version,
		SchemaVersion: s.cfg.SchemaVersion,
		LastEventSeq:  s.store.LastEventSeq(),
		Counts:        s.store.Counts(),
		PublicKey:     keys.PublicKeyString(s.store.PublicKey()),
		RecordTypes:   s.cfg.RecordTypes,
		NodeKinds:     s.store.NodeKinds(),
		StartedAt:     kura.FormatTime(s.started),

		RedactionPurge: s.store.PurgeState(),
	}
	ct, err := s.store.EventsCompactedThrough(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	info.CompactedThrough = ct
	if s.bus != nil {
		info.NATS.Addr = s.bus.Addr()
		if c, ok := s.bus.(interface{ ClusterInfo() *kura.NATSClusterInfo }); ok {
			info.NATS.Cluster = c.ClusterInfo()
		}
	}
	if d := s.cfg.Doorbell; d != nil {
		info.Outbox = &kura.OutboxInfo{PublishedSeq: d.PublishedSeq(), Lag: d.Lag(), Leading: d.Leading()}
	}
	if e, ok := s.store.(interface{ EmbedderInfo() *kura.EmbedderInfo }); ok {
		info.Embedder = e.EmbedderInfo()
	}
	if ic, ok := s.store.(integrityChecker); ok {
		info.IntegrityCheck = ic.IntegrityCheck()
	}
	if l := s.cfg.Log; l != nil {
		info.LogOrigin, info.LogVKey = s.store.LogOrigin(), l.VerifierKey()
		st := l.Status()
		info.Log = &st
	} else {
		info.Log = &kura.LogStatus{State: kura.LogOff, Witnesses: []kura.WitnessStatus{}}
	}
	s.writeJSON(w, http.StatusOK, info)
}

// handleImport loads an export (kura import): records, ledgers and
// sessions with their original ids and times, hashes recomputed.
