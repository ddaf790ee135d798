package api_test

import (
	"encoding/json"
	"testing"
)

// TestLedger_EmptyListsRecordIDs: a ledger of no records says so with
// "record_ids":[] wherever a ledger is served with its records (the create
// answer, its idempotent replay, GET), as API.md lists the field; only the
// session log leaves record_ids out, for every ledger, as documented.
func TestLedger_EmptyListsRecordIDs(t *testing.T) {
	t.Parallel()
	c, _ := newDaemon(t)
	raw := func(what string, st int, b []byte, want int) map[string]json.RawMessage {
		t.Helper()
		if st != want {
			t.Fatalf("%s: %d %s, want %d", what, st, b, want)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %s: %v", what, b, err)
		}
		return m
	}
	checkIDs := func(what string, m map[string]json.RawMessage) {
		t.Helper()
		if got, ok := m["record_ids"]; !ok || string(got) != "[]" {
			t.Errorf("%s: record_ids %s (present %v), want []", what, got, ok)
		}
	}

	st, _, b := c.do("POST", "/v1/ledgers", "application/json", []byte(`{"label":"empty"}`))
	created := raw("POST /v1/ledgers", st, b, 201)
	checkIDs("POST /v1/ledgers", created)
	var id string
	json.Unmarshal(created["id"], &id)

	st, _, b = c.do("GET", "/v1/ledgers/"+id, "", nil)
	checkIDs("GET /v1/ledgers/{id}", raw("GET /v1/ledgers/{id}", st, b, 200))

	// The stored answer of an idempotent create is the same.
	st, _, b = c.raw("POST", "/v1/ledgers", `{"label":"empty-again"}`, map[string]string{"Idempotency-Key": "empty-1", "Content-Type": "application/json"})
	checkIDs("POST with a key", raw("POST with a key", st, b, 201))
	st, _, b = c.raw("POST", "/v1/ledgers", `{"label":"empty-again"}`, map[string]string{"Idempotency-Key": "empty-1", "Content-Type": "application/json"})
	checkIDs("POST replayed", raw("POST replayed", st, b, 201))

	// The session log lists ledgers without record ids, empty or not.
	s := decode[struct{ ID string }](t, c.mustPost("/v1/sessions", `{"project":"hashi","name":"empty"}`, 201))
	c.mustPost("/v1/sessions/"+s.ID+"/head", `{"ledger_id":"`+id+`","expected_head":null}`, 200)
	log := decode[struct{ Ledgers []map[string]json.RawMessage }](t, c.mustGet("/v1/sessions/"+s.ID+"/log"))
	if len(log.Ledgers) != 1 {
		t.Fatalf("log: %d ledgers, want 1", len(log.Ledgers))
	}
	if got, ok := log.Ledgers[0]["record_ids"]; ok {
		t.Errorf("log: record_ids %s, want none (documented: read the ledger)", got)
	}
	if string(log.Ledgers[0]["record_count"]) != "0" {
		t.Errorf("log: record_count %s, want 0", log.Ledgers[0]["record_count"])
	}
}
