package api

import (
	"encoding/base64"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
)

func (s *Server) registerRecordRoutes(r chi.Router) {
	r.Post("/records", s.idempotent(s.handleRecordCreate))
	r.Post("/records/batch", s.idempotent(s.handleRecordBatch))
	r.Get("/records", s.handleRecordList)
	r.Get("/records/by-hash/{hash}", s.handleRecordByHash)
	r.Get("/records/{id}", s.handleRecordGet)
}

func (s *Server) handleRecordCreate(w http.ResponseWriter, r *http.Request) {
	var in kura.RecordInput
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	rec, err := s.store.CreateRecord(r.Context(), &in, keep(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.answer(w, recordStatus(rec), rec)
}

func (s *Server) handleRecordBatch(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Records []kura.RecordInput `json:"records"`
	}
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	recs, err := s.store.CreateRecords(r.Context(), in.Records, keep(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.answer(w, http.StatusCreated, recs)
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

// recordStatus is 201 for a new record, 200 for an existing one.
func recordStatus(r *kura.Record) int {
	if r.Deduplicated {
		return http.StatusOK
	}
	return http.StatusCreated
}
