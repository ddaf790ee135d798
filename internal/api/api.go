// Package api serves Kura's HTTP/JSON API (shared/API.md) with chi: routing,
// request limits, JSON decoding, the one error body and status mapping,
// request logging and metrics.
package api

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/prometheus/client_golang/prometheus"
)

// Store is what the API needs from the store.
type Store interface {
	CreateRecord(ctx context.Context, in *kura.RecordInput, opts ...kura.WriteOption) (*kura.Record, error)
	CreateRecords(ctx context.Context, ins []kura.RecordInput, opts ...kura.WriteOption) ([]kura.Record, error)
	GetRecord(ctx context.Context, id string) (*kura.Record, error)
	GetRecordByHash(ctx context.Context, hash string) (*kura.Record, error)
	ListRecords(ctx context.Context, f kura.RecordFilter) ([]kura.Record, string, error)
	CreateLedger(ctx context.Context, in *kura.LedgerInput, opts ...kura.WriteOption) (*kura.Ledger, error)
	GetLedger(ctx context.Context, id string, withRecords bool) (*kura.Ledger, error)
	HydrateLedger(ctx context.Context, id string, after, limit int, scopes []string, w io.Writer, start func(next int) error) error
	VerifyLedger(ctx context.Context, id string) (*kura.Verification, error)
	Diff(ctx context.Context, a, b string) (*kura.Diff, error)
	Proof(ctx context.Context, ledgerID, recordID string) (*kura.Proof, error)
	Ping(ctx context.Context) error
	LookupIdempotency(ctx context.Context, identity, key string) (*kura.StoredAnswer, error)

	CreateSession(ctx context.Context, in *kura.SessionInput, opts ...kura.WriteOption) (*kura.Session, error)
	GetSession(ctx context.Context, id string) (*kura.Session, error)
	ListSessions(ctx context.Context, project, after string, limit int) ([]kura.Session, string, error)
	SessionLog(ctx context.Context, id, after string, limit int) ([]kura.Ledger, string, error)
	Reflog(ctx context.Context, id string) ([]kura.ReflogEntry, error)
	MoveHead(ctx context.Context, id string, mv *kura.HeadMove, opts ...kura.WriteOption) (*kura.Session, error)
	VerifySession(ctx context.Context, id, expectHeadHash string) (*kura.SessionVerification, error)
	OpenTurn(ctx context.Context, sessionID string, in *kura.TurnOpenInput, defaultDeadline time.Duration, opts ...kura.WriteOption) (*kura.Turn, error)
	ClaimTurn(ctx context.Context, id string, in *kura.TurnClaim, opts ...kura.WriteOption) (*kura.Lease, error)
	RenewTurn(ctx context.Context, id string, in *kura.TurnRenew, opts ...kura.WriteOption) (*kura.Lease, error)
	AppendTurn(ctx context.Context, id string, in *kura.TurnAppend, opts ...kura.WriteOption) (*kura.TurnAppendResult, error)
	CloseTurn(ctx context.Context, id string, in *kura.TurnClose, opts ...kura.WriteOption) (*kura.Turn, error)
	GetTurn(ctx context.Context, id string) (*kura.Turn, error)
	ListTurns(ctx context.Context, sessionID, state, after string, limit int) ([]kura.Turn, string, error)
	Import(ctx context.Context, in *kura.ImportInput, opts ...kura.WriteOption) (*kura.ImportResult, error)
	MemoryStore
	ContextStore
	ProvenanceStore
	KBStore
	AdminStore
	RedactStore
	AccessStore
	LastEventSeq() int64
	ListEvents(ctx context.Context, f kura.EventFilter) (*kura.EventPage, error)
	EventsChanged() <-chan struct{}
	Counts() map[string]int64
	PublicKey() ed25519.PublicKey
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
	limiter *limiter
	bodies  *bodyBudget // nil: no bound on the body bytes in flight

	closing   chan struct{} // closed by CloseStreams at shutdown
	closeOnce sync.Once
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
	if cfg.Registry != nil {
		s.metrics = newHTTPMetrics(cfg.Registry)
		registerBodyMetrics(cfg.Registry, s.bodies)
		registerReadinessMetrics(cfg.Registry, s)
	}
	r := chi.NewRouter()
	r.Use(middleware.RequestID)
	r.Use(s.observe)
	r.Use(s.recoverer)
	r.Use(s.checkHost)
	r.Use(s.authenticate)
	r.Use(s.checkPathParams)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, kura.Errorf(kura.ENotFound, "no route for %s %s", r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, kura.Errorf(kura.EMethod, "method %s is not allowed on %s", r.Method, r.URL.Path))
	})
	s.registerOpsRoutes(r)
	s.registerMCPRoutes(r)
	r.Route("/v1", func(r chi.Router) {
		s.registerRecordRoutes(r)
		s.registerRedactRoutes(r)
		s.registerLedgerRoutes(r)
		s.registerSessionRoutes(r)
		s.registerTurnRoutes(r)
		s.registerEventRoutes(r)
		s.registerMemoryRoutes(r)
		s.registerContextRoutes(r)
		s.registerProvenanceRoutes(r)
		s.registerKBRoutes(r)
		r.Post("/admin/import", s.idempotent(s.handleImport))
		s.registerAdminRoutes(r)
	})
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
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
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

// bodyRoute is the shape most write routes share: decode the JSON body
// into In, make the store call, answer with status through s.answer (the
// bytes an idempotent retry gets back). decode is s.decodeJSON, or a
// stricter decoder for bodies that need one.
func bodyRoute[In, Out any](s *Server, decode func(http.ResponseWriter, *http.Request, any) error, status int,
	call func(r *http.Request, in *In) (Out, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in In
		if err := decode(w, r, &in); err != nil {
			s.writeError(w, r, err)
			return
		}
		out, err := call(r, &in)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.answer(w, status, out)
	}
}
