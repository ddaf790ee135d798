package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/kura-memory/kura/internal/api"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
)

// Handler tests: an api.Server over a small in-memory fake of the store
// interfaces, no SQLite and no kurad. They pin what the route declarations
// promise for each noun: the route is served, its role is enforced, its body
// is decoded once (a body the decoder refuses never reaches the store), its
// answer rule decides the first answer and the replay alike, and a store
// error maps to its status. The end-to-end tests run the same routes on the
// real daemon.

const (
	hWriter = "handler-writer-token"
	hReader = "handler-reader-token"
)

// fakeStore implements the few store methods the handler tests call. The
// embedded api.Store is nil: a call nobody expected panics, which the
// server answers 500, and the test fails on the status.
type fakeStore struct {
	api.Store

	mu      sync.Mutex
	calls   []string
	answers map[string]kura.StoredAnswer // identity \x00 key
	records map[string]bool              // content seen: the second is deduplicated
	fail    error                        // every write answers it when set
}

func newFakeStore() *fakeStore {
	return &fakeStore{answers: map[string]kura.StoredAnswer{}, records: map[string]bool{}}
}

func (f *fakeStore) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// write records a call and, as the real store does in the write's
// transaction, keeps the answer the API's rule gives for v.
func (f *fakeStore) write(name string, opts []kura.WriteOption, v any, created bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
	if f.fail != nil {
		return f.fail
	}
	if idem := kura.ApplyWriteOptions(opts).Idempotency; idem != nil {
		status, body := idem.Answer(v, created)
		f.answers[idem.Identity+"\x00"+idem.Key] = kura.StoredAnswer{Fingerprint: idem.Fingerprint, Status: status, Body: body}
	}
	return nil
}

func (f *fakeStore) LookupIdempotency(_ context.Context, identity, key string) (*kura.StoredAnswer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.answers[identity+"\x00"+key]; ok {
		return &a, nil
	}
	return nil, nil
}

func (f *fakeStore) CreateRecordFor(_ context.Context, in *kura.RecordInput, _ []string, opts ...kura.WriteOption) (*kura.Record, error) {
	f.mu.Lock()
	dup := f.records[string(in.Content)]
	f.records[string(in.Content)] = true
	f.mu.Unlock()
	rec := &kura.Record{ID: "0190f0f0-0000-7000-8000-000000000001", Type: in.Type, AuthorID: in.AuthorID, Content: in.Content, Deduplicated: dup}
	return rec, f.write("CreateRecordFor", opts, rec, !dup)
}

func (f *fakeStore) CreateLedger(_ context.Context, in *kura.LedgerInput, opts ...kura.WriteOption) (*kura.Ledger, error) {
	l := &kura.Ledger{ID: "0190f0f0-0000-7000-8000-000000000002", RecordIDs: in.RecordIDs}
	return l, f.write("CreateLedger", opts, l, true)
}

func (f *fakeStore) CreateSession(_ context.Context, in *kura.SessionInput, opts ...kura.WriteOption) (*kura.Session, error) {
	s := &kura.Session{ID: "0190f0f0-0000-7000-8000-000000000003", Name: in.Name, Project: in.Project, CreatedBy: &in.CreatedBy}
	return s, f.write("CreateSession", opts, s, true)
}

func (f *fakeStore) TurnAccess(context.Context, string) (string, string, error) {
	return "p", "s", nil
}

func (f *fakeStore) ClaimTurn(_ context.Context, id string, in *kura.TurnClaim, opts ...kura.WriteOption) (*kura.Lease, error) {
	l := &kura.Lease{TurnID: id, Worker: in.Worker}
	return l, f.write("ClaimTurn", opts, l, false)
}

func (f *fakeStore) PutNode(_ context.Context, scope string, in *kura.NodeInput, opts ...kura.WriteOption) (*kura.Node, bool, error) {
	n := &kura.Node{Ref: in.Kind + ":" + in.ID, Kind: in.Kind, Title: *in.Title}
	return n, true, f.write("PutNode", opts, n, true)
}

func (f *fakeStore) PutKBEntry(_ context.Context, name string, in *kura.KBEntryInput, opts ...kura.WriteOption) (*kura.KBEntry, bool, error) {
	e := &kura.KBEntry{Identifier: in.Identifier, Value: in.Value}
	return e, true, f.write("PutKBEntry", opts, e, true)
}

