package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// TestClient_ErrorDecoding serves canned error answers: the shapes a proxy
// or a broken daemon can produce cannot be provoked from a real kurad, and
// this server stands in for nothing else (the API itself is tested against
// the real daemon in e2e_test.go).
func TestClient_ErrorDecoding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		status      int
		body        string
		wantCode    string
		wantMessage string // substring
	}{
		{"ErrorBody", 404, `{"error":{"code":"not_found","message":"record 1 not found","details":{"id":"1"}}}`, "not_found", "record 1 not found"},
		{"ErrorBodyUnknownCode", 418, `{"error":{"code":"teapot","message":"short and stout"}}`, "teapot", "short and stout"},
		{"HTML", 502, `<html><body>Bad Gateway</body></html>`, "internal", "502 Bad Gateway"},
		{"Empty", 503, ``, "internal", "503 Service Unavailable"},
		{"OtherJSON", 500, `{"message":"boom"}`, "internal", "500 Internal Server Error"},
		{"NoCode", 400, `{"error":{"message":"no code"}}`, "internal", "400 Bad Request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			_, err := client.New(srv.URL).GetRecord(context.Background(), "0193a000-0000-7000-8000-000000000000")
			var e *client.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %T (%v), want *client.Error", err, err)
			}
			if e.Code != tt.wantCode || !strings.Contains(e.Message, tt.wantMessage) {
				t.Errorf("got %q %q, want %q containing %q", e.Code, e.Message, tt.wantCode, tt.wantMessage)
			}
		})
	}
	t.Run("Details", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"error":{"code":"invalid_argument","message":"missing","details":{"missing":["a","b"]}}}`))
		}))
		defer srv.Close()
		_, err := client.New(srv.URL).CreateLedger(context.Background(), client.LedgerInput{})
		if !client.IsCode(err, client.EInvalid) {
			t.Fatalf("got %v, want invalid_argument", err)
		}
		var e *client.Error
		errors.As(err, &e)
		b, _ := json.Marshal(e.Details["missing"])
		if string(b) != `["a","b"]` {
			t.Errorf("got details.missing %s, want [\"a\",\"b\"]", b)
		}
	})
}

// TestClient_TransportError checks that a daemon that is not there gives a
// wrapped transport error naming the operation, not a fake server error.
func TestClient_TransportError(t *testing.T) {
	t.Parallel()
	err := client.New("http://" + kuradtest.FreeAddr(t)).Health(context.Background())
	if err == nil {
		t.Fatal("got nil, want an error")
	}
	var e *client.Error
	if errors.As(err, &e) {
		t.Errorf("got *client.Error %v, want a transport error", e)
	}
	if !strings.HasPrefix(err.Error(), "health: ") {
		t.Errorf("got %q, want it to start with the operation", err)
	}
}

// TestClient_MissingID checks that an empty id fails before any request:
// it would otherwise address the collection route.
func TestClient_MissingID(t *testing.T) {
	t.Parallel()
	c := client.New("http://127.0.0.1:1") // nothing must be dialed
	ctx := context.Background()
	checks := map[string]error{}
	_, checks["GetRecord"] = c.GetRecord(ctx, "")
	_, checks["GetRecordByHash"] = c.GetRecordByHash(ctx, " ")
	_, checks["GetLedger"] = c.GetLedger(ctx, "")
	_, checks["LedgerRecords"] = c.LedgerRecords(ctx, "", 0, "")
	_, checks["VerifyLedger"] = c.VerifyLedger(ctx, "")
	_, checks["Diff"] = c.Diff(ctx, "a", "")
	_, checks["Proof"] = c.Proof(ctx, "a", "")
	_, checks["GetSession"] = c.GetSession(ctx, "")
	_, checks["FindSession"] = c.FindSession(ctx, "p", "")
	_, checks["SessionLog"] = c.SessionLog(ctx, "", 0)
	_, checks["Reflog"] = c.Reflog(ctx, "")
	_, checks["MoveHead"] = c.MoveHead(ctx, "", client.HeadMove{LedgerID: "a"})
	_, checks["VerifySession"] = c.VerifySession(ctx, "", "")
	_, checks["Ancestry"] = c.Ancestry(ctx, "")
	_, checks["OpenTurn"] = c.OpenTurn(ctx, "", client.TurnOpenInput{})
	_, checks["ClaimTurn"] = c.ClaimTurn(ctx, "", client.TurnClaim{})
	_, checks["RenewTurn"] = c.RenewTurn(ctx, "", client.TurnRenew{})
	_, checks["AppendTurn"] = c.AppendTurn(ctx, "", client.TurnAppend{})
	_, checks["CloseTurn"] = c.CloseTurn(ctx, "", client.TurnClose{})
	_, checks["GetTurn"] = c.GetTurn(ctx, "")
	_, checks["LongIdempotencyKey"] = c.Import(client.WithIdempotencyKey(ctx, strings.Repeat("k", client.MaxIdempotencyKey+1)), client.ImportInput{})
	for name, err := range checks {
		if !client.IsCode(err, client.EInvalid) {
			t.Errorf("%s: got %v, want invalid_argument", name, err)
		}
	}
}

// TestClient_Requests checks what goes on the wire: the contract's shapes
// for record refs and optional fields (a record_id alone, not next to the
// zero fields of a record input), query strings, and the Idempotency-Key
// header on writes only. A stand-in server records the requests; the real
// daemon would accept several shapes and hide the difference.
func TestClient_Requests(t *testing.T) {
	t.Parallel()
	type seen struct{ method, uri, key, body string }
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, seen{r.Method, r.URL.RequestURI(), r.Header.Get("Idempotency-Key"), strings.TrimSpace(string(b))})
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c := client.New(srv.URL)
	ctx := client.WithIdempotencyKey(context.Background(), "k-1")
	epoch := int64(2)
	instr := &client.RecordInput{Type: "task.instruction", AuthorID: "user:oles", Content: json.RawMessage(`"go"`)}

	tests := []struct {
		name string
		call func() error
		want seen
	}{
		{"CreateSession", func() error {
			_, err := c.CreateSession(ctx, client.SessionInput{Project: "p", Name: "n"})
			return err
		}, seen{"POST", "/v1/sessions", "k-1", `{"project":"p","name":"n"}`}},
		{"CreateSessionFork", func() error {
			_, err := c.CreateSession(ctx, client.SessionInput{Project: "p", Name: "n", Scope: "s", FromLedgerID: "l"})
			return err
		}, seen{"POST", "/v1/sessions", "k-1", `{"project":"p","name":"n","scope":"s","from_ledger_id":"l"}`}},
		{"OpenTurn", func() error {
			_, err := c.OpenTurn(ctx, "s1", client.TurnOpenInput{Instruction: instr, Context: []client.RecordRef{{RecordID: "r1"}, {RecordInput: client.RecordInput{Type: "sys.context", AuthorID: "sys:x", Content: json.RawMessage(`1`)}}}, DeadlineSeconds: 60})
			return err
		}, seen{"POST", "/v1/sessions/s1/turns", "k-1", `{"instruction":{"type":"task.instruction","content":"go","author_id":"user:oles"},"context":[{"record_id":"r1"},{"type":"sys.context","content":1,"author_id":"sys:x"}],"deadline_seconds":60}`}},
		{"OpenTurnMemory", func() error {
			_, err := c.OpenTurn(ctx, "s1", client.TurnOpenInput{Instruction: instr, Memory: &client.MemoryRequest{Query: "q", BudgetBytes: 10}, Dispatch: "worker"})
			return err
		}, seen{"POST", "/v1/sessions/s1/turns", "k-1", `{"instruction":{"type":"task.instruction","content":"go","author_id":"user:oles"},"memory":{"query":"q","budget_bytes":10},"dispatch":"worker"}`}},
		{"AppendTurn", func() error {
			_, err := c.AppendTurn(ctx, "t1", client.TurnAppend{Records: []client.RecordRef{{RecordID: "r1"}}})
			return err
		}, seen{"POST", "/v1/turns/t1/records", "k-1", `{"records":[{"record_id":"r1"}]}`}},
		{"AppendTurnEpoch", func() error {
			_, err := c.AppendTurn(ctx, "t1", client.TurnAppend{Epoch: &epoch})
			return err
		}, seen{"POST", "/v1/turns/t1/records", "k-1", `{"epoch":2,"records":[]}`}},
		{"CloseTurn", func() error {
			_, err := c.CloseTurn(ctx, "t1", client.TurnClose{Epoch: &epoch, Status: "failed"})
			return err
		}, seen{"POST", "/v1/turns/t1/close", "k-1", `{"epoch":2,"status":"failed"}`}},
		{"ClaimTurn", func() error {
			_, err := c.ClaimTurn(ctx, "t1", client.TurnClaim{Worker: "agent:w", LeaseSeconds: 60})
			return err
		}, seen{"POST", "/v1/turns/t1/claim", "k-1", `{"worker":"agent:w","lease_seconds":60}`}},
		{"RenewTurn", func() error {
			_, err := c.RenewTurn(ctx, "t1", client.TurnRenew{Epoch: 2, LeaseSeconds: 60})
			return err
		}, seen{"POST", "/v1/turns/t1/renew", "k-1", `{"epoch":2,"lease_seconds":60}`}},
		{"MoveHeadEmpty", func() error {
			_, err := c.MoveHead(ctx, "s1", client.HeadMove{LedgerID: "l1"})
			return err
		}, seen{"POST", "/v1/sessions/s1/head", "k-1", `{"ledger_id":"l1","expected_head":null}`}},
		{"Import", func() error {
			_, err := c.Import(ctx, client.ImportInput{})
			return err
		}, seen{"POST", "/v1/admin/import", "k-1", `{"records":[],"ledgers":[],"sessions":[]}`}},
		{"PutRecordCarriesKey", func() error {
			_, err := c.PutRecord(ctx, client.RecordInput{Type: "sys.context", AuthorID: "sys:x", Content: json.RawMessage(`1`)})
			return err
		}, seen{"POST", "/v1/records", "k-1", `{"type":"sys.context","content":1,"author_id":"sys:x"}`}},
		{"GetHasNoKey", func() error {
			_, err := c.GetTurn(ctx, "t1")
			return err
		}, seen{"GET", "/v1/turns/t1", "", ""}},
		{"ListTurns", func() error {
			_, err := c.ListTurns(ctx, client.TurnListOptions{SessionID: "s1", State: "open", Limit: 5, Cursor: "c"})
			return err
		}, seen{"GET", "/v1/turns?cursor=c&limit=5&session_id=s1&state=open", "", ""}},
		{"ListSessions", func() error {
			_, err := c.ListSessions(ctx, client.SessionListOptions{Project: "p", Limit: 5})
			return err
		}, seen{"GET", "/v1/sessions?limit=5&project=p", "", ""}},
		{"SessionLog", func() error {
			_, err := c.SessionLog(ctx, "s1", 7)
			return err
		}, seen{"GET", "/v1/sessions/s1/log?limit=7", "", ""}},
		{"VerifySession", func() error {
			_, err := c.VerifySession(ctx, "s1", "abc")
			return err
		}, seen{"GET", "/v1/sessions/s1/verify?expect_head_hash=abc", "", ""}},
		{"NoKeyNoHeader", func() error {
			_, err := c.CloseTurn(context.Background(), "t1", client.TurnClose{})
			return err
		}, seen{"POST", "/v1/turns/t1/close", "", `{}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			if err := tt.call(); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0] != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
