package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// contextSeed posts a memory write over plain HTTP and returns the answer:
// the memory graph is the stage of these tests, not what they test.
func contextSeed(t *testing.T, base, path, body string) []byte {
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
	return raw
}

// contextScope writes one node for each bucket into scope "acme" and
// returns the id of the relation that blocks belief:b2.
func contextScope(t *testing.T, base string) string {
	t.Helper()
	const mem = "/v1/scopes/acme/memory"
	for _, n := range []string{
		`{"kind":"fact","id":"f1","title":"Retry policy","summary":"payments retry thrice","lifecycle":"active","authority":"trusted","confidence":0.9,"target_files":["pay/retry.go"]}`,
		`{"kind":"belief","id":"b1","title":"Queue is slow","summary":"the payments queue lags;\nlog in with password=hunter22","confidence":0.6}`,
		`{"kind":"note","id":"n1","title":"Old runbook","summary":"archived runbook","lifecycle":"archived","authority":"trusted","payload_ref":"s3://runbooks/old"}`,
		`{"kind":"belief","id":"b2","title":"Queue is fast","summary":"the payments queue keeps up","lifecycle":"active","authority":"verified"}`,
	} {
		contextSeed(t, base, mem+"/nodes", n)
	}
	var rel struct{ ID string }
	if err := json.Unmarshal(contextSeed(t, base, mem+"/relations", `{"kind":"contradicts","from":"belief:b1","to":"belief:b2","confidence":0.65}`), &rel); err != nil || rel.ID == "" {
		t.Fatalf("relation: %v %+v", err, rel)
	}
	return rel.ID
}

// splitBundleOutput cuts the human view into the buckets part and the
// footer's fields.
func splitBundleOutput(t *testing.T, out string) (string, map[string][]string) {
	t.Helper()
	buckets, footer, ok := strings.Cut(out, "\n\n")
	if !ok {
		t.Fatalf("no blank line between buckets and footer:\n%s", out)
	}
	fields := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSuffix(footer, "\n"), "\n") {
		k, v, _ := strings.Cut(line, "  ")
		k = strings.TrimSpace(k)
		fields[k] = append(fields[k], strings.TrimSpace(v))
	}
	return buckets + "\n", fields
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64} \(verified locally\)$`)

func TestE2E_Context(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	relID := contextScope(t, base)
	c := client.New(base)

	wantBuckets := `USE NOW (1)
  fact:f1  Retry policy — payments retry thrice (0.9, active/trusted)
    reason: active_authoritative_memory — active and trusted
INSPECT BEFORE USE (1)
  belief:b1  Queue is slow — the payments queue lags; log in with password=[REDACTED] (0.6, candidate/unknown)
    reason: insufficient_authority — lifecycle candidate, authority unknown
REHYDRATE (1)
  note:n1  Old runbook — archived runbook (0.5, archived/trusted)
    payload: s3://runbooks/old
    reason: payload_required — lifecycle archived
DO NOT USE (1)
  belief:b2  Queue is fast — the payments queue keeps up (0.5, active/verified)
    reason: blocked_by_relation — contradicts from belief:b1 at confidence 0.65 (≥ 0.65) [relation ` + relID + `]