func (f *fakeStore) DeleteKBEntry(_ context.Context, name, scope, identifier string, opts ...kura.WriteOption) (int, error) {
	return 1, f.write("DeleteKBEntry", opts, kura.KBDeleted{Deleted: 1}, false)
}

func (f *fakeStore) GetRecord(_ context.Context, id string) (*kura.Record, error) {
	f.mu.Lock()
	f.calls = append(f.calls, "GetRecord")
	f.mu.Unlock()
	return nil, kura.Errorf(kura.ENotFound, "record not found")
}

func (f *fakeStore) ListEvents(_ context.Context, fl kura.EventFilter) (*kura.EventPage, error) {
	f.mu.Lock()
	f.calls = append(f.calls, "ListEvents")
	f.mu.Unlock()
	return &kura.EventPage{}, nil
}

func (f *fakeStore) EventsChanged() <-chan struct{} { return make(chan struct{}) }

// newHandlerServer serves an api.Server over f with two tokens: a writer
// and a reader, both unlimited in scopes and projects.
func newHandlerServer(t *testing.T, f *fakeStore) http.Handler {
	t.Helper()
	h, _ := newHandlerServerTokens(t, f)
	return h
}

func handlerTokens(t *testing.T, writerScopes string) []auth.Entry {
	t.Helper()
	es, err := auth.ParseTokens(strings.NewReader(
		auth.HashToken(hWriter) + " agent:w writer " + writerScopes + " *\n" +
			auth.HashToken(hReader) + " agent:r reader * *\n"))
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func newHandlerServerTokens(t *testing.T, f *fakeStore) (http.Handler, *auth.Table) {
	t.Helper()
	tokens := auth.NewTable(handlerTokens(t, "*"))
	return api.New(api.Config{Tokens: tokens, RecordTypes: []string{"note"}}, f, nil).Handler(), tokens
}

type handlerAnswer struct {
	status   int
	body     []byte
	replayed string
}

func call(h http.Handler, token, method, path, body, key string) handlerAnswer {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, "http://127.0.0.1"+path, rd)
	r.Header.Set("Authorization", "Bearer "+token)
	if body != "" || method != http.MethodGet {
		r.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		r.Header.Set("Idempotency-Key", key)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return handlerAnswer{w.Code, w.Body.Bytes(), w.Header().Get("Idempotent-Replayed")}
}

func errorCode(t *testing.T, b []byte) string {
	t.Helper()
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body %s: %v", b, err)
	}
	return e.Error.Code
}

// handlerWrites are one write route per noun, with a body the route takes
// and the status its answer rule gives a first call.
var handlerWrites = []struct {
	noun, method, path, body string
	store                    string // the fake's method the route calls
	status                   int
}{
	{"record", "POST", "/v1/records", `{"type":"note","author_id":"agent:w","content":{"text":"hi"}}`, "CreateRecordFor", 201},
	{"ledger", "POST", "/v1/ledgers", `{"record_ids":[]}`, "CreateLedger", 201},
	{"session", "POST", "/v1/sessions", `{"name":"main","project":"p"}`, "CreateSession", 201},
	{"turn", "POST", "/v1/turns/0190f0f0-0000-7000-8000-000000000009/claim", `{"worker":"agent:w"}`, "ClaimTurn", 200},
	{"memory", "POST", "/v1/scopes/s/memory/nodes", `{"kind":"fact","id":"f1","title":"sky is blue"}`, "PutNode", 201},
	{"kb", "PUT", "/v1/kb/k/entries", `{"identifier":"a","value":"b"}`, "PutKBEntry", 201},
	{"kb delete", "DELETE", "/v1/kb/k/entries?identifier=a", "", "DeleteKBEntry", 200},
}

