package api

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kb"
	"github.com/kura-memory/kura/internal/kura"
)

// KBStore is what the knowledge-base routes need from the store.
type KBStore interface {
	PutKBEntry(ctx context.Context, name string, in *kura.KBEntryInput, opts ...kura.WriteOption) (*kura.KBEntry, bool, error)
	PutKBEntries(ctx context.Context, name string, ins []kura.KBEntryInput, opts ...kura.WriteOption) (*kura.KBBatch, error)
	UpdateKBEntry(ctx context.Context, name string, p *kura.KBPatch, opts ...kura.WriteOption) (*kura.KBEntry, error)
	DeleteKBEntry(ctx context.Context, name, scope, identifier string, opts ...kura.WriteOption) (int, error)
	ClearKB(ctx context.Context, name, scope string, opts ...kura.WriteOption) (int, error)
	QueryKB(ctx context.Context, name string, q kura.KBQuery) (*kura.KBPage, error)
	SearchKB(ctx context.Context, name string, q kura.KBSearch) (*kura.KBSearchPage, error)
	LookupKB(ctx context.Context, name string, l kura.KBLookup) (*kura.KBLookupResult, error)
	KBStats(ctx context.Context, name, scope string, after int64, limit int) (*kura.KBStats, error)
	KBHistory(ctx context.Context, name, scope, identifier string, after, limit int) (*kura.KBHistory, error)
}

// Bounds on query parameters. A query is a handful of index probes, one
// per word or key, so these bound its cost; they are far above anything
// an identifier or a key list can hold.
const (
	maxKBQueryText = 4 * kura.MaxKBIdentifier // characters of identifier= and lookup's q
	maxKBQueryKeys = 8 * kura.MaxKBKeys       // keys in any_keys or all_keys
)

func (s *Server) kbRoutes() []route {
	const prefix = "/v1/kb/{kb}"
	read := func(pattern string, h http.HandlerFunc) route {
		return route{method: http.MethodGet, pattern: prefix + pattern, role: auth.RoleReader, check: kbQueryScope, serve: h}
	}
	return []route{
		bodyRoute[kura.KBEntryInput, *kura.KBEntry]{
			method: http.MethodPut, pattern: prefix + "/entries", role: auth.RoleWriter,
			decode: s.decodeKB, answer: answerNew,
			body: func(s *Server, r *http.Request, p auth.Principal, in *kura.KBEntryInput) error {
				return kbAllows(p, []string{in.Scope})
			},
			call: func(r *http.Request, in *kura.KBEntryInput, keep kura.WriteOption) (*kura.KBEntry, bool, error) {
				return s.store.PutKBEntry(r.Context(), chi.URLParam(r, "kb"), in, keep)
			},
		}.route(s),
		bodyRoute[kura.KBBatchInput, *kura.KBBatch]{
			method: http.MethodPut, pattern: prefix + "/entries/batch", role: auth.RoleWriter,
			decode: s.decodeKB, answer: answer200,
			body: func(s *Server, r *http.Request, p auth.Principal, in *kura.KBBatchInput) error {
				return kbAllows(p, kbBatchScopes(in))
			},
			call: func(r *http.Request, in *kura.KBBatchInput, keep kura.WriteOption) (*kura.KBBatch, bool, error) {
				b, err := s.store.PutKBEntries(r.Context(), chi.URLParam(r, "kb"), in.Entries, keep)
				return b, false, err
			},
		}.route(s),
		read("/entries", s.handleKBQuery),
		bodyRoute[kura.KBPatch, *kura.KBEntry]{
			method: http.MethodPatch, pattern: prefix + "/entries", role: auth.RoleWriter,
			decode: s.decodeKB, answer: answer200,
			body: func(s *Server, r *http.Request, p auth.Principal, in *kura.KBPatch) error {
				return kbAllows(p, []string{in.Scope})
			},
			call: func(r *http.Request, in *kura.KBPatch, keep kura.WriteOption) (*kura.KBEntry, bool, error) {
				e, err := s.store.UpdateKBEntry(r.Context(), chi.URLParam(r, "kb"), in, keep)
				return e, false, err
			},
		}.route(s),
		// DELETE names what it removes in the query: no body to decode.
		bodyRoute[struct{}, kura.KBDeleted]{
			method: http.MethodDelete, pattern: prefix + "/entries", role: auth.RoleWriter,
			check: kbQueryScope, decode: noBody, answer: answer200,
			call: func(r *http.Request, _ *struct{}, keep kura.WriteOption) (kura.KBDeleted, bool, error) {
				n, err := s.deleteKB(r, keep)
				return kura.KBDeleted{Deleted: n}, false, err
			},
		}.route(s),
		read("/stats", s.handleKBStats),
		read("/history", s.handleKBHistory),
		read("/lookup", s.handleKBLookup),
		read("/search", s.handleKBSearch),
	}
}

