package client

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
)

// FuzzDecodeError feeds arbitrary error bodies to decodeError: it must never
// panic, always return an *Error with a code, and keep the code of a
// well-formed error body. It is an internal test because decodeError is the
// decoder under test and building a real answer for every input would only
// slow the fuzzer down.
func FuzzDecodeError(f *testing.F) {
	for _, s := range []string{
		`{"error":{"code":"not_found","message":"x"}}`,
		`{"error":{"code":"","message":"x"}}`,
		`{"error":null}`, `{"error":"x"}`, `<html>`, ``, `null`, `[]`,
		`{"error":{"code":"conflict","message":"x","details":{"actual":"y"}}}`,
	} {
		f.Add(500, []byte(s))
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		resp := &http.Response{StatusCode: status, Status: http.StatusText(status), Body: io.NopCloser(bytes.NewReader(body))}
		err := decodeError(resp)
		e, ok := err.(*kura.Error)
		if !ok || e.Code == "" {
			t.Fatalf("got %#v, want an *Error with a code", err)
		}
		var env struct {
			Error *kura.Error `json:"error"`
		}
		if len(body) <= maxErrorBody && json.Unmarshal(body, &env) == nil && env.Error != nil && env.Error.Code != "" && env.Error.Code != e.Code {
			t.Fatalf("got code %q, want %q", e.Code, env.Error.Code)
		}
	})
}
