package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
)

// TestClient_ErrorDecoding serves canned error answers: the shapes a proxy
// or a broken daemon can produce cannot be provoked from a real kurad, and
// this server stands in for nothing else (the API itself is tested against
// the real daemon in e2e_test.go).
func TestClient_ErrorDecoding(t *testing.T) {
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	err = client.New("http://" + addr).Health(context.Background())
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
	for name, err := range checks {
		if !client.IsCode(err, client.EInvalid) {
			t.Errorf("%s: got %v, want invalid_argument", name, err)
		}
	}
}
