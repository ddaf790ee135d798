package api

import (
	"context"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
)

// LogStore is what the log routes read from the store: proofs and leaves
// of the one Merkle log (shared/API.md, "Log, checkpoints and witnesses").
type LogStore interface {
	Log() kura.LogHead
	LogOrigin() string
	LogInclusion(ctx context.Context, seq, size int64) (tlog.Hash, tlog.RecordProof, int64, error)
	LogConsistency(ctx context.Context, old, size int64) (tlog.TreeProof, int64, error)
	LogLeaves(ctx context.Context, start, end int64, visible func(*kura.Event) bool) ([]kura.LogLeaf, error)
	LedgerLogSeq(ctx context.Context, ledgerID string) (int64, error)
	SessionHeadLogSeq(ctx context.Context, sessionID string) (int64, error)
	LogLeafData(ctx context.Context, seq int64) ([]byte, error)
}

// LogService signs checkpoints and knows what the witnesses hold
// (internal/checkpoint); nil: the log is off.
type LogService interface {
	Checkpoint() ([]byte, error)
	Cosigned() (string, []kura.CosignedCheckpoint, error)
	VerifierKey() string
	Status() kura.LogStatus
	Acknowledge(ctx context.Context, reason, by string) (string, []kura.LogConflict, error)
}

// logRoutes serve the log to anyone who may read: hashes and sizes say
// nothing of any scope. Leaves carry event ids and projects, so a leaf's
// data follows the feed's scope rule.
func (s *Server) logRoutes() []route {
	return []route{
		{method: http.MethodGet, pattern: "/v1/log/checkpoint", role: auth.RoleReader, serve: s.handleLogCheckpoint},
		{method: http.MethodGet, pattern: "/v1/log/cosigned", role: auth.RoleReader, serve: s.handleLogCosigned},
		{method: http.MethodGet, pattern: "/v1/log/consistency", role: auth.RoleReader, serve: s.handleLogConsistency},
		{method: http.MethodGet, pattern: "/v1/log/inclusion", role: auth.RoleReader, check: inclusionQuery, serve: s.handleLogInclusion},
		{method: http.MethodGet, pattern: "/v1/log/leaves", role: auth.RoleReader, serve: s.handleLogLeaves},
		{method: http.MethodPost, pattern: "/v1/admin/log/acknowledge", role: auth.RoleAdmin, check: needAll, serve: s.handleLogAcknowledge},
	}
}

// logOff answers the log routes of a kurad whose log is off.
func (s *Server) logOff(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.Log == nil {
		s.writeError(w, r, kura.Errorf(kura.EUnavailable, "the log is off on this kurad"))
		return true
	}
	return false
}

func (s *Server) handleLogCheckpoint(w http.ResponseWriter, r *http.Request) {
	if s.logOff(w, r) {
		return
	}
	b, err := s.cfg.Log.Checkpoint()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

type cosignedAnswer struct {
	Origin      string                    `json:"origin"`
	Checkpoints []kura.CosignedCheckpoint `json:"checkpoints"`
}

// handleLogCosigned serves the newest tree each witness cosigned: under
// writes the current checkpoint seldom carries a cosignature (a witness
// cosigns what it fetched a moment ago), so a client that wants a witnessed
// checkpoint takes one of these and checks the current tree extends it.
func (s *Server) handleLogCosigned(w http.ResponseWriter, r *http.Request) {
	if s.logOff(w, r) {
		return
	}
	origin, cps, err := s.cfg.Log.Cosigned()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if cps == nil {
		cps = []kura.CosignedCheckpoint{}
	}
	w.Header().Set("Cache-Control", "no-store")
	s.writeJSON(w, http.StatusOK, cosignedAnswer{Origin: origin, Checkpoints: cps})
}

// queryInt64 reads a non-negative integer query parameter; def when absent.
func queryInt64(r *http.Request, name string, def int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, kura.Invalid(name, "%s must be a non-negative integer", name)
	}
	return n, nil
}

func hashes64[H ~[32]byte](hs []H) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = base64.StdEncoding.EncodeToString(h[:])
	}
	return out
}

type consistencyAnswer struct {
	Old   int64    `json:"old"`
	New   int64    `json:"new"`
	Proof []string `json:"proof"`
}

func (s *Server) handleLogConsistency(w http.ResponseWriter, r *http.Request) {
	if s.logOff(w, r) {
		return
	}
	if r.URL.Query().Get("old") == "" {
		s.writeError(w, r, kura.Invalid("old", "old (the tree size to prove consistency from) is required"))
		return
	}
	old, err := queryInt64(r, "old", 0)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	size, err := queryInt64(r, "new", 0)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if size == 0 && r.URL.Query().Get("new") != "" && old > 0 {
		s.writeError(w, r, kura.Invalid("new", "new must be at least old"))
		return
	}
	p, size, err := s.store.LogConsistency(r.Context(), old, size)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, consistencyAnswer{Old: old, New: size, Proof: hashes64(p)})
}

type inclusionAnswer struct {
	Seq      int64    `json:"seq"`
	Size     int64    `json:"size"`
	LeafHash string   `json:"leaf_hash"`
	Proof    []string `json:"proof"`
	// Leaf is the leaf data, served when the proof was asked for by
	// ledger_id (an export carries it).
	Leaf string `json:"leaf,omitempty"`
}

