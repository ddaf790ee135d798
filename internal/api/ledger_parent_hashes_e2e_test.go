package api_test

import (
	"slices"
	"testing"

	"github.com/kura-memory/kura/kurahash"
)

// TestLedger_ParentHashes: every answer that carries a ledger lists its
// parents' hashes in parent_ids order (the create answer, GET, the session
// log), and they are what the ledger hash commits to, so a client
// recomputes the hash from the ledger alone.
func TestLedger_ParentHashes(t *testing.T) {
	t.Parallel()
	c, _ := newDaemon(t)
	type ledger struct {
		ID, Hash, Label string
		RootHash        string   `json:"root_hash"`
		CreatedAt       string   `json:"created_at"`
		ParentIDs       []string `json:"parent_ids"`
		ParentHashes    []string `json:"parent_hashes"`
	}
	a := decode[ledger](t, c.mustPost("/v1/ledgers", `{"label":"a"}`, 201))
	b := decode[ledger](t, c.mustPost("/v1/ledgers", `{"label":"b"}`, 201))
	m := decode[ledger](t, c.mustPost("/v1/ledgers", `{"label":"merge","parent_ids":["`+b.ID+`","`+a.ID+`"]}`, 201))
	if a.ParentHashes == nil || len(a.ParentHashes) != 0 {
		t.Errorf("a ledger with no parents: parent_hashes %v, want []", a.ParentHashes)
	}
	want := []string{b.Hash, a.Hash}
	if !slices.Equal(m.ParentHashes, want) {
		t.Fatalf("create answer: parent_hashes %v, want %v (parent_ids order)", m.ParentHashes, want)
	}
	got := decode[ledger](t, c.mustGet("/v1/ledgers/"+m.ID))
	if !slices.Equal(got.ParentHashes, want) {
		t.Fatalf("GET: parent_hashes %v, want %v", got.ParentHashes, want)
	}
	if h := kurahash.LedgerHash(got.RootHash, got.ParentHashes, got.Label, got.CreatedAt); h != got.Hash {
		t.Fatalf("hash from the ledger alone %s, ledger says %s", h, got.Hash)
	}

	s := decode[struct{ ID string }](t, c.mustPost("/v1/sessions", `{"project":"hashi","name":"parents"}`, 201))
	c.mustPost("/v1/sessions/"+s.ID+"/head", `{"ledger_id":"`+m.ID+`","expected_head":null}`, 200)
	log := decode[struct{ Ledgers []ledger }](t, c.mustGet("/v1/sessions/"+s.ID+"/log"))
	if len(log.Ledgers) < 2 {
		t.Fatalf("log: %d ledgers", len(log.Ledgers))
	}
	if !slices.Equal(log.Ledgers[0].ParentHashes, want) {
		t.Errorf("log head: parent_hashes %v, want %v", log.Ledgers[0].ParentHashes, want)
	}
	if l := log.Ledgers[1]; l.ParentHashes == nil || len(l.ParentHashes) != 0 {
		t.Errorf("log first parent (no parents): parent_hashes %v, want []", l.ParentHashes)
	}
}
