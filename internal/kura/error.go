package kura

import (
	"errors"
	"fmt"
)

// Error codes, one per row of the error table in API.md.
const (
	EInvalid     = "invalid_argument"
	EUnauth      = "unauthenticated"
	EDenied      = "permission_denied"
	ENotFound    = "not_found"
	EConflict    = "conflict"
	ETooLarge    = "too_large"
	EMediaType   = "unsupported_media_type"
	ERateLimited = "rate_limited"
	EUnavailable = "unavailable"
	EStorageFull = "insufficient_storage"
	EInternal    = "internal"
	EMethod      = "method_not_allowed"
	// EReplay is internal: an idempotent write found its answer stored.
	EReplay       = "idempotent_replay"
	EUnknownError = EInternal
)

// Error is an application error: a code from the table above, a message meant
// for the caller, and optional details (the field at fault, missing ids...).
// Errors without a Kura code are internal and never shown to callers.
type Error struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	// Cause is what the error means to kurad itself, beyond the code a
	// caller sees (ErrStorage); never written to the caller.
	Cause error `json:"-"`
}

// ErrStorage is the cause of every error that means the storage itself
// failed (a full or failing disk), whatever code the caller sees: a
// health check asks errors.Is(err, ErrStorage), not the message.
var ErrStorage = errors.New("storage failure")

// Unwrap is the cause, so errors.Is(err, ErrStorage) sees it.
func (e *Error) Unwrap() error { return e.Cause }

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Errorf returns an *Error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid returns an invalid_argument error naming the field at fault.
func Invalid(field, format string, args ...any) *Error {
	e := Errorf(EInvalid, format, args...)
	if field != "" {
		e.Details = map[string]any{"field": field}
	}
	return e
}

// WithDetail returns e with one more detail set.
func (e *Error) WithDetail(k string, v any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[k] = v
	return e
}

// ErrorCode returns the Kura code of err, or EInternal when err carries none.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}

// ErrorMessage returns the caller-facing message of err; internal errors get
// a generic text so that nothing internal leaks.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// IsCode reports whether err carries the given Kura code.
func IsCode(err error, code string) bool { return ErrorCode(err) == code }