func (s *Server) handleLogInclusion(w http.ResponseWriter, r *http.Request) {
	if s.logOff(w, r) {
		return
	}
	q := r.URL.Query()
	size, err := queryInt64(r, "size", 0)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	var seq int64
	byLedger, bySession := q.Get("ledger_id"), q.Get("session_id")
	given := 0
	for _, v := range []string{byLedger, bySession, q.Get("seq")} {
		if v != "" {
			given++
		}
	}
	switch {
	case given > 1:
		s.writeError(w, r, kura.Invalid("seq", "give one of seq, ledger_id and session_id"))
		return
	case bySession != "":
		if !kura.ValidID(bySession) {
			s.writeError(w, r, kura.Invalid("session_id", "session_id must be a session id"))
			return
		}
		if seq, err = s.store.SessionHeadLogSeq(ctx, bySession); err != nil {
			s.writeError(w, r, err)
			return
		}
	case byLedger != "":
		if !kura.ValidID(byLedger) {
			s.writeError(w, r, kura.Invalid("ledger_id", "ledger_id must be a ledger id"))
			return
		}
		if seq, err = s.store.LedgerLogSeq(ctx, byLedger); err != nil {
			s.writeError(w, r, err)
			return
		}
	case q.Get("seq") != "":
		if seq, err = queryInt64(r, "seq", 0); err != nil {
			s.writeError(w, r, err)
			return
		}
	default:
		s.writeError(w, r, kura.Invalid("seq", "seq (an event seq), ledger_id or session_id is required"))
		return
	}
	leaf, proof, size, err := s.store.LogInclusion(ctx, seq, size)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	a := inclusionAnswer{Seq: seq, Size: size, LeafHash: base64.StdEncoding.EncodeToString(leaf[:]), Proof: hashes64(proof)}
	if byLedger != "" || bySession != "" {
		data, err := s.store.LogLeafData(ctx, seq)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		a.Leaf = base64.StdEncoding.EncodeToString(data)
	}
	s.writeJSON(w, http.StatusOK, a)
}

// inclusionQuery lets a caller ask for the proof of a ledger it may read
// (the rule of GET /v1/ledgers/{id}, the same 404 for hidden and missing),
// or of the head of a session of its projects (GET /v1/sessions/{id}'s).
func inclusionQuery(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	if id := r.URL.Query().Get("session_id"); kura.ValidID(id) {
		_, _, _, err := s.session(r.Context(), p, id)
		return err
	}
	return s.checkLedgerVisible(r, p, r.URL.Query().Get("ledger_id"))
}

type leafAnswer struct {
	Index    int64  `json:"index"`
	Seq      int64  `json:"seq"`
	LeafHash string `json:"leaf_hash"`
	Data     string `json:"data,omitempty"`
}

type leavesAnswer struct {
	Start  int64        `json:"start"`
	End    int64        `json:"end"`
	Leaves []leafAnswer `json:"leaves"`
}

func (s *Server) handleLogLeaves(w http.ResponseWriter, r *http.Request) {
	if s.logOff(w, r) {
		return
	}
	for _, name := range []string{"start", "end"} {
		if r.URL.Query().Get(name) == "" {
			s.writeError(w, r, kura.Invalid(name, "start and end (leaf indexes, end exclusive) are required"))
			return
		}
	}
	start, err := queryInt64(r, "start", 0)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	end, err := queryInt64(r, "end", 0)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	leaves, err := s.store.LogLeaves(r.Context(), start, end, visibleEvents(auth.FromContext(r.Context())))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	a := leavesAnswer{Start: start, End: end, Leaves: make([]leafAnswer, len(leaves))}
	for i, l := range leaves {
		a.Leaves[i] = leafAnswer{Index: l.Index, Seq: l.Index + 1, LeafHash: base64.StdEncoding.EncodeToString(l.Hash[:])}
		if l.Data != nil {
			a.Leaves[i].Data = base64.StdEncoding.EncodeToString(l.Data)
		}
	}
	s.writeJSON(w, http.StatusOK, a)
}

// visibleEvents is the feed's scope rule (restrictEvents) for one event:
// a scoped event (kura.ScopedEvent) carries its scope as its project,
// every other event a project. nil: the caller sees everything.
func visibleEvents(p auth.Principal) func(*kura.Event) bool {
	if p.AllProjects() && p.AllScopes() {
		return nil
	}
	return func(e *kura.Event) bool {
		if kura.ScopedEvent(e.Type) {
			return p.AllowsScope(e.Project)
		}
		return p.AllowsProject(e.Project)
	}
}

type acknowledgeRequest struct {
	Reason string `json:"reason"`
}

// handleLogAcknowledge is the admin's decision to go on from a database a
// witness contradicts: recorded in the log, under a new origin.
func (s *Server) handleLogAcknowledge(w http.ResponseWriter, r *http.Request) {
	if s.logOff(w, r) {
		return
	}
	var in acknowledgeRequest
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	in.Reason = strings.TrimSpace(in.Reason)
	if in.Reason == "" || len(in.Reason) > 1000 {
		s.writeError(w, r, kura.Invalid("reason", "reason (why going on from this database is right, 1..1000 bytes) is required"))
		return
	}
	origin, acked, err := s.cfg.Log.Acknowledge(r.Context(), in.Reason, auth.FromContext(r.Context()).Identity)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, kura.LogAcknowledged{Origin: origin, Acknowledged: acked})
}