func TestHandler_Writes(t *testing.T) {
	t.Parallel()
	for _, tc := range handlerWrites {
		t.Run(tc.noun, func(t *testing.T) {
			t.Parallel()
			t.Run("Served", func(t *testing.T) {
				t.Parallel()
				f := newFakeStore()
				a := call(newHandlerServer(t, f), hWriter, tc.method, tc.path, tc.body, "")
				if a.status != tc.status {
					t.Fatalf("got %d %s, want %d", a.status, a.body, tc.status)
				}
				if got := f.called(); len(got) != 1 || got[0] != tc.store {
					t.Fatalf("store calls %v, want [%s]", got, tc.store)
				}
			})
			t.Run("ReaderRefused", func(t *testing.T) {
				t.Parallel()
				f := newFakeStore()
				a := call(newHandlerServer(t, f), hReader, tc.method, tc.path, tc.body, "")
				if a.status != http.StatusForbidden || errorCode(t, a.body) != kura.EDenied {
					t.Fatalf("got %d %s, want 403 %s", a.status, a.body, kura.EDenied)
				}
				if got := f.called(); len(got) != 0 {
					t.Fatalf("store calls %v, want none", got)
				}
			})
			t.Run("IdempotentReplay", func(t *testing.T) {
				t.Parallel()
				f := newFakeStore()
				h := newHandlerServer(t, f)
				first := call(h, hWriter, tc.method, tc.path, tc.body, "k1")
				again := call(h, hWriter, tc.method, tc.path, tc.body, "k1")
				if first.status != tc.status || first.replayed != "" {
					t.Fatalf("first: got %d (replayed %q), want %d", first.status, first.replayed, tc.status)
				}
				if again.status != first.status || !bytes.Equal(again.body, first.body) || again.replayed != "true" {
					t.Fatalf("replay: got %d %s (replayed %q), want %d %s (replayed true)", again.status, again.body, again.replayed, first.status, first.body)
				}
				if got := f.called(); len(got) != 1 {
					t.Fatalf("store calls %v, want one", got)
				}
				// Another request under the same key is refused, and writes
				// nothing.
				other := call(h, hWriter, tc.method, tc.path+map[bool]string{true: "&x=1", false: "?x=1"}[strings.Contains(tc.path, "?")], tc.body, "k1")
				if other.status != http.StatusConflict {
					t.Fatalf("other request, same key: got %d %s, want 409", other.status, other.body)
				}
			})
			t.Run("StoreError", func(t *testing.T) {
				t.Parallel()
				f := newFakeStore()
				f.fail = kura.Errorf(kura.EConflict, "stale")
				a := call(newHandlerServer(t, f), hWriter, tc.method, tc.path, tc.body, "")
				if a.status != http.StatusConflict || errorCode(t, a.body) != kura.EConflict {
					t.Fatalf("got %d %s, want 409 %s", a.status, a.body, kura.EConflict)
				}
			})
			if tc.body == "" {
				return
			}
			t.Run("BodyRefused", func(t *testing.T) {
				t.Parallel()
				for _, bad := range []struct{ body, want string }{
					{`{"nope":1}`, `"field":"nope"`},
					{`{`, "malformed JSON"},
					{``, "the body is empty"},
				} {
					f := newFakeStore()
					a := call(newHandlerServer(t, f), hWriter, tc.method, tc.path, bad.body, "")
					if a.status != http.StatusBadRequest || errorCode(t, a.body) != kura.EInvalid || !strings.Contains(string(a.body), bad.want) {
						t.Errorf("body %s: got %d %s, want 400 %s", bad.body, a.status, a.body, bad.want)
					}
					if got := f.called(); len(got) != 0 {
						t.Errorf("body %s: store calls %v, want none", bad.body, got)
					}
				}
			})
		})
	}
}

// TestHandler_RecordAnswerRule: POST /v1/records answers 201 for a new
// record and 200 for one that already existed, each replayed as answered.
func TestHandler_RecordAnswerRule(t *testing.T) {
	t.Parallel()
	f := newFakeStore()
	h := newHandlerServer(t, f)
	body := `{"type":"note","author_id":"agent:w","content":{"text":"same"}}`
	for i, want := range []int{201, 200} {
		key := []string{"a", "b"}[i]
		first := call(h, hWriter, "POST", "/v1/records", body, key)
		again := call(h, hWriter, "POST", "/v1/records", body, key)
		if first.status != want || again.status != want || !bytes.Equal(first.body, again.body) || again.replayed != "true" {
			t.Fatalf("call %d: got %d then %d (replayed %q), want %d twice", i, first.status, again.status, again.replayed, want)
		}
	}
}

// TestHandler_BodyCheckAfterDecode: the author binding sees the decoded
// body; a writer writing as another author is refused before the store.
func TestHandler_BodyCheckAfterDecode(t *testing.T) {
	t.Parallel()
	f := newFakeStore()
	a := call(newHandlerServer(t, f), hWriter, "POST", "/v1/records", `{"type":"note","author_id":"agent:other","content":{}}`, "")
	if a.status != http.StatusForbidden || !strings.Contains(string(a.body), "may write only under its own identity") {
		t.Fatalf("got %d %s, want 403 author binding", a.status, a.body)
	}
	if got := f.called(); len(got) != 0 {
		t.Fatalf("store calls %v, want none", got)
	}
}

