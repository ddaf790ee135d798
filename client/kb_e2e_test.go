package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kb/kbtest"
)

func kbIdents(p *client.KBPage) []string {
	out := []string{}
	for _, e := range p.Entries {
		out = append(out, e.Identifier)
	}
	return out
}

func TestE2E_KB(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t)
	for _, in := range kbtest.Entries {
		e, created, err := c.PutKBEntry(ctx, "knowledge", in)
		if err != nil || !created || e.Version != 1 || e.Identifier != in.Identifier {
			t.Fatalf("put %q: %+v, created %v, %v", in.Identifier, e, created, err)
		}
	}

	t.Run("SpecExamples", func(t *testing.T) {
		for _, ex := range kbtest.Examples {
			q := client.KBQuery{Identifier: ex.Query.Identifier, Key: ex.Query.Key, AnyKeys: ex.Query.AnyKeys, AllKeys: ex.Query.AllKeys}
			p, err := c.QueryKB(ctx, "knowledge", q)
			if err != nil {
				t.Fatalf("%s: %v", ex.Name, err)
			}
			want := []string{}
			for _, i := range ex.Want {
				want = append(want, kbtest.Entries[i].Identifier)
			}
			if got := kbIdents(p); !slices.Equal(got, want) || p.Count != len(want) {
				t.Errorf("%s: got %q (count %d), want %q", ex.Name, got, p.Count, want)
			}
		}
		// "Any of no keys" matches nothing, without asking.
		if p, err := c.QueryKB(ctx, "knowledge", client.KBQuery{AnyKeys: []string{}}); err != nil || p.Count != 0 {
			t.Errorf("empty any-keys: %+v, %v", p, err)
		}
		if p, err := c.QueryKB(ctx, "knowledge", client.KBQuery{AllKeys: []string{}}); err != nil || p.Count != 2 {
			t.Errorf("empty all-keys: %+v, %v", p, err)
		}
	})

	t.Run("Lookup", func(t *testing.T) {
		got, err := c.LookupKB(ctx, "knowledge", "", "Uniswap", 0)
		want := "--- Uniswap contract addresses on Ethereum mainnet. ---\nPool: 0x12312313, Router: 0x456456456, Factory: 0x789789789\n\n"
		if err != nil || got != want {
			t.Errorf("lookup Uniswap: got %q, %v", got, err)
		}
		var raw json.RawMessage
		got, err = c.LookupKB(client.WithRawResponse(ctx, &raw), "knowledge", "", "Solana", 0)
		if err != nil || got != "No knowledge found for: Solana" || string(raw) != got {
			t.Errorf("lookup Solana: got %q (raw %q), %v", got, raw, err)
		}
		_, err = c.LookupKB(ctx, "knowledge", "", "", 0)
		if e := wantCode(t, err, client.EInvalid); e.Details["field"] != "q" {
			t.Errorf("empty question: %+v", e)
		}
		// A question in a model's words: nothing matches strictly, the
		// ranking finds the entry.
		q := "what is the uniswap router address"
		if got, err := c.LookupKBMode(ctx, "knowledge", "", q, client.KBLookupStrict, 0); err != nil || got != "No knowledge found for: "+q {
			t.Errorf("strict lookup %q: got %q, %v", q, got, err)
		}
		if got, err := c.LookupKB(ctx, "knowledge", "", q, 0); err != nil || !strings.Contains(got, "--- "+kbtest.Uniswap.Identifier+" ---") {
			t.Errorf("lookup %q: got %q, %v", q, got, err)
		}
		page, err := c.SearchKB(ctx, "knowledge", "", q, 0)
		if err != nil || len(page.Entries) == 0 || page.Entries[0].Identifier != kbtest.Uniswap.Identifier || page.Entries[0].Score <= 0 || len(page.Entries[0].Reasons) == 0 {
			t.Errorf("search %q: %+v, %v", q, page, err)
		}
		_, err = c.SearchKB(ctx, "knowledge", "", " ", 0)
		if e := wantCode(t, err, client.EInvalid); e.Details["field"] != "q" {
			t.Errorf("blank search: %+v", e)
		}
	})

	uni := kbtest.Uniswap.Identifier
	t.Run("UpdateDeleteHistory", func(t *testing.T) {
		v := kbtest.UpdatedValue
		e, err := c.UpdateKBEntry(ctx, "knowledge", client.KBPatch{Identifier: uni, Value: &v})
		if err != nil || e.Value != v || e.Version != 2 || !slices.Equal(e.Keys, kbtest.Uniswap.Keys) {
			t.Fatalf("update: %+v, %v", e, err)
		}
		e, err = c.UpdateKBEntry(ctx, "knowledge", client.KBPatch{Identifier: uni, Keys: kbtest.UpdatedKeys})
		if err != nil || e.Value != v || !slices.Equal(e.Keys, kbtest.UpdatedKeys) {
			t.Fatalf("update keys: %+v, %v", e, err)
		}
		// An empty, non-nil key list clears the keys (it is sent as []).
		e, err = c.UpdateKBEntry(ctx, "knowledge", client.KBPatch{Identifier: uni, Keys: []string{}})
		if err != nil || len(e.Keys) != 0 || e.Value != v {
			t.Fatalf("clear keys: %+v, %v", e, err)
		}
		_, err = c.UpdateKBEntry(ctx, "knowledge", client.KBPatch{Identifier: "ghost", Value: &v})
		wantCode(t, err, client.ENotFound)
		got, err := c.GetKBEntry(ctx, "knowledge", "", uni)
		if err != nil || got.ID != e.ID || got.Version != 4 {
			t.Fatalf("get: %+v, %v", got, err)
		}
		if err := c.DeleteKBEntry(ctx, "knowledge", "", uni); err != nil {
			t.Fatal(err)
		}
		wantCode(t, c.DeleteKBEntry(ctx, "knowledge", "", uni), client.ENotFound)
		_, err = c.GetKBEntry(ctx, "knowledge", "", uni)
		wantCode(t, err, client.ENotFound)
		// Back again: a new entry (201) with the next version.
		e2, created, err := c.PutKBEntry(ctx, "knowledge", kbtest.Uniswap)
		if err != nil || !created || e2.Version != 6 || e2.ID == e.ID {
			t.Fatalf("re-insert: %+v, created %v, %v", e2, created, err)
		}
		_, created, err = c.PutKBEntry(ctx, "knowledge", kbtest.Uniswap)
		if err != nil || created {
			t.Fatalf("replace: created %v, %v", created, err)
		}
		h, err := c.KBHistory(ctx, "knowledge", "", uni, 0, "")
		if err != nil {
			t.Fatal(err)
		}
		var ops []string
		for _, v := range h.Versions {
			ops = append(ops, v.Op)
		}
		if want := []string{"put", "update", "update_keys", "update_keys", "delete", "put", "put"}; !slices.Equal(ops, want) || h.Versions[4].Value != nil {
			t.Errorf("history ops: got %v, want %v", ops, want)
		}
		p1, err := c.KBHistory(ctx, "knowledge", "", uni, 4, "")
		if err != nil || len(p1.Versions) != 4 || p1.NextCursor == "" {
			t.Fatalf("history page 1: %+v, %v", p1, err)
		}
		p2, err := c.KBHistory(ctx, "knowledge", "", uni, 4, p1.NextCursor)
		if err != nil || len(p2.Versions) != 3 || p2.Versions[0].Version != 5 || p2.NextCursor != "" {
			t.Errorf("history page 2: %+v, %v", p2, err)
		}
		_, err = c.KBHistory(ctx, "knowledge", "", "ghost", 0, "")
		wantCode(t, err, client.ENotFound)
	})

	t.Run("ScopesBatchStatsClear", func(t *testing.T) {
		b, err := c.PutKBEntries(ctx, "knowledge", []client.KBEntryInput{
			{Scope: "defi", Identifier: "Uniswap pools", Keys: []string{"Uniswap", "DEX"}, Value: "Pool: 0x123..."},
			{Scope: "nft", Identifier: "OpenSea collections", Keys: []string{"OpenSea", "NFT", "a,b"}, Value: "Top collections: ..."},
			{Scope: "defi", Identifier: "Uniswap pools", Keys: []string{"Uniswap", "DEX"}, Value: "Pool: 0x124"},
		})
		if err != nil || b.Created != 2 || b.Replaced != 1 || len(b.Entries) != 3 {
			t.Fatalf("batch: %+v, %v", b, err)
		}
		k := "Uniswap"
		for scope, want := range map[string]int{"defi": 1, "nft": 0, "": 1} {
			if p, err := c.QueryKB(ctx, "knowledge", client.KBQuery{Scope: scope, Key: &k}); err != nil || p.Count != want {
				t.Errorf("from_key(Uniswap) in %q: %+v, %v, want %d", scope, p, err, want)
			}
		}
		// A single key holding a comma is one key.
		if p, err := c.QueryKB(ctx, "knowledge", client.KBQuery{Scope: "nft", AnyKeys: []string{"a,b"}}); err != nil || p.Count != 1 {
			t.Errorf("any-keys [a,b]: %+v, %v", p, err)
		}
		if p, err := c.QueryKB(ctx, "knowledge", client.KBQuery{Scope: "nft", AllKeys: []string{"a,b", "nft"}}); err != nil || p.Count != 1 {
			t.Errorf("all-keys [a,b nft]: %+v, %v", p, err)
		}
		st, err := c.KBStats(ctx, "knowledge", "", 1, "")
		if err != nil || st.Count != 2 || len(st.Identifiers) != 1 || st.NextCursor == "" {
			t.Fatalf("stats page 1: %+v, %v", st, err)
		}
		st2, err := c.KBStats(ctx, "knowledge", "", 1, st.NextCursor)
		if err != nil || len(st2.Identifiers) != 1 || st2.NextCursor != "" || st2.Identifiers[0] != uni {
			t.Errorf("stats page 2: %+v, %v", st2, err)
		}
		n, err := c.ClearKB(ctx, "knowledge", "defi")
		if err != nil || n != 1 {
			t.Fatalf("clear: %d, %v", n, err)
		}
		if st, _ := c.KBStats(ctx, "knowledge", "nft", 0, ""); st.Count != 1 {
			t.Errorf("nft after clearing defi: %+v", st)
		}
		_, _, err = c.PutKBEntry(ctx, "knowledge", client.KBEntryInput{Identifier: strings.Repeat("é", 513)})
		if e := wantCode(t, err, client.EInvalid); e.Details["field"] != "identifier" {
			t.Errorf("513 characters: %+v", e)
		}
	})
}