// decodeKB is decodeJSON for knowledge-base bodies, which must be valid
// UTF-8 without lone surrogate escapes: encoding/json would quietly turn
// either into U+FFFD, and an identifier is matched byte for byte, so a
// stored identifier that differs from the one sent could never be
// addressed by what the client holds.
func (s *Server) decodeKB(w http.ResponseWriter, r *http.Request, v any) error {
	var raw bytes.Buffer
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(r.Body, &raw), r.Body}
	if err := s.decodeJSON(w, r, v); err != nil {
		return err
	}
	if !utf8.Valid(raw.Bytes()) {
		return kura.Invalid("", "the body is not valid UTF-8")
	}
	if loneSurrogate(raw.Bytes()) {
		return kura.Invalid("", "the body holds a \\u escape of a lone UTF-16 surrogate, which is not a character")
	}
	return nil
}

// loneSurrogate reports whether JSON text b escapes a UTF-16 surrogate
// that is not half of a pair (\ud83d\ude80 is one character; \ud83d alone
// is none). Escapes occur only inside strings, and "\\" is consumed whole,
// so "\\ud83d" (a backslash, then text) is not mistaken for one.
func loneSurrogate(b []byte) bool {
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
		return rune(n), err == nil
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' {
			i++ // an escape of one character, "\\" included
			continue
		}
		r, ok := hex4(i)
		if !ok {
			continue
		}
		switch {
		case r >= 0xdc00 && r <= 0xdfff:
			return true // a low half with no high half before it
		case r >= 0xd800 && r <= 0xdbff:
			if lo, ok := hex4(i + 6); !ok || lo < 0xdc00 || lo > 0xdfff {
				return true
			}
			i += 11 // the pair
		default:
			i += 5
		}
	}
	return false
}

// kbQuery reads the query parameters of the knowledge-base routes. Every
// value must be valid UTF-8 (a query string may carry any byte), and a
// parameter that takes one value may be given once.
type kbQuery struct{ v url.Values }

func (q kbQuery) one(name string) (string, bool, error) {
	vs, ok := q.v[name]
	if !ok {
		return "", false, nil
	}
	if len(vs) > 1 {
		return "", false, kura.Invalid(name, "%s is given %d times; give it once", name, len(vs))
	}
	if !utf8.ValidString(vs[0]) {
		return "", false, kura.Invalid(name, "%s is not valid UTF-8", name)
	}
	return vs[0], true, nil
}

func (q kbQuery) scope() (string, error) {
	v, _, err := q.one("scope")
	if err == nil && !kura.ValidKBScope(v) {
		err = kura.Invalid("scope", "scope must be empty (the default scope) or a slug (lowercase letters, digits, - and _)")
	}
	return v, err
}

// text reads identifier= or q=: at most maxKBQueryText characters.
func (q kbQuery) text(name string) (*string, error) {
	v, ok, err := q.one(name)
	if err != nil || !ok {
		return nil, err
	}
	if n := utf8.RuneCountInString(v); n > maxKBQueryText {
		return nil, kura.Invalid(name, "%s has %d characters, at most %d allowed", name, n, maxKBQueryText)
	}
	return &v, nil
}

