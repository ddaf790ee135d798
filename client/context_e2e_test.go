package client_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// ctxSetup posts a memory write as the contract spells it. The memory
// graph is only the stage here, so it is written over plain HTTP rather
// than through the client's memory methods.
func ctxSetup(t *testing.T, base, path, body string) {
	t.Helper()
	resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, raw)
	}
}

// ctxScope writes one node for each bucket into scope:
// fact:f1 use_now, belief:b1 inspect_before_use, note:n1 rehydrate and
// belief:b2 do_not_use (contradicted by b1).
func ctxScope(t *testing.T, base, scope string) {
	t.Helper()
	mem := "/v1/scopes/" + scope + "/memory"
	for _, n := range []string{
		`{"kind":"fact","id":"f1","title":"Retry policy","summary":"payments retry thrice","lifecycle":"active","authority":"trusted","confidence":0.9}`,
		`{"kind":"belief","id":"b1","title":"Queue is slow","summary":"the payments queue lags","confidence":0.6}`,
		`{"kind":"note","id":"n1","title":"Old runbook","summary":"archived runbook","lifecycle":"archived","authority":"trusted","payload_ref":"s3://runbooks/old"}`,
		`{"kind":"belief","id":"b2","title":"Queue is fast","summary":"the payments queue keeps up","lifecycle":"active","authority":"verified"}`,
	} {
		ctxSetup(t, base, mem+"/nodes", n)
	}
	ctxSetup(t, base, mem+"/relations", `{"kind":"contradicts","from":"belief:b1","to":"belief:b2","confidence":0.8}`)
}

func bucketRefs(items []client.BundleItem) []string {
	refs := []string{}
	for _, it := range items {
		refs = append(refs, it.Ref)
	}
	return refs
}

