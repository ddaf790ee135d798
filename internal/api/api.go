// Package api serves Kura's HTTP/JSON API (shared/API.md) with chi: routing,
// request limits, JSON decoding, the one error body and status mapping,
// request logging and metrics.
package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/prometheus/client_golang/prometheus"
)

// Store is what the API needs from the store: one narrow interface per
// noun, declared next to that noun's routes, so a handler test fakes only
// what its routes call.
type Store interface {
	RecordStore
	LedgerStore
	SessionStore
	TurnStore
	EventStore
	OpsStore
	MemoryStore
	ContextStore
	ProvenanceStore
	KBStore
	AdminStore
	RedactStore
	AccessStore
	IdempotencyStore
	LogStore
}

// Bus is what the API needs from the embedded NATS server.
type Bus interface {
	Addr() string
	Running() bool
}

// Doorbell is what the API reports about the outbox publisher.
type Doorbell interface {
	PublishedSeq() int64
	Lag() int64
	Health() string // "" while publishing works
	// Leading is whether this kurad publishes the outbox: always on
	// SQLite; on a shared PostgreSQL database, the one holding the lease.
	Leading() bool
}

// Config holds what the server reports and enforces.
type Config struct {
	Version       string
	SchemaVersion int
	MaxBodyBytes  int64
	RecordTypes   []string
	Logger        *slog.Logger
	Registry      *prometheus.Registry // nil: metrics are not served
	// TurnDeadline is the deadline of turns opened without deadline_seconds.
	TurnDeadline time.Duration
	Doorbell     Doorbell // nil: no publisher (tests of the API alone)
	// Tokens, when set, makes every call but /healthz and /readyz present
	// a bearer token it holds (auth.go); nil is the tokenless mode, where
	// every caller is auth.Local. RateLimit (requests/s, 0: off) and
	// RateBurst bound each token identity.
	Tokens    *auth.Table
	RateLimit float64
	RateBurst int
	// BackupDir is where POST /v1/admin/backup writes: absolute, existing,
	// its symlinks resolved. Empty: backups are refused.
	BackupDir string
	// MaxInflightBodyBytes bounds the request body bytes all requests may
	// hold at once (0: no bound); a request waits up to
	// MaxInflightBodyWait for room, then gets 503 (bodybudget.go).
	MaxInflightBodyBytes int64
	MaxInflightBodyWait  time.Duration
	// MaxInflightContextBytes bounds the items (budget_bytes) of the
	// context compiles being served (contextbudget.go); they wait
	// MaxInflightBodyWait for room. 0: no bound.
	MaxInflightContextBytes int64
	// Log signs checkpoints and watches the witnesses; nil: the log is off.
	Log LogService
	// MCP builds the handler of POST /mcp (nil: /mcp answers 404).
	MCP func(MCPOptions) http.Handler
	// HeavySlots is how many requests of heavy routes run at once
	// (heavy.go); 0: one fewer than GOMAXPROCS, at least one.
	HeavySlots int
}

// Server is the HTTP API.
type Server struct {
	cfg     Config
	store   Store
	bus     Bus
	log     *slog.Logger
	started time.Time
	metrics *httpMetrics
	router  chi.Router
	// byPattern is every route mount registered, by "METHOD pattern".
	byPattern map[string]*route
	limiter   *limiter
	bodies    *bodyBudget // nil: no bound on the body bytes in flight
	compiles  *bodyBudget // nil: no bound on the context items in flight

	closing   chan struct{} // closed by CloseStreams at shutdown
	closeOnce sync.Once
	// polling counts the long polls of GET /v1/events waiting for a commit.
	polling atomic.Int64
	heavy   heavySlots
}

// New wires the routes.
func New(cfg Config, store Store, bus Bus) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 4 << 20
	}
	s := &Server{cfg: cfg, store: store, bus: bus, log: cfg.Logger, started: time.Now(), closing: make(chan struct{}), limiter: newLimiter(cfg.RateLimit, cfg.RateBurst)}
	s.bodies = newBodyBudget(cfg.MaxInflightBodyBytes, cfg.MaxInflightBodyWait)
	s.heavy = newHeavySlots(cfg.HeavySlots)
	s.compiles = newBodyBudget(cfg.MaxInflightContextBytes, cfg.MaxInflightBodyWait)
	if cfg.Registry != nil {
		s.metrics = newHTTPMetrics(cfg.Registry)
		registerBodyMetrics(cfg.Registry, s.bodies)
		registerCompileMetrics(cfg.Registry, s.compiles)
		registerReadinessMetrics(cfg.Registry, s)
	}
	r := chi.NewRouter()
	r.Use(middleware.RequestID)
	r.Use(s.observe)
	r.Use(s.recoverer)
	r.Use(s.checkHost)
	r.Use(s.checkCrossSite)
	r.Use(s.authenticate)
	r.Use(s.checkPathParams)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, kura.Errorf(kura.ENotFound, "no route for %s %s", r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, kura.Errorf(kura.EMethod, "method %s is not allowed on %s", r.Method, r.URL.Path))
	})
	s.mount(r, s.routes())
	s.router = r
	return s
}

// Handler is the root http.Handler.
func (s *Server) Handler() http.Handler { return s.router }