// TestHandler_Unauthenticated: without a token a declared route is 401, an
// open one is served.
func TestHandler_Unauthenticated(t *testing.T) {
	t.Parallel()
	h := newHandlerServer(t, newFakeStore())
	if a := call(h, "", "POST", "/v1/records", `{}`, ""); a.status != http.StatusUnauthorized {
		t.Fatalf("no token: got %d %s, want 401", a.status, a.body)
	}
	if a := call(h, "", "GET", "/healthz", "", ""); a.status != http.StatusOK {
		t.Fatalf("/healthz: got %d %s, want 200", a.status, a.body)
	}
}

// TestHandler_Reads: a reader is served, a query the route refuses never
// reaches the store, and a store error maps to its status.
func TestHandler_Reads(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, path string
		status     int
		code       string
		calls      int
	}{
		{"EventsServed", "/v1/events", 200, "", 1},
		{"EventsBadQuery", "/v1/events?after=-1", 400, kura.EInvalid, 0},
		{"RecordNotFound", "/v1/records/0190f0f0-0000-7000-8000-00000000000a", 404, kura.ENotFound, 1},
		{"RecordBadID", "/v1/records/nope", 400, kura.EInvalid, 0},
		{"NoRoute", "/v1/nope", 404, kura.ENotFound, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeStore()
			a := call(newHandlerServer(t, f), hReader, "GET", tc.path, "", "")
			if a.status != tc.status || (tc.code != "" && errorCode(t, a.body) != tc.code) {
				t.Fatalf("got %d %s, want %d %s", a.status, a.body, tc.status, tc.code)
			}
			if got := f.called(); len(got) != tc.calls {
				t.Fatalf("store calls %v, want %d", got, tc.calls)
			}
		})
	}
}

// TestHandler_ReplayRechecksBody: a stored answer is not given out to a
// caller the route's body check now refuses (its token lost the scope the
// body names), though the replay answers before the body is decoded for a
// call.
func TestHandler_ReplayRechecksBody(t *testing.T) {
	t.Parallel()
	f := newFakeStore()
	h, tokens := newHandlerServerTokens(t, f)
	body := `{"scope":"a","identifier":"x","value":"y"}`
	if a := call(h, hWriter, "PUT", "/v1/kb/k/entries", body, "k1"); a.status != http.StatusCreated {
		t.Fatalf("first: got %d %s, want 201", a.status, a.body)
	}
	tokens.Replace(handlerTokens(t, "b"))
	a := call(h, hWriter, "PUT", "/v1/kb/k/entries", body, "k1")
	if a.status != http.StatusForbidden || a.replayed != "" {
		t.Fatalf("replay after the scope was revoked: got %d %s (replayed %q), want 403", a.status, a.body, a.replayed)
	}
	if got := f.called(); len(got) != 1 {
		t.Fatalf("store calls %v, want one", got)
	}
}

// TestHandler_InternalErrorLogged: a store error the store itself names
// internal (a broken schema constraint) answers 500 with its message, and
// its cause goes to the log with the request, never into the answer.
func TestHandler_InternalErrorLogged(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	f := newFakeStore()
	f.fail = &kura.Error{Code: kura.EInternal, Message: "internal error: a write broke a constraint of the schema",
		Cause: errors.New("NOT NULL constraint failed: secret_table.secret_column")}
	h := api.New(api.Config{Tokens: auth.NewTable(handlerTokens(t, "*")), RecordTypes: []string{"note"},
		Logger: slog.New(slog.NewTextHandler(&log, nil))}, f, nil).Handler()
	a := call(h, hWriter, "POST", "/v1/records", `{"type":"note","author_id":"agent:w","content":{"text":"hi"}}`, "")
	if a.status != http.StatusInternalServerError || errorCode(t, a.body) != kura.EInternal {
		t.Fatalf("got %d %s, want 500 %s", a.status, a.body, kura.EInternal)
	}
	if strings.Contains(string(a.body), "secret_column") {
		t.Errorf("answer %s carries the cause", a.body)
	}
	if got := log.String(); !strings.Contains(got, "secret_table.secret_column") || !strings.Contains(got, "path=/v1/records") {
		t.Errorf("log %q: want the cause and the path", got)
	}
}
