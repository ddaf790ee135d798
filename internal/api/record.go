package api

import (
	"context"
	"encoding/base64"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
)

// RecordStore is what the record routes need from the store.
type RecordStore interface {
	// CreateRecordFor and CreateRecordsFor write records for a caller
	// limited to projects (nil: all), which decide where a record naming no
	// project rings (kura.RecordEventProject).
	CreateRecordFor(ctx context.Context, in *kura.RecordInput, projects []string, opts ...kura.WriteOption) (*kura.Record, error)
	CreateRecordsFor(ctx context.Context, ins []kura.RecordInput, projects []string, opts ...kura.WriteOption) ([]kura.Record, error)
	GetRecord(ctx context.Context, id string) (*kura.Record, error)
	GetRecordByHash(ctx context.Context, hash string) (*kura.Record, error)
	ListRecords(ctx context.Context, f kura.RecordFilter) ([]kura.Record, string, error)
}

func (s *Server) recordRoutes() []route {
	return []route{
		bodyRoute[kura.RecordInput, *kura.Record]{
			method: http.MethodPost, pattern: "/v1/records", role: auth.RoleWriter,
			body: checkRecordInput, answer: answerNew,
			call: func(r *http.Request, in *kura.RecordInput, keep kura.WriteOption) (*kura.Record, bool, error) {
				rec, err := s.store.CreateRecordFor(r.Context(), in, eventProjects(r), keep)
				return rec, err == nil && !rec.Deduplicated, err
			},
		}.route(s),
		bodyRoute[recordBatch, []kura.Record]{
			method: http.MethodPost, pattern: "/v1/records/batch", role: auth.RoleWriter,
			body: checkRecordBatch, answer: answer201,
			call: func(r *http.Request, in *recordBatch, keep kura.WriteOption) ([]kura.Record, bool, error) {
				recs, err := s.store.CreateRecordsFor(r.Context(), in.Records, eventProjects(r), keep)
				return recs, true, err
			},
		}.route(s),
		{method: http.MethodGet, pattern: "/v1/records", role: auth.RoleReader, check: checkRecordList, serve: s.handleRecordList},
		{method: http.MethodGet, pattern: "/v1/records/by-hash/{hash}", role: auth.RoleReader, check: checkRecordHash, serve: s.handleRecordByHash},
		{method: http.MethodGet, pattern: "/v1/records/{id}", role: auth.RoleReader, check: recordParam("id"), serve: s.handleRecordGet},
	}
}