// keys reads any_keys= or all_keys=: comma-separated when given once
// (any_keys=a,b is "a" and "b"); when repeated, each value is one key, so
// a key holding a comma can be asked for (any_keys=a,b&any_keys=c is "a,b"
// and "c"). Empty keys are refused: no entry has one.
func (q kbQuery) keys(name string) ([]string, error) {
	vs, ok := q.v[name]
	if !ok {
		return nil, nil
	}
	if len(vs) == 1 {
		vs = strings.Split(vs[0], ",")
	}
	if len(vs) > maxKBQueryKeys {
		return nil, kura.Invalid(name, "%s names %d keys, at most %d allowed", name, len(vs), maxKBQueryKeys)
	}
	for i, k := range vs {
		if k == "" {
			return nil, kura.Invalid(name, "%s holds an empty key (key %d); keys are never empty", name, i+1)
		}
		if !utf8.ValidString(k) {
			return nil, kura.Invalid(name, "%s is not valid UTF-8", name)
		}
	}
	return vs, nil
}

// page reads limit and cursor; kind keeps one listing's cursor out of
// another.
func (q kbQuery) page(kind string) (limit int, after int64, err error) {
	if limit, err = parseLimit(q.v.Get("limit")); err != nil {
		return 0, 0, err
	}
	if c := q.v.Get("cursor"); c != "" {
		v, err := decodeCursor(c, kind)
		if after, _ = strconv.ParseInt(v, 10, 64); err != nil || after <= 0 {
			return 0, 0, kura.Invalid("cursor", "cursor is not one this server handed out")
		}
	}
	return limit, after, nil
}

func (s *Server) handleKBQuery(w http.ResponseWriter, r *http.Request) {
	q := kbQuery{r.URL.Query()}
	var f kura.KBQuery
	var err error
	fail := func(e error) bool {
		if e != nil {
			s.writeError(w, r, e)
			return true
		}
		return false
	}
	if f.Scope, err = q.scope(); fail(err) {
		return
	}
	if f.Identifier, err = q.text("identifier"); fail(err) {
		return
	}
	if v, ok, err := q.one("exact_identifier"); fail(err) {
		return
	} else if ok {
		f.ExactIdentifier = &v
	}
	if v, ok, err := q.one("key"); fail(err) {
		return
	} else if ok {
		if v == "" {
			fail(kura.Invalid("key", "key is empty; keys are never empty"))
			return
		}
		f.Key = &v
	}
	if f.AnyKeys, err = q.keys("any_keys"); fail(err) {
		return
	}
	if f.AllKeys, err = q.keys("all_keys"); fail(err) {
		return
	}
	if f.Limit, f.After, err = q.page("k"); fail(err) {
		return
	}
	page, err := s.store.QueryKB(r.Context(), chi.URLParam(r, "kb"), f)
	if fail(err) {
		return
	}
	if page.NextCursor != "" {
		page.NextCursor = encodeCursor("k", page.NextCursor)
	}
	s.writeJSON(w, http.StatusOK, page)
}

// deleteKB is DELETE /v1/kb/{kb}/entries: one entry by identifier, or
// every entry of a scope with all=true.
func (s *Server) deleteKB(r *http.Request, keep kura.WriteOption) (int, error) {
	q := kbQuery{r.URL.Query()}
	scope, err := q.scope()
	if err != nil {
		return 0, err
	}
	all, _, err := q.one("all")
	if err != nil {
		return 0, err
	}
	if all != "" && all != "true" && all != "false" {
		return 0, kura.Invalid("all", "all must be true or false")
	}
	identifier, named, err := q.one("identifier")
	if err != nil {
		return 0, err
	}
	name := chi.URLParam(r, "kb")
	switch {
	case all == "true" && named:
		return 0, kura.Invalid("all", "all=true clears the whole scope; it does not go with identifier")
	case all == "true":
		return s.store.ClearKB(r.Context(), name, scope, keep)
	case !named:
		return 0, kura.Invalid("identifier", "identifier is required (or all=true to clear the scope)")
	}
	return s.store.DeleteKBEntry(r.Context(), name, scope, identifier, keep)
}