func TestE2E_KBIdempotentRetry(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t)
	kctx := client.WithIdempotencyKey(ctx, "kb-put-1")
	in := client.KBEntryInput{Identifier: "retried", Value: "v"}
	e1, created1, err := c.PutKBEntry(kctx, "k", in)
	if err != nil || !created1 {
		t.Fatalf("first: %v", err)
	}
	// The replay answers the stored 201 again: created stays true.
	e2, created2, err := c.PutKBEntry(kctx, "k", in)
	if err != nil || !created2 || e2.Version != 1 || e2.ID != e1.ID {
		t.Fatalf("retry: %+v, created %v, %v", e2, created2, err)
	}
	dctx := client.WithIdempotencyKey(ctx, "kb-del-1")
	if err := c.DeleteKBEntry(dctx, "k", "", "retried"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteKBEntry(dctx, "k", "", "retried"); err != nil {
		t.Fatalf("retried delete: %v, want the first answer again", err)
	}
	wantCode(t, c.DeleteKBEntry(dctx, "k", "", "another"), client.EConflict)
}

// TestClient_KBRequests checks what goes on the wire.
func TestClient_KBRequests(t *testing.T) {
	t.Parallel()
	type seen struct{ method, uri, key, body string }
	var got seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = seen{r.Method, r.URL.RequestURI(), r.Header.Get("Idempotency-Key"), strings.TrimSpace(string(b))}
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c := client.New(srv.URL)
	ctx := client.WithIdempotencyKey(context.Background(), "k-1")
	s := func(v string) *string { return &v }
	tests := []struct {
		name string
		call func() error
		want seen
	}{
		{"PutKBEntry", func() error {
			_, _, err := c.PutKBEntry(ctx, "kb", client.KBEntryInput{Identifier: "a b", Value: "v"})
			return err
		}, seen{"PUT", "/v1/kb/kb/entries", "k-1", `{"identifier":"a b","value":"v"}`}},
		{"PutKBEntryScopeKeys", func() error {
			_, _, err := c.PutKBEntry(ctx, "kb", client.KBEntryInput{Scope: "s", Identifier: "x", Keys: []string{}})
			return err
		}, seen{"PUT", "/v1/kb/kb/entries", "k-1", `{"scope":"s","identifier":"x","keys":[],"value":""}`}},
		{"PutKBEntries", func() error {
			_, err := c.PutKBEntries(ctx, "kb", []client.KBEntryInput{{Identifier: "x", Keys: []string{"K"}}})
			return err
		}, seen{"PUT", "/v1/kb/kb/entries/batch", "k-1", `{"entries":[{"identifier":"x","keys":["K"],"value":""}]}`}},
		{"UpdateKBEntryKeys", func() error {
			_, err := c.UpdateKBEntry(ctx, "kb", client.KBPatch{Identifier: "x", Keys: []string{}})
			return err
		}, seen{"PATCH", "/v1/kb/kb/entries", "k-1", `{"identifier":"x","keys":[]}`}},
		{"UpdateKBEntryValue", func() error {
			_, err := c.UpdateKBEntry(ctx, "kb", client.KBPatch{Scope: "s", Identifier: "x", Value: s("")})
			return err
		}, seen{"PATCH", "/v1/kb/kb/entries", "k-1", `{"scope":"s","identifier":"x","value":""}`}},
		{"DeleteKBEntry", func() error { return c.DeleteKBEntry(ctx, "kb", "s", "a&b") },
			seen{"DELETE", "/v1/kb/kb/entries?identifier=a%26b&scope=s", "k-1", ""}},
		{"ClearKB", func() error { _, err := c.ClearKB(ctx, "kb", ""); return err },
			seen{"DELETE", "/v1/kb/kb/entries?all=true", "k-1", ""}},
		{"QueryKB", func() error {
			_, err := c.QueryKB(ctx, "kb", client.KBQuery{Scope: "s", Identifier: s("a b"), Key: s("K"), AnyKeys: []string{"x", "y"}, AllKeys: []string{"a,b"}, Limit: 5, Cursor: "c"})
			return err
		}, seen{"GET", "/v1/kb/kb/entries?all_keys=a%2Cb&all_keys=a%2Cb&any_keys=x&any_keys=y&cursor=c&identifier=a+b&key=K&limit=5&scope=s", "", ""}},
		{"GetKBEntry", func() error { _, err := c.GetKBEntry(ctx, "kb", "", "Exact Id"); return err },
			seen{"GET", "/v1/kb/kb/entries?exact_identifier=Exact+Id&limit=1", "", ""}},
		{"KBStats", func() error { _, err := c.KBStats(ctx, "kb", "s", 10, "c"); return err },
			seen{"GET", "/v1/kb/kb/stats?cursor=c&limit=10&scope=s", "", ""}},
		{"KBHistory", func() error { _, err := c.KBHistory(ctx, "kb", "", "x", 0, ""); return err },
			seen{"GET", "/v1/kb/kb/history?identifier=x", "", ""}},
		{"LookupKB", func() error { _, err := c.LookupKB(ctx, "kb", "s", "what is uniswap?", 3); return err },
			seen{"GET", "/v1/kb/kb/lookup?limit=3&q=what+is+uniswap%3F&scope=s", "", ""}},
		{"LookupKBMode", func() error {
			_, err := c.LookupKBMode(ctx, "kb", "", "uniswap", client.KBLookupStrict, 0)
			return err
		}, seen{"GET", "/v1/kb/kb/lookup?mode=strict&q=uniswap", "", ""}},
		{"SearchKB", func() error { _, err := c.SearchKB(ctx, "kb", "s", "router address", 5); return err },
			seen{"GET", "/v1/kb/kb/search?limit=5&q=router+address&scope=s", "", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = seen{}
			if err := tt.call(); err != nil && tt.name != "GetKBEntry" {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestClient_KBMissingArgs checks that an empty name or identifier fails
// before any request.
func TestClient_KBMissingArgs(t *testing.T) {
	t.Parallel()
	c := client.New("http://127.0.0.1:1") // nothing must be dialed
	ctx := context.Background()
	checks := map[string]error{}
	_, _, checks["PutKBEntry"] = c.PutKBEntry(ctx, "", client.KBEntryInput{})
	_, checks["PutKBEntries"] = c.PutKBEntries(ctx, " ", nil)
	_, checks["UpdateKBEntry"] = c.UpdateKBEntry(ctx, "", client.KBPatch{})
	checks["DeleteKBEntry"] = c.DeleteKBEntry(ctx, "kb", "", "")
	_, checks["ClearKB"] = c.ClearKB(ctx, "", "")
	_, checks["QueryKB"] = c.QueryKB(ctx, "", client.KBQuery{})
	_, checks["GetKBEntry"] = c.GetKBEntry(ctx, "kb", "", "")
	_, checks["KBStats"] = c.KBStats(ctx, "", "", 0, "")
	_, checks["KBHistory"] = c.KBHistory(ctx, "kb", "", "", 0, "")
	_, checks["LookupKB"] = c.LookupKB(ctx, "", "", "q", 0)
	_, checks["SearchKB"] = c.SearchKB(ctx, "", "", "q", 0)
	for name, err := range checks {
		if !client.IsCode(err, client.EInvalid) {
			t.Errorf("%s: got %v, want invalid_argument", name, err)
		}
	}
}
