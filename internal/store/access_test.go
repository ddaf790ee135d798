package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// Memory kurad packs into a context ledger is withheld from readers who do
// not hold its scope, whether the record names the scope itself or, packed
// before kurad wrote that marker, only its bundle; no one else's record is
// withheld for naming a scope.
func TestAccess_PackedMemoryByScope(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	if _, _, err := db.PutNode(ctx, "alpha", &kura.NodeInput{Writer: root, Kind: "fact", ID: "f", Summary: ptr("alpha's secret"), Lifecycle: ptr("active"), Authority: ptr("trusted")}); err != nil {
		t.Fatal(err)
	}
	s, err := db.CreateSession(ctx, &kura.SessionInput{Project: "p", Name: "s", Scope: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	turn, err := db.OpenTurn(ctx, s.ID, &kura.TurnOpenInput{Instruction: &kura.RecordInput{Type: "task.instruction", AuthorID: "user:oles", Content: json.RawMessage(`"go"`)},
		Memory: &kura.MemoryRequest{}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := db.LedgerRecords(ctx, turn.ContextLedgerID, -1, 10)
	if err != nil || len(recs) != 2 {
		t.Fatalf("context ledger: %v %v", recs, err)
	}
	packed := recs[1]
	if packed.AuthorID != "sys:kurad" || packed.Meta()["scope"] != "alpha" || packed.Meta()["bundle_id"] != *turn.ContextBundleID {
		t.Fatalf("packed record %+v, want sys:kurad naming scope alpha and the bundle", packed)
	}
	// As kurad wrote packed memory before the scope marker: the bundle only.
	legacy, err := db.CreateRecord(ctx, &kura.RecordInput{Type: "memory.fact", AuthorID: "sys:kurad", Content: json.RawMessage(`"old packing"`),
		Metadata: map[string]string{"bundle_id": *turn.ContextBundleID}})
	if err != nil {
		t.Fatal(err)
	}
	forged, err := db.CreateRecord(ctx, &kura.RecordInput{Type: "agent.thought", AuthorID: "agent:x", Content: json.RawMessage(`"mine"`),
		Metadata: map[string]string{"scope": "alpha"}})
	if err != nil {
		t.Fatal(err)
	}
	plain := recs[0]
	ids := []string{packed.ID, legacy.ID, forged.ID, plain.ID, "0190aaaa-0000-7000-8000-000000000000"}
	for _, tc := range []struct {
		name string
		rd   kura.Reader
		want []string
	}{
		{"unlimited", kura.Reader{Identity: "user:root"}, []string{packed.ID, legacy.ID, forged.ID, plain.ID}},
		{"scope alpha", kura.Reader{Identity: "agent:a", Scopes: []string{"alpha"}}, []string{packed.ID, legacy.ID, forged.ID, plain.ID}},
		{"scope beta", kura.Reader{Identity: "agent:b", Scopes: []string{"beta"}}, []string{forged.ID, plain.ID}},
		{"no scope", kura.Reader{Identity: "agent:b", Scopes: []string{}}, []string{forged.ID, plain.ID}},
		{"project p, scope beta", kura.Reader{Identity: "agent:b", Projects: []string{"p"}, Scopes: []string{"beta"}}, []string{plain.ID}},
		{"project p, scope alpha", kura.Reader{Identity: "agent:b", Projects: []string{"p"}, Scopes: []string{"alpha"}}, []string{packed.ID, plain.ID}},
		{"project q", kura.Reader{Identity: "agent:x", Projects: []string{"q"}}, []string{forged.ID}},
	} {
		vis, err := db.RecordsVisible(ctx, ids, tc.rd)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, id := range ids {
			if vis[id] {
				got = append(got, id)
			}
			if one, err := db.RecordVisible(ctx, id, tc.rd); err != nil || one != vis[id] {
				t.Errorf("%s: RecordVisible(%s) %v %v, RecordsVisible says %v", tc.name, id, one, err, vis[id])
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: visible %v, want %v", tc.name, got, tc.want)
		}
	}

	list, _, err := db.ListRecords(ctx, kura.RecordFilter{AuthorID: "sys:kurad", Limit: 100, Scopes: []string{"beta"}})
	if err != nil || len(list) != 0 {
		t.Errorf("listing for scope beta: %v %v, want no packed memory", list, err)
	}
	list, _, err = db.ListRecords(ctx, kura.RecordFilter{AuthorID: "sys:kurad", Limit: 100, Scopes: []string{"alpha"}})
	if err != nil || len(list) != 2 {
		t.Errorf("listing for scope alpha: %v %v, want both packed records", list, err)
	}

	var buf bytes.Buffer
	buf.WriteByte('[')
	if err := db.HydrateLedger(ctx, turn.ContextLedgerID, -1, 10, []string{"beta"}, &buf, func(int) error { return nil }); err != nil {
		t.Fatal(err)
	}
	buf.WriteByte(']')
	var got []kura.Record
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("hydrate for scope beta: %v: %s", err, buf.Bytes())
	}
	if len(got) != 2 || got[0].Withheld || !got[1].Withheld || string(got[1].Content) != "null" ||
		got[1].ContentHash != packed.ContentHash || got[1].Seal != packed.Seal || got[1].Meta()["scope"] != "alpha" {
		t.Errorf("hydrate for scope beta: %s, want the packed record withheld with its hashes and metadata", buf.Bytes())
	}
	// The hand-written encoder writes a withheld record byte for byte as
	// SQLite assembles it.
	if enc, _ := json.Marshal(got[1]); !bytes.Contains(buf.Bytes(), enc) {
		t.Errorf("hydrate wrote\n%s\nkura.Record encodes\n%s", buf.Bytes(), enc)
	}
}