func (s *Server) handleKBStats(w http.ResponseWriter, r *http.Request) {
	q := kbQuery{r.URL.Query()}
	scope, err := q.scope()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	limit, after, err := q.page("i")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	st, err := s.store.KBStats(r.Context(), chi.URLParam(r, "kb"), scope, after, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if st.NextCursor != "" {
		st.NextCursor = encodeCursor("i", st.NextCursor)
	}
	s.writeJSON(w, http.StatusOK, st)
}

func (s *Server) handleKBHistory(w http.ResponseWriter, r *http.Request) {
	q := kbQuery{r.URL.Query()}
	scope, err := q.scope()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	identifier, _, err := q.one("identifier")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	limit, after, err := q.page("h")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h, err := s.store.KBHistory(r.Context(), chi.URLParam(r, "kb"), scope, identifier, int(after), limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if h.NextCursor != "" {
		h.NextCursor = encodeCursor("h", h.NextCursor)
	}
	s.writeJSON(w, http.StatusOK, h)
}

// question reads q=, the question of lookup and search: required, not
// blank (an empty question is a bridge's bug, not a request for
// everything), at most maxKBQueryText characters.
func (q kbQuery) question() (string, error) {
	text, err := q.text("q")
	if err != nil {
		return "", err
	}
	if text == nil || strings.TrimSpace(*text) == "" {
		return "", kura.Invalid("q", "q (the question) is required")
	}
	return *text, nil
}

// kbQuestion reads what a lookup and a search share: scope, q and limit,
// with the route's own parameters (more, when not nil) read before limit,
// the order their errors have always been reported in.
func kbQuestion(q kbQuery, more func() error) (scope, question string, limit int, err error) {
	if scope, err = q.scope(); err != nil {
		return
	}
	if question, err = q.question(); err != nil {
		return
	}
	if more != nil {
		if err = more(); err != nil {
			return
		}
	}
	limit, err = parseLimit(q.v.Get("limit"))
	return
}

// handleKBLookup is the model-facing read: plain text a tool bridge hands
// a model as it is (see kb.FormatLookup), never JSON. Errors keep the
// JSON error body, so a bridge can tell a refusal from an answer.
func (s *Server) handleKBLookup(w http.ResponseWriter, r *http.Request) {
	q := kbQuery{r.URL.Query()}
	var l kura.KBLookup
	var err error
	mode := func() error {
		var err error
		if l.Mode, _, err = q.one("mode"); err == nil && !kura.ValidKBLookupMode(l.Mode) {
			err = kura.Invalid("mode", "mode must be ranked (the default: strict matches first, then the best-ranked others) or strict")
		}
		return err
	}
	if l.Scope, l.Q, l.Limit, err = kbQuestion(q, mode); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.store.LookupKB(r.Context(), chi.URLParam(r, "kb"), l)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ranked := make([]kura.KBEntry, len(res.Ranked))
	for i := range res.Ranked {
		ranked[i] = res.Ranked[i].KBEntry
	}
	out := kb.FormatRankedLookup(l.Q, res.Strict, res.Count-len(res.Strict), ranked)
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	h.Set("X-Kura-Matches", strconv.Itoa(res.Count))
	h.Set("X-Kura-Ranked", strconv.Itoa(len(ranked)))
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, out)
}

// handleKBSearch ranks a scope's entries for a question in any words:
// JSON, best first, each entry with its score and what matched.
func (s *Server) handleKBSearch(w http.ResponseWriter, r *http.Request) {
	var f kura.KBSearch
	var err error
	if f.Scope, f.Q, f.Limit, err = kbQuestion(kbQuery{r.URL.Query()}, nil); err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.store.SearchKB(r.Context(), chi.URLParam(r, "kb"), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, page)
}

// KB scopes: the default scope "" is checked as the name "default".
func kbScopeName(s string) string { return kura.KBScopeName(s) }

func kbAllows(p auth.Principal, scopes []string) error {
	for _, sc := range scopes {
		if !kura.ValidKBScope(sc) {
			continue
		}
		if !p.AllowsScope(kbScopeName(sc)) {
			return denied("knowledge-base scope %s is outside the token's scopes", kbScopeName(sc))
		}
	}
	return nil
}

func kbQueryScope(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	vs := r.URL.Query()["scope"]
	if len(vs) > 1 {
		return nil // the handler refuses a repeated scope
	}
	sc := ""
	if len(vs) == 1 {
		sc = vs[0]
	}
	return kbAllows(p, []string{sc})
}

func kbBatchScopes(in *kura.KBBatchInput) []string {
	out := make([]string, len(in.Entries))
	for i := range in.Entries {
		out[i] = in.Entries[i].Scope
	}
	return out
}
