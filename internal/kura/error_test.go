package kura_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
)

func TestErrorCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		err         error
		wantCode    string
		wantMessage string
	}{
		{"Kura", kura.Errorf(kura.ENotFound, "record %s not found", "x"), kura.ENotFound, "record x not found"},
		{"Wrapped", fmt.Errorf("get record: %w", kura.Errorf(kura.EConflict, "stale")), kura.EConflict, "stale"},
		{"Joined", errors.Join(io.EOF, kura.Invalid("f", "bad f")), kura.EInvalid, "bad f"},
		{"Plain", errors.New("disk I/O error at /var/lib/kura/kura.db"), kura.EInternal, "internal error"},
		{"WrappedPlain", fmt.Errorf("open: %w", io.ErrUnexpectedEOF), kura.EInternal, "internal error"},
		{"Nil", nil, kura.EInternal, "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := kura.ErrorCode(tt.err); got != tt.wantCode {
				t.Errorf("got code %q, want %q", got, tt.wantCode)
			}
			if got := kura.ErrorMessage(tt.err); got != tt.wantMessage {
				t.Errorf("got message %q, want %q", got, tt.wantMessage)
			}
			if got := kura.IsCode(tt.err, tt.wantCode); !got {
				t.Errorf("got IsCode(%q) false, want true", tt.wantCode)
			}
		})
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	t.Run("Field", func(t *testing.T) {
		e := kura.Invalid("label", "label is %d bytes", 300)
		if e.Code != kura.EInvalid {
			t.Errorf("got code %q, want %q", e.Code, kura.EInvalid)
		}
		if got := e.Details["field"]; got != "label" {
			t.Errorf("got field %v, want label", got)
		}
		if got, want := e.Error(), "invalid_argument: label is 300 bytes"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("NoField", func(t *testing.T) {
		if e := kura.Invalid("", "x"); e.Details != nil {
			t.Errorf("got details %v, want nil", e.Details)
		}
	})
	t.Run("WithDetail", func(t *testing.T) {
		e := kura.Errorf(kura.ENotFound, "missing").WithDetail("ids", []string{"a"})
		if _, ok := e.Details["ids"]; !ok {
			t.Errorf("got details %v, want ids", e.Details)
		}
		e = kura.Invalid("f", "x").WithDetail("k", 1)
		if e.Details["field"] != "f" || e.Details["k"] != 1 {
			t.Errorf("got details %v, want field and k", e.Details)
		}
	})
}

func TestErrStorage(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"Cause", &kura.Error{Code: kura.EUnavailable, Message: "storage is failing", Cause: kura.ErrStorage}, true},
		{"Wrapped", fmt.Errorf("write: %w", &kura.Error{Code: kura.EStorageFull, Cause: kura.ErrStorage}), true},
		{"SameMessageNoCause", &kura.Error{Code: kura.EUnavailable, Message: "storage is failing"}, false},
		{"OtherCause", &kura.Error{Code: kura.EUnavailable, Cause: io.EOF}, false},
		{"Nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errors.Is(tt.err, kura.ErrStorage); got != tt.want {
				t.Errorf("errors.Is(%v, ErrStorage) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
	// The cause never reaches the caller.
	b, _ := json.Marshal(&kura.Error{Code: kura.EUnavailable, Message: "m", Cause: kura.ErrStorage})
	if got, want := string(b), `{"code":"unavailable","message":"m"}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
