package kura

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxRedactReason bounds the reason of a redaction: it is kept for good in
// the audit trail, so it is a sentence, not a document.
const MaxRedactReason = 1024

// RedactInput is the body of POST /v1/records/{id}/redact.
type RedactInput struct {
	Reason string `json:"reason"`
}

// Validate requires a reason of 1..MaxRedactReason bytes of printable UTF-8
// (spaces and tabs allowed, no other control characters): it is shown to
// people reading the audit trail and must not smuggle terminal escapes or
// line breaks into their logs.
func (in *RedactInput) Validate() error {
	r := in.Reason
	if strings.TrimSpace(r) == "" {
		return Invalid("reason", "reason is required: say why the content is dropped")
	}
	if len(r) > MaxRedactReason {
		return Invalid("reason", "reason is at most %d bytes, got %d", MaxRedactReason, len(r))
	}
	if !utf8.ValidString(r) {
		return Invalid("reason", "reason must be valid UTF-8")
	}
	for _, c := range r {
		if c != ' ' && c != '\t' && (unicode.IsControl(c) || c == '\u2028' || c == '\u2029') {
			return Invalid("reason", "reason must not hold control characters or line breaks")
		}
	}
	return nil
}

// Redaction is who dropped a record's content, why and when. Seq is the
// record.redacted event that logged it.
type Redaction struct {
	RecordID string `json:"record_id"`
	By       string `json:"by"`
	Reason   string `json:"reason"`
	At       string `json:"at"`
	Seq      int64  `json:"seq"`
}

// RedactResult answers a redaction: the record as it reads now (content
// null, redacted true) and the redaction. AlreadyRedacted is set when the
// record had been redacted before; nothing was written then, and Redaction
// is the first one. Purge says whether the dropped content has left the
// database files ("complete") or is still being purged ("pending"); an
// answer replayed for an Idempotency-Key does not carry it.
type RedactResult struct {
	Record          *Record    `json:"record"`
	Redaction       *Redaction `json:"redaction"`
	AlreadyRedacted bool       `json:"already_redacted"`
	Purge           string     `json:"purge,omitempty"`
}