`

	// The --json answer of a preview gives the numbers the human view must
	// show; nothing changes between the two calls but the clock.
	var pj client.Bundle
	kuraJSON(t, base, "", &pj, "context", "preview", "acme")

	t.Run("PreviewHuman", func(t *testing.T) {
		seq := lastSeq(t, c)
		out, errOut, code := runKura(t, base, nil, "context", "preview", "acme")
		if code != exitOK {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		buckets, f := splitBundleOutput(t, out)
		if buckets != wantBuckets {
			t.Errorf("buckets:\n%s\nwant:\n%s", buckets, wantBuckets)
		}
		want := map[string]string{"bundle": "- (preview: nothing stored)", "scope": "acme", "bytes": strconv.Itoa(pj.Bytes), "redactions": "1"}
		for k, v := range want {
			if len(f[k]) != 1 || f[k][0] != v {
				t.Errorf("%s: got %q, want %q", k, f[k], v)
			}
		}
		if len(f["digest"]) != 1 || !digestRE.MatchString(f["digest"][0]) || !strings.HasPrefix(f["digest"][0], pj.Digest+" ") {
			t.Errorf("digest: got %q, want %s (verified locally)", f["digest"], pj.Digest)
		}
		if len(f["as of"]) != 1 || f["as of"][0] == "" || len(f["warning"]) != 0 {
			t.Errorf("got as of %q, warnings %q; want a time and no warning", f["as of"], f["warning"])
		}
		if got := lastSeq(t, c); got != seq {
			t.Errorf("preview wrote: last_event_seq %d -> %d", seq, got)
		}
	})

	t.Run("PreviewJSON", func(t *testing.T) {
		out, errOut, code := runKura(t, base, nil, "context", "preview", "acme", "--json")
		if code != exitOK {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(out)); err != nil {
			t.Fatalf("--json printed %q: %v", out, err)
		}
		if err := client.VerifyBundleJSON(compact.Bytes()); err != nil {
			t.Errorf("printed answer: %v", err)
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &keys); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"digest", "scope", "as_of", "buckets", "trace", "omitted", "bytes", "redactions", "warnings"} {
			if _, ok := keys[k]; !ok {
				t.Errorf("--json: no %q in %s", k, out)
			}
		}
		if _, ok := keys["bundle_id"]; ok {
			t.Errorf("--json preview carries a bundle_id: %s", out)
		}
	})

	t.Run("CompileHuman", func(t *testing.T) {
		seq := lastSeq(t, c)
		out, errOut, code := runKura(t, base, nil, "context", "compile", "acme")
		if code != exitOK {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		buckets, f := splitBundleOutput(t, out)
		if buckets != wantBuckets {
			t.Errorf("buckets:\n%s\nwant:\n%s", buckets, wantBuckets)
		}
		if len(f["bundle"]) != 1 {
			t.Fatalf("bundle: got %q, want one id", f["bundle"])
		}
		b, err := c.GetBundle(t.Context(), "acme", f["bundle"][0])
		if err != nil {
			t.Fatalf("the printed bundle id: %v", err)
		}
		if f["digest"][0] != b.Digest+" (verified locally)" || f["as of"][0] != b.AsOf || f["bytes"][0] != strconv.Itoa(b.Bytes) {
			t.Errorf("footer %q, want the stored bundle's digest %s, as_of %s, bytes %d", f, b.Digest, b.AsOf, b.Bytes)
		}
		if got := lastSeq(t, c); got != seq+1 {
			t.Errorf("compile: last_event_seq %d -> %d, want one event", seq, got)
		}
	})

	t.Run("CompileJSON", func(t *testing.T) {
		out, errOut, code := runKura(t, base, nil, "--json", "context", "compile", "acme", "--idempotency-key", "cli-ctx-1")
		if code != exitOK {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		var b client.Bundle
		if err := json.Unmarshal([]byte(out), &b); err != nil || b.BundleID == "" {
			t.Fatalf("--json printed %q (%v), want a bundle with an id", out, err)
		}
		var stored json.RawMessage
		if _, err := c.GetBundle(client.WithRawResponse(t.Context(), &stored), "acme", b.BundleID); err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(out)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(compact.Bytes(), bytes.TrimSpace(stored)) {
			t.Errorf("--json printed\n%s\nwant the server's answer\n%s", compact.Bytes(), stored)
		}
		again, _, code := runKura(t, base, nil, "--json", "context", "compile", "acme", "--idempotency-key", "cli-ctx-1")
		if code != exitOK || again != out {
			t.Errorf("retry with the same key: exit %d, printed\n%s\nwant the first answer again", code, again)
		}
	})

	t.Run("Flags", func(t *testing.T) {
		tests := []struct {
			name   string
			args   []string
			lines  []string          // lines the buckets part must start
			not    []string          // substrings the output must not hold
			footer map[string]string // footer fields
		}{
			{"Query", []string{"--query", "retry"}, []string{
				"  fact:f1  Retry policy — payments retry thrice (0.9, active/trusted)",
				"    why: score ",
			}, nil, nil},
			{"Kind", []string{"--kind", "belief"}, []string{
				"USE NOW (0)", "INSPECT BEFORE USE (1)", "REHYDRATE (0)", "DO NOT USE (1)",
			}, []string{"fact:f1", "note:n1"}, nil},
			{"Budget", []string{"--budget", "1"}, []string{
				"USE NOW (0, +1 omitted)", "  omitted: fact:f1", "REHYDRATE (0, +1 omitted)", "DO NOT USE (0, +1 omitted)", "  omitted: belief:b2",
			}, nil, map[string]string{"bytes": "0", "warning": "budget: 1 bytes reached; see omitted"}},
			{"NoRedact", []string{"--no-redact"}, []string{
				"  belief:b1  Queue is slow — the payments queue lags; log in with password=hunter22 (0.6, candidate/unknown)",
			}, []string{"[REDACTED]"}, map[string]string{"redactions": "0"}},
			{"TargetFile", []string{"--target-file", "pay/retry.go"}, []string{
				"  fact:f1  Retry policy",
				"    why: target_file_match (pay/retry.go)",
			}, []string{"score"}, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				args := append([]string{"context", "preview", "acme"}, tt.args...)
				out, errOut, code := runKura(t, base, nil, args...)
				if code != exitOK {
					t.Fatalf("exit %d, stderr %q", code, errOut)
				}
				buckets, footer := splitBundleOutput(t, out)
				got := strings.Split(buckets, "\n")
				for _, w := range tt.lines {
					if !slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, w) }) {
						t.Errorf("no line starting %q in:\n%s", w, out)
					}
				}
				for _, n := range tt.not {
					if strings.Contains(out, n) {
						t.Errorf("%q in:\n%s", n, out)
					}
				}
				for k, v := range tt.footer {
					if len(footer[k]) != 1 || footer[k][0] != v {
						t.Errorf("%s: got %q, want %q", k, footer[k], v)
					}
				}
			})
		}
	})

	t.Run("AsOf", func(t *testing.T) {
		out, errOut, code := runKura(t, base, nil, "context", "compile", "acme", "--as-of", "2000-01-01T00:00:00Z")
		if code != exitOK {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		buckets, f := splitBundleOutput(t, out)
		if !strings.HasPrefix(buckets, "USE NOW (0)\nINSPECT BEFORE USE (0)\nREHYDRATE (0)\nDO NOT USE (0)\n") {
			t.Errorf("buckets: got\n%s\nwant all four empty: nothing existed then", buckets)
		}
		if len(f["as of"]) != 1 || f["as of"][0] != "2000-01-01T00:00:00.000000000Z" || len(f["warning"]) != 1 || !strings.HasPrefix(f["warning"][0], "stale: ") {
			t.Errorf("footer: got as of %q, warnings %q; want 2000-01-01 and a stale warning", f["as of"], f["warning"])
		}
	})

	t.Run("Errors", func(t *testing.T) {
		tests := []struct {
			name   string
			args   []string
			code   int
			stderr string
		}{
			{"NoScope", []string{"context", "preview"}, exitUsage, "context preview takes one scope"},
			{"TwoScopes", []string{"context", "compile", "a", "b"}, exitUsage, "context compile takes one scope"},
			{"NoSubcommand", []string{"context"}, exitUsage, "context preview"},
			{"BadBudget", []string{"context", "preview", "acme", "--budget", "-1"}, exitFail, "kura: invalid_argument: budget_bytes"},
			{"BadAsOf", []string{"context", "compile", "acme", "--as-of", "yesterday"}, exitFail, "kura: invalid_argument: as_of"},
			{"BadKind", []string{"context", "preview", "acme", "--kind", "dream"}, exitFail, `unknown node kind "dream"`},
			{"BadScope", []string{"context", "preview", "Acme!"}, exitFail, "kura: invalid_argument: "},
			{"PreviewTakesNoKey", []string{"context", "preview", "acme", "--idempotency-key", "k"}, exitUsage, "flag provided but not defined"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				seq := lastSeq(t, c)
				out, errOut, code := runKura(t, base, nil, tt.args...)
				if code != tt.code || !strings.Contains(errOut, tt.stderr) || out != "" {
					t.Errorf("got exit %d, stdout %q, stderr %q; want %d and %q", code, out, errOut, tt.code, tt.stderr)
				}
				if got := lastSeq(t, c); got != seq {
					t.Errorf("last_event_seq %d -> %d, want nothing written", seq, got)
				}
			})
		}
	})
}

func lastSeq(t *testing.T, c *client.Client) int64 {
	t.Helper()
	info, err := c.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info.LastEventSeq
}

// TestE2E_ContextTamperedInTransit puts a proxy that rewrites one summary
// between kura and a real kurad: the digest no longer matches, and kura
// must refuse the answer rather than print it.
func TestE2E_ContextTamperedInTransit(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	contextScope(t, base)
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		resp.Body.Close()
		body = bytes.ReplaceAll(body, []byte("payments retry thrice"), []byte("payments never retry!"))
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)

	for _, args := range [][]string{
		{"context", "compile", "acme"},
		{"context", "compile", "acme", "--json"},
		{"context", "preview", "acme"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, errOut, code := runKura(t, srv.URL, nil, args...)
			if code != exitFail || out != "" || !strings.Contains(errOut, "does not match its own digest") || !strings.Contains(errOut, "digest: stored ") {
				t.Errorf("got exit %d, stdout %q, stderr %q; want exit 1, nothing printed and the digest mismatch", code, out, errOut)
			}
		})
	}
}

// TestContextFlags parses context command lines with their real flag sets.
func TestContextFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		command string
		args    []string
		want    client.ContextRequest
	}{
		{"context preview", []string{"acme"}, client.ContextRequest{}},
		{"context preview", []string{"--query", "retry policy", "acme", "--budget", "800", "--kind", "fact", "--kind", "decision", "--max-per-bucket=3"},
			client.ContextRequest{Query: "retry policy", BudgetBytes: 800, Kinds: []string{"fact", "decision"}, MaxPerBucket: new(3)}},
		// 0 keeps none: it is sent, unlike a flag left out.
		{"context preview", []string{"acme", "--max-per-bucket", "0"}, client.ContextRequest{MaxPerBucket: new(0)}},
		{"context preview", []string{"acme", "--max-trace", "0"}, client.ContextRequest{MaxTrace: new(0)}},
		{"context preview", []string{"acme", "--max-trace=25"}, client.ContextRequest{MaxTrace: new(25)}},
		{"context compile", []string{"acme", "--as-of", "2026-01-02T03:04:05Z", "--target-file", "a.go", "--target-file", "b.go", "--no-redact", "--idempotency-key", "k"},
			client.ContextRequest{AsOf: "2026-01-02T03:04:05Z", TargetFiles: []string{"a.go", "b.go"}, Redact: new(false)}},
	}
	for _, tt := range tests {
		t.Run(tt.command+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet(tt.command, flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			f := registerContextFlags(fs)
			if tt.command == "context compile" {
				idempotencyFlag(fs)
			}
			ordered, err := reorderArgs(fs, tt.args)
			if err == nil {
				err = fs.Parse(ordered)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fs.Args(); len(got) != 1 || got[0] != "acme" {
				t.Errorf("got positionals %q, want [acme]", got)
			}
			got, _ := json.Marshal(f.request())
			want, _ := json.Marshal(tt.want)
			if !bytes.Equal(got, want) {
				t.Errorf("got request %s, want %s", got, want)
			}
		})
	}
}
