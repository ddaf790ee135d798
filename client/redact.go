package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/kura-memory/kura/internal/kura"
)

type (
	// Redaction is who dropped a record's content, why and when.
	Redaction = kura.Redaction
	// RedactResult answers a redaction: the record as it now reads and
	// the redaction (the first one when AlreadyRedacted).
	RedactResult = kura.RedactResult
)

// RedactRecord drops a record's content for good (POST
// /v1/records/{id}/redact, admin only); content_hash, hash and seal stay,
// so every ledger holding the record still verifies. reason is required.
// Redacting a redacted record is a success that writes nothing:
// AlreadyRedacted is set and Redaction is the first one.
func (c *Client) RedactRecord(ctx context.Context, id, reason string) (*RedactResult, error) {
	var out RedactResult
	if err := c.do(ctx, "redact record", http.MethodPost, "/v1/records/"+url.PathEscape(id)+"/redact", nil, kura.RedactInput{Reason: reason}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