func TestE2E_Context(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	c, ctx := client.New(base), t.Context()
	ctxScope(t, base, "acme")
	seq := func() int64 {
		t.Helper()
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.LastEventSeq
	}

	before := seq()
	// A key in the context must not reach the preview: see the compile
	// below, sent with the same key.
	pctx := client.WithIdempotencyKey(ctx, "ctx-e2e-1")
	prev, err := c.PreviewContext(pctx, "acme", client.ContextRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := seq(); got != before {
		t.Errorf("preview moved last_event_seq from %d to %d, want no event", before, got)
	}
	if prev.BundleID != "" || prev.Scope != "acme" || prev.AsOf == "" {
		t.Errorf("preview: got bundle id %q scope %q as_of %q, want no id, acme and a time", prev.BundleID, prev.Scope, prev.AsOf)
	}
	want := map[string][]string{
		client.BucketUseNow:           {"fact:f1"},
		client.BucketInspectBeforeUse: {"belief:b1"},
		client.BucketRehydrate:        {"note:n1"},
		client.BucketDoNotUse:         {"belief:b2"},
	}
	checkBuckets := func(t *testing.T, b *client.Bundle) {
		t.Helper()
		got := map[string][]string{
			client.BucketUseNow:           bucketRefs(b.Buckets.UseNow),
			client.BucketInspectBeforeUse: bucketRefs(b.Buckets.InspectBeforeUse),
			client.BucketRehydrate:        bucketRefs(b.Buckets.Rehydrate),
			client.BucketDoNotUse:         bucketRefs(b.Buckets.DoNotUse),
		}
		for name, refs := range want {
			if strings.Join(got[name], ",") != strings.Join(refs, ",") {
				t.Errorf("%s: got %v, want %v", name, got[name], refs)
			}
		}
		if len(b.Trace) != 4 {
			t.Errorf("trace: got %d entries, want 4 (one per node)", len(b.Trace))
		}
	}
	checkBuckets(t, prev)
	if err := client.VerifyBundleDigest(prev); err != nil {
		t.Errorf("preview digest: %v", err)
	}

	var compiledRaw json.RawMessage
	comp, err := c.CompileContext(client.WithRawResponse(pctx, &compiledRaw), "acme", client.ContextRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if comp.BundleID == "" {
		t.Fatalf("compile: got no bundle id (was the preview replayed for the key?): %s", compiledRaw)
	}
	checkBuckets(t, comp)
	if got := seq(); got != before+1 {
		t.Errorf("compile: last_event_seq got %d, want %d (one context.compiled)", got, before+1)
	}
	// The digest covers the buckets only, not as_of or the id.
	if comp.Digest != prev.Digest {
		t.Errorf("compile digest %s, want the preview's %s over the same buckets", comp.Digest, prev.Digest)
	}

	t.Run("GetBundleByteEqual", func(t *testing.T) {
		var raw json.RawMessage
		got, err := c.GetBundle(client.WithRawResponse(ctx, &raw), "acme", comp.BundleID)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(raw, compiledRaw) {
			t.Errorf("GET bundle:\n%s\nwant the compile answer:\n%s", raw, compiledRaw)
		}
		if got.BundleID != comp.BundleID || got.Digest != comp.Digest {
			t.Errorf("got %s %s, want %s %s", got.BundleID, got.Digest, comp.BundleID, comp.Digest)
		}
	})

	t.Run("VerifyDigest", func(t *testing.T) {
		if err := client.VerifyBundleDigest(comp); err != nil {
			t.Errorf("untouched bundle: %v", err)
		}
		if err := client.VerifyBundleJSON(compiledRaw); err != nil {
			t.Errorf("untouched answer: %v", err)
		}
		tampers := []struct {
			name string
			edit func(b *client.Bundle)
		}{
			{"summary", func(b *client.Bundle) { b.Buckets.UseNow[0].Summary = "payments never retry" }},
			{"authority", func(b *client.Bundle) { b.Buckets.DoNotUse[0].Authority = "rejected" }},
			{"confidence", func(b *client.Bundle) { b.Buckets.UseNow[0].Confidence = 0.91 }},
			{"item moved", func(b *client.Bundle) {
				b.Buckets.UseNow = append(b.Buckets.UseNow, b.Buckets.DoNotUse...)
				b.Buckets.DoNotUse = []client.BundleItem{}
			}},
			{"item dropped", func(b *client.Bundle) { b.Buckets.InspectBeforeUse = []client.BundleItem{} }},
			{"digest", func(b *client.Bundle) { b.Digest = "sha256:" + strings.Repeat("0", 64) }},
		}
		for _, tc := range tampers {
			t.Run(tc.name, func(t *testing.T) {
				// A deep copy, so that one edit cannot leak into the next.
				var b client.Bundle
				if err := json.Unmarshal(compiledRaw, &b); err != nil {
					t.Fatal(err)
				}
				tc.edit(&b)
				var ve *client.VerificationError
				if err := client.VerifyBundleDigest(&b); !errors.As(err, &ve) || ve.Mismatches[0].Field != "digest" {
					t.Errorf("got %v, want a digest mismatch", err)
				}
				raw, err := json.Marshal(&b)
				if err != nil {
					t.Fatal(err)
				}
				if err := client.VerifyBundleJSON(raw); !errors.As(err, &ve) {
					t.Errorf("as JSON: got %v, want a digest mismatch", err)
				}
			})
		}
		// A field this client does not know still counts: the JSON check
		// hashes what was sent.
		withExtra := bytes.Replace(compiledRaw, []byte(`"ref":"fact:f1"`), []byte(`"ref":"fact:f1","extra":1`), 1)
		if err := client.VerifyBundleJSON(withExtra); err == nil {
			t.Errorf("an item field added in transit: got nil, want a digest mismatch")
		}
	})

	t.Run("IdempotentRetry", func(t *testing.T) {
		kctx := client.WithIdempotencyKey(ctx, "ctx-e2e-2")
		req := client.ContextRequest{Query: "payments retry", MaxPerBucket: new(1)}
		first, err := c.CompileContext(kctx, "acme", req)
		if err != nil {
			t.Fatal(err)
		}
		after := seq()
		again, err := c.CompileContext(kctx, "acme", req)
		if err != nil {
			t.Fatal(err)
		}
		if again.BundleID != first.BundleID || again.AsOf != first.AsOf {
			t.Errorf("retry: got bundle %s as of %s, want %s as of %s", again.BundleID, again.AsOf, first.BundleID, first.AsOf)
		}
		if got := seq(); got != after {
			t.Errorf("retry: last_event_seq got %d, want %d (nothing written)", got, after)
		}
		if first.BundleID == comp.BundleID {
			t.Errorf("a new key made no new bundle: %s", first.BundleID)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		tests := []struct {
			name string
			call func() error
			code string
		}{
			{"unknown bundle", func() error {
				_, err := c.GetBundle(ctx, "acme", "0193a000-0000-7000-8000-000000000000")
				return err
			}, client.ENotFound},
			{"bundle of another scope", func() error {
				_, err := c.GetBundle(ctx, "other", comp.BundleID)
				return err
			}, client.ENotFound},
			{"bad bundle id", func() error { _, err := c.GetBundle(ctx, "acme", "nope"); return err }, client.EInvalid},
			{"empty bundle id", func() error { _, err := c.GetBundle(ctx, "acme", " "); return err }, client.EInvalid},
			{"empty scope", func() error { _, err := c.PreviewContext(ctx, "", client.ContextRequest{}); return err }, client.EInvalid},
			{"bad scope", func() error { _, err := c.CompileContext(ctx, "Not A Slug", client.ContextRequest{}); return err }, client.EInvalid},
			{"negative budget", func() error {
				_, err := c.PreviewContext(ctx, "acme", client.ContextRequest{BudgetBytes: -1})
				return err
			}, client.EInvalid},
			{"unknown kind", func() error {
				_, err := c.CompileContext(ctx, "acme", client.ContextRequest{Kinds: []string{"dream"}})
				return err
			}, client.EInvalid},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				before := seq()
				wantCode(t, tt.call(), tt.code)
				if got := seq(); got != before {
					t.Errorf("last_event_seq got %d, want %d", got, before)
				}
			})
		}
	})

	t.Run("NoRedact", func(t *testing.T) {
		ctxSetup(t, base, "/v1/scopes/secrets/memory/nodes", `{"kind":"fact","id":"k","summary":"use password=hunter22 to log in"}`)
		no := false
		for _, tc := range []struct {
			redact *bool
			want   string
			n      int
		}{
			{nil, "use password=[REDACTED] to log in", 1},
			{&no, "use password=hunter22 to log in", 0},
		} {
			b, err := c.PreviewContext(ctx, "secrets", client.ContextRequest{Redact: tc.redact})
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Buckets.InspectBeforeUse) != 1 || b.Buckets.InspectBeforeUse[0].Summary != tc.want || b.Redactions != tc.n {
				t.Errorf("redact %v: got %+v (%d redactions), want %q (%d)", tc.redact, b.Buckets.InspectBeforeUse, b.Redactions, tc.want, tc.n)
			}
		}
	})
}