// statusOf maps a Kura error code to its HTTP status (API.md, Conventions).
func statusOf(code string) int {
	switch code {
	case kura.EInvalid:
		return http.StatusBadRequest
	case kura.EUnauth:
		return http.StatusUnauthorized
	case kura.EDenied:
		return http.StatusForbidden
	case kura.ENotFound:
		return http.StatusNotFound
	case kura.EMethod:
		return http.StatusMethodNotAllowed
	case kura.EConflict:
		return http.StatusConflict
	case kura.ETooLarge:
		return http.StatusRequestEntityTooLarge
	case kura.EMediaType:
		return http.StatusUnsupportedMediaType
	case kura.ERateLimited:
		return http.StatusTooManyRequests
	case kura.EUnavailable:
		return http.StatusServiceUnavailable
	case kura.EStorageFull:
		return http.StatusInsufficientStorage
	}
	return http.StatusInternalServerError
}

// writeError is the one place error bodies are written. Internal errors are
// logged with the request id and answered with a generic message.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if kura.IsCode(err, kura.EReplay) && s.replayAfterRace(w, r) {
		return
	}
	var ke *kura.Error
	if !errors.As(err, &ke) {
		reqID := middleware.GetReqID(r.Context())
		s.log.Error("internal error", "req_id", reqID, "method", r.Method, "path", r.URL.Path, "err", err)
		ke = &kura.Error{Code: kura.EInternal, Message: "internal error (request " + reqID + ")"}
	} else if ke.Code == kura.EInternal {
		// The store names kurad's own faults internal (a broken schema
		// constraint, a log out of step): its message is for the caller,
		// its cause for the log.
		s.log.Error("internal error", "req_id", middleware.GetReqID(r.Context()), "method", r.Method, "path", r.URL.Path,
			"err", err, "cause", ke.Cause)
	}
	status := statusOf(ke.Code)
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	s.writeJSON(w, status, map[string]any{"error": ke})
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.log.Error("encode response", "err", err)
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	writeBody(w, status, append(b, '\n'))
}

// writeBody sends a complete JSON answer with its length, so large answers
// go out in one piece instead of chunked.
func writeBody(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// writeRecords answers {"records":[...],"next_cursor":"..."} without
// passing the records through encoding/json, which would re-scan each
// record's (already canonical) content.
func (s *Server) writeRecords(w http.ResponseWriter, status int, recs []kura.Record, next string) {
	size := 64
	for i := range recs {
		size += 320 + len(recs[i].Content)
	}
	b := make([]byte, 0, size)
	b = append(b, `{"records":[`...)
	for i := range recs {
		if i > 0 {
			b = append(b, ',')
		}
		b = recs[i].AppendJSON(b)
	}
	b = append(b, ']')
	if next != "" {
		b = append(b, `,"next_cursor":"`...)
		b = append(b, next...) // base64url: nothing to escape
		b = append(b, '"')
	}
	b = append(b, '}', '\n')
	writeBody(w, status, b)
}

// writeRecord answers one record.
func (s *Server) writeRecord(w http.ResponseWriter, status int, r *kura.Record) {
	b := r.AppendJSON(make([]byte, 0, 320+len(r.Content)))
	writeBody(w, status, append(b, '\n'))
}

// decodeJSON reads a JSON body into v: JSON media type, size limit, the
// shape limits of checkJSONShape, no unknown fields (the field is named),
// nothing after the value.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); !jsonMediaType(ct) {
		return kura.Errorf(kura.EMediaType, "the body must be JSON (Content-Type: application/json), got %q", ct)
	}
	b, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	return s.decodeBody(b, v)
}

func (s *Server) jsonError(err error) error {
	var (
		mbe *http.MaxBytesError
		se  *json.SyntaxError
		te  *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &mbe):
		return kura.Errorf(kura.ETooLarge, "the body is larger than %d bytes", s.cfg.MaxBodyBytes).WithDetail("limit", s.cfg.MaxBodyBytes)
	case errors.As(err, &se):
		return kura.Invalid("", "malformed JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: ")).WithDetail("offset", se.Offset)
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "body"
		}
		return kura.Invalid(field, "%s must be %s, not JSON %s", field, jsonTypeName(te.Type.String()), te.Value)
	case errors.Is(err, io.EOF):
		return kura.Invalid("", "the body is empty; a JSON object is required")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return kura.Invalid("", "malformed JSON: the body ends too early")
	}
	// encoding/json has no typed error for unknown fields; its message is
	// `json: unknown field "x"`.
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		field := strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`)
		return kura.Invalid(field, "unknown field %q", field)
	}
	return kura.Invalid("", "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

func jsonTypeName(goType string) string {
	switch {
	case goType == "string":
		return "a string"
	case strings.HasPrefix(goType, "map["):
		return "an object"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "float"), strings.HasPrefix(goType, "uint"):
		return "a number"
	case goType == "bool":
		return "a boolean"
	}
	return "an object"
}

// recoverer turns a handler panic into a logged 500 with the error body.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.writeError(w, r, fmt.Errorf("panic: %v", v))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// observe logs each request and records metrics by route pattern (never the
// raw path, which holds ids).
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		d := time.Since(start)
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			route = rc.RoutePattern()
		}
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		if s.metrics != nil {
			s.metrics.observe(route, r.Method, status, d)
		}
		level := slog.LevelDebug
		if status >= 500 {
			level = slog.LevelWarn
		}
		if !s.log.Enabled(r.Context(), level) {
			return
		}
		s.log.Log(r.Context(), level, "request", "method", r.Method, "route", route, "status", status,
			"duration_ms", float64(d.Microseconds())/1000, "req_id", middleware.GetReqID(r.Context()))
	})
}
