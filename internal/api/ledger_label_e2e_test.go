package api_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/keys"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/kurahash"
)

// TestLedger_ControlCharacterLabels (issue 38): the ledger hash frames its
// label with newlines, so a label "morning\nT" with created_at U hashes as
// label "morning" with created_at "T\nU", and the one signature covers
// both. kurad refuses control characters in a new label (POST /v1/ledgers
// and an import), changing nothing; a ledger stored with one before (its
// hash and signature right for its fields) is not verified by kurad
// (GET .../verify) nor by the Go client (kura verify --local), which name
// the label, while its hash and signature still match.
func TestLedger_ControlCharacterLabels(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{})
	c := &apiClient{tb: t, base: d.BaseURL()}
	rec := decode[kura.Record](t, c.mustPost("/v1/records", `{"type":"agent.thought","content":"x","author_id":"agent:bmo"}`, 201))

	before := c.state()
	for _, label := range []string{"morning\n2026-11-21T09:00:04.000000000Z", "a\rb", "tab\there", "\u001b[2Jclear", "nul\u0000", "del\u007f", "nel\u0085", "\u009b31m"} {
		body, _ := json.Marshal(map[string]any{"label": label, "parent_ids": []string{}, "record_ids": []string{rec.ID}})
		st, m, raw := c.post("/v1/ledgers", string(body))
		e, _ := m["error"].(map[string]any)
		details, _ := e["details"].(map[string]any)
		if st != 400 || e["code"] != "invalid_argument" || details["field"] != "label" {
			t.Errorf("label %q: %d %s, want 400 invalid_argument on label", label, st, raw)
		}
		imp, _ := json.Marshal(map[string]any{"records": []any{}, "sessions": []any{}, "ledgers": []any{map[string]any{
			"id": "01a1fd60-0000-7000-8000-000000000001", "hash": strings.Repeat("0", 64), "root_hash": strings.Repeat("0", 64),
			"label": label, "parent_ids": []string{}, "record_ids": []string{}, "record_count": 0,
			"created_at": "2026-11-21T09:00:04.000000000Z", "signature": ""}}})
		if st, _, raw := c.post("/v1/admin/import", string(imp)); st != 400 || !strings.Contains(string(raw), `"field":"label"`) {
			t.Errorf("import of a ledger labelled %q: %d %s, want 400 on label", label, st, raw)
		}
	}
	if after := c.state(); after != before {
		t.Errorf("refused ledgers changed kurad: %s -> %s", before, after)
	}
	// Everything else a label may hold still goes: commas, punctuation,
	// any script, emoji (bidi marks are not control characters).
	fine := decode[kura.Ledger](t, c.mustPost("/v1/ledgers", `{"label":"morning, 2026 — é 東 😀 \u202e","record_ids":["`+rec.ID+`"]}`, 201))
	if v := decode[kura.Verification](t, c.mustGet("/v1/ledgers/"+fine.ID+"/verify")); !v.OK {
		t.Fatalf("a ledger with an ordinary label: %+v", v)
	}

	// A ledger written before the rule: its label holds a newline, its
	// hash and signature are what kurad then made of them.
	old := decode[kura.Ledger](t, c.mustPost("/v1/ledgers", `{"label":"morning","record_ids":["`+rec.ID+`"]}`, 201))
	label := "morning\n" + old.CreatedAt
	hash := kurahash.LedgerHash(old.RootHash, old.ParentHashes, label, old.CreatedAt)
	key, err := keys.Load(d.Config.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	sig := hex.EncodeToString(ed25519.Sign(key, kurahash.LedgerSigningMessage(hash)))
	db := d.RawDB(t)
	defer db.Close()
	if _, err := db.Exec("UPDATE ledgers SET label = ?, hash = ?, signature = ? WHERE id = ?", label, hash, sig, old.ID); err != nil {
		t.Fatal(err)
	}
	fields := func(ms []kura.Mismatch) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Field)
		}
		return out
	}
	v := decode[kura.Verification](t, c.mustGet("/v1/ledgers/"+old.ID+"/verify"))
	if v.OK || !slices.Equal(fields(v.Mismatches), []string{"label"}) || !v.SignatureOK || v.ComputedHash != hash {
		t.Errorf("kurad's verify of a ledger labelled %q: ok %v, mismatches %+v, signature ok %v; want only the label refused, hash and signature matching",
			label, v.OK, v.Mismatches, v.SignatureOK)
	}
	info, err := client.New(d.BaseURL()).Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	lv, err := client.New(d.BaseURL()).VerifyLedgerLocally(t.Context(), old.ID, info.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if lv.OK || !slices.Equal(fields(lv.Mismatches), []string{"label"}) {
		t.Errorf("Go client's local verify: ok %v, mismatches %+v, want the label refused alone", lv.OK, lv.Mismatches)
	}
}