func (s *Server) handleRecordGet(w http.ResponseWriter, r *http.Request) {
	rec, err := s.store.GetRecord(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeRecord(w, http.StatusOK, rec)
}

func (s *Server) handleRecordByHash(w http.ResponseWriter, r *http.Request) {
	rec, err := s.store.GetRecordByHash(r.Context(), chi.URLParam(r, "hash"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeRecord(w, http.StatusOK, rec)
}

func (s *Server) handleRecordList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := kura.RecordFilter{Type: q.Get("type"), AuthorID: q.Get("author_id")}
	var err error
	if f.Limit, err = parseLimit(q.Get("limit")); err != nil {
		s.writeError(w, r, err)
		return
	}
	for _, p := range []struct {
		name string
		dst  *string
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := q.Get(p.name); v != "" {
			t, err := kura.ParseTime(v)
			if err != nil {
				s.writeError(w, r, kura.Invalid(p.name, "%s must be an RFC 3339 time", p.name))
				return
			}
			*p.dst = kura.FormatTime(t)
		}
	}
	if f.AuthorID != "" && !kura.ValidAuthorID(f.AuthorID) {
		s.writeError(w, r, kura.CheckAuthorID("author_id", f.AuthorID, "the author to list"))
		return
	}
	if c := q.Get("cursor"); c != "" {
		id, err := decodeCursor(c, "r")
		if err != nil || !kura.ValidID(id) {
			s.writeError(w, r, kura.Invalid("cursor", "cursor is not one this server handed out"))
			return
		}
		f.After = id
	}
	// Memory kurad packed from scopes the caller does not hold is left out.
	f.Scopes = readerOf(auth.FromContext(r.Context())).Scopes
	recs, next, err := s.store.ListRecords(r.Context(), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	cursor := ""
	if next != "" {
		cursor = encodeCursor("r", next)
	}
	s.writeRecords(w, http.StatusOK, recs, cursor)
}

// parseLimit reads ?limit= (default 100, 1..1000).
func parseLimit(v string) (int, error) {
	if v == "" {
		return 100, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1000 {
		return 0, kura.Invalid("limit", "limit must be an integer from 1 to 1000")
	}
	return n, nil
}

// Cursors are opaque to clients: a kind letter and a position, base64url.
// The kind keeps a cursor from one listing from being replayed on another.
func encodeCursor(kind, v string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + ":" + v))
}

func decodeCursor(c, kind string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < len(kind)+1 || string(b[:len(kind)+1]) != kind+":" {
		return "", kura.Invalid("cursor", "bad cursor")
	}
	return string(b[len(kind)+1:]), nil
}

type recordBatch struct {
	Records []kura.RecordInput `json:"records"`
}

func recordAuthors(ins []kura.RecordInput) []string {
	out := make([]string, len(ins))
	for i := range ins {
		out[i] = ins[i].AuthorID
	}
	return out
}

// recordProject: a record written outside a turn sends its event to
// the project its metadata.project_id names (the feed and the NATS
// subject), so the token must hold that project. Inside a turn the
// session's project is used whatever the metadata says. A record naming
// no project rings in a project the token holds too: eventProjects.
func recordProject(s *Server, r *http.Request, p auth.Principal, in *kura.RecordInput) error {
	if pid := in.Metadata["project_id"]; kura.ValidSlug(pid) && !p.AllowsProject(pid) {
		return denied("metadata.project_id %s is outside the token's projects (the record's event would go to that project)", pid)
	}
	return nil
}

// eventProjects is the caller's projects as the store takes them to
// decide the event project of a record naming none: nil for a token with
// projects *, which may ring in the default project, as before.
func eventProjects(r *http.Request) []string {
	p := auth.FromContext(r.Context())
	if p.AllProjects() {
		return nil
	}
	return append([]string{}, p.Projects...)
}

func checkRecordInput(s *Server, r *http.Request, p auth.Principal, in *kura.RecordInput) error {
	if err := checkRecordAuthors(p, "author_id", []string{in.AuthorID}); err != nil {
		return err
	}
	return recordProject(s, r, p, in)
}

func checkRecordBatch(s *Server, r *http.Request, p auth.Principal, in *recordBatch) error {
	if err := checkRecordAuthors(p, "author_id", recordAuthors(in.Records)); err != nil {
		return err
	}
	for i := range in.Records {
		if err := recordProject(s, r, p, &in.Records[i]); err != nil {
			return err
		}
	}
	return nil
}

func recordParam(name string) accessCheck {
	return func(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
		id := rc.URLParam(name)
		if !kura.ValidID(id) {
			return nil // the handler answers 400, the same for everyone
		}
		ok, err := s.recordVisible(r.Context(), p, id)
		if err == nil && !ok {
			err = kura.Errorf(kura.ENotFound, "record not found")
		}
		return err
	}
}

func checkRecordHash(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	h := rc.URLParam("hash")
	if readerOf(p).Unlimited() || !kura.ValidHash(h) {
		return nil
	}
	id, err := s.access().RecordIDByHash(r.Context(), h)
	if err != nil {
		return err
	}
	ok := false
	if id != "" {
		if ok, err = s.recordVisible(r.Context(), p, id); err != nil {
			return err
		}
	}
	if !ok {
		return kura.Errorf(kura.ENotFound, "record not found")
	}
	return nil
}

// checkRecordList: a project-restricted caller lists only the records it
// wrote (the listing has no project to filter by); it may not name another
// author.
func checkRecordList(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	if !restricted(p) {
		return nil
	}
	q := r.URL.Query()
	switch a := q.Get("author_id"); a {
	case p.Identity:
	case "":
		q.Set("author_id", p.Identity)
		r.URL.RawQuery = q.Encode()
	default:
		return denied("%s is limited to projects and lists only the records it wrote (author_id=%s)", p.Identity, p.Identity)
	}
	return nil
}
