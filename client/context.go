package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/kurahash"
)

// Context compile's types, aliased for programs outside this module like
// the ones in types.go. admission is pure logic (no SQL, no HTTP), so the
// client can share its types without pulling the daemon in.
type (
	// ContextRequest is the body of a preview or compile: a query that
	// orders the buckets, filters (kinds), bounds (max_per_bucket,
	// budget_bytes, max_trace; left out, kurad's defaults), the instant to read memory at (as_of) and whether to
	// redact secrets (Redact nil means yes).
	ContextRequest = admission.Request
	// Bundle is the answer of a preview or compile; BundleID is empty for
	// a preview, which stores nothing.
	Bundle = admission.Bundle
	// BundleResult is the part of a Bundle the admission rules produce:
	// buckets, trace, omitted counts, bytes, redactions and warnings.
	BundleResult = admission.Result
	// Buckets holds a bundle's admitted items, one list per bucket.
	Buckets = admission.Buckets
	// BundleItem is a memory node as a bucket shows it.
	BundleItem = admission.Item
	// TraceEntry explains the decision about one node: its bucket, the
	// rule's reason and, when a query scored it, why.
	TraceEntry = admission.TraceEntry
)

// Bucket names, in the order a budget spends bytes on them.
const (
	BucketUseNow           = admission.UseNow
	BucketInspectBeforeUse = admission.InspectBeforeUse
	BucketRehydrate        = admission.Rehydrate
	BucketDoNotUse         = admission.DoNotUse
)

// contextRequestWire is a ContextRequest as the contract writes it: fields
// left at their zero value are left out, so the server's defaults apply and
// the body says only what the caller asked.
type contextRequestWire struct {
	Query        string   `json:"query,omitempty"`
	TargetFiles  []string `json:"target_files,omitempty"`
	Kinds        []string `json:"kinds,omitempty"`
	MaxPerBucket *int     `json:"max_per_bucket,omitempty"` // nil: the default (1000); 0 keeps none
	BudgetBytes  int      `json:"budget_bytes,omitempty"`
	MaxTrace     *int     `json:"max_trace,omitempty"` // nil: the default (100000); 0 lists none
	AsOf         string   `json:"as_of,omitempty"`
	Redact       *bool    `json:"redact,omitempty"`
}

func wireContextRequest(r ContextRequest) contextRequestWire {
	return contextRequestWire{Query: r.Query, TargetFiles: r.TargetFiles, Kinds: r.Kinds,
		MaxPerBucket: r.MaxPerBucket, BudgetBytes: r.BudgetBytes, MaxTrace: r.MaxTrace, AsOf: r.AsOf, Redact: r.Redact}
}

func contextPath(scope string, parts ...string) string {
	p := "/v1/scopes/" + esc(scope) + "/context"
	for _, s := range parts {
		p += "/" + esc(s)
	}
	return p
}

// PreviewContext answers what CompileContext would for req over scope's
// memory, and stores nothing: no bundle, no event (POST
// /v1/scopes/{scope}/context/preview).
func (c *Client) PreviewContext(ctx context.Context, scope string, req ContextRequest) (*Bundle, error) {
	if isEmpty(scope) {
		return nil, errMissingID("scope")
	}
	// A preview is a read sent as POST. Were an idempotency key meant for
	// a compile to ride along and be remembered, the compile sent with it
	// next would be answered with this preview, which has no bundle id.
	ctx = WithIdempotencyKey(ctx, "")
	var out Bundle
	if err := c.do(ctx, "preview context", http.MethodPost, contextPath(scope, "preview"), nil, wireContextRequest(req), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CompileContext compiles scope's memory for req and has kurad keep the
// bundle, with one context.compiled event, as the receipt of what an agent
// was given (POST /v1/scopes/{scope}/context/compile). Sent with
// WithIdempotencyKey, a retry answers the first compile's bundle again and
// stores nothing. The digest is the server's word; VerifyBundleDigest
// checks it.
func (c *Client) CompileContext(ctx context.Context, scope string, req ContextRequest) (*Bundle, error) {
	if isEmpty(scope) {
		return nil, errMissingID("scope")
	}
	var out Bundle
	if err := c.do(ctx, "compile context", http.MethodPost, contextPath(scope, "compile"), nil, wireContextRequest(req), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetBundle returns a bundle an earlier compile stored in scope, exactly as
// the compile answered it (GET /v1/scopes/{scope}/context/bundles/{id}).
func (c *Client) GetBundle(ctx context.Context, scope, id string) (*Bundle, error) {
	if isEmpty(scope) {
		return nil, errMissingID("scope")
	}
	if isEmpty(id) {
		return nil, errMissingID("id")
	}
	var out Bundle
	if err := c.do(ctx, "get bundle", http.MethodGet, contextPath(scope, "bundles", id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// bucketsDigest is "sha256:<hex>" of the RFC 8785 form of a buckets JSON
// text, the contract's definition of a bundle digest.
func bucketsDigest(raw []byte) (string, error) {
	canon, err := kurahash.Canonical(raw)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// digestError reports a digest that does not match the buckets.
func digestError(b bundleHead, computed string) error {
	what := "bundle"
	if b.BundleID != "" {
		what += " " + b.BundleID
	} else {
		what += " (preview)"
	}
	return &VerificationError{What: what, Mismatches: []Mismatch{{Field: "digest", Stored: b.Digest, Computed: computed}}}
}

type bundleHead struct {
	BundleID string `json:"bundle_id"`
	Digest   string `json:"digest"`
}

// VerifyBundleDigest recomputes b's digest from its buckets (SHA-256 of
// their RFC 8785 form) and returns a *VerificationError when it differs
// from b.Digest, so that a bundle handed over by anyone can be checked
// without trusting the server. The buckets are hashed as this package
// encodes them: a bundle from a newer kurad whose items carry fields
// unknown here is better checked as it came, with VerifyBundleJSON.
func VerifyBundleDigest(b *Bundle) error {
	if b == nil {
		return errors.New("verify bundle: nil bundle")
	}
	raw, err := json.Marshal(&b.Buckets)
	if err != nil {
		return fmt.Errorf("verify bundle: encode buckets: %w", err)
	}
	computed, err := bucketsDigest(raw)
	if err != nil {
		return fmt.Errorf("verify bundle: %w", err)
	}
	if computed != b.Digest {
		return digestError(bundleHead{BundleID: b.BundleID, Digest: b.Digest}, computed)
	}
	return nil
}

// VerifyBundleJSON is VerifyBundleDigest over a bundle's JSON text as it
// was received (WithRawResponse gives it): the buckets are hashed as sent,
// fields this package does not know included.
func VerifyBundleJSON(raw []byte) error {
	var b struct {
		bundleHead
		Buckets json.RawMessage `json:"buckets"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return fmt.Errorf("verify bundle: %w", err)
	}
	if len(bytes.TrimSpace(b.Buckets)) == 0 {
		return errors.New("verify bundle: the bundle has no buckets")
	}
	computed, err := bucketsDigest(b.Buckets)
	if err != nil {
		return fmt.Errorf("verify bundle: buckets: %w", err)
	}
	if computed != b.Digest {
		return digestError(b.bundleHead, computed)
	}
	return nil
}
