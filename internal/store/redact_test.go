package store_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/sqlitetest"
	"github.com/kura-memory/kura/internal/store"
)

// fileHolds reports which of the database's files hold marker.
func fileHolds(t *testing.T, path, marker string) []string {
	t.Helper()
	var in []string
	for _, f := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(marker)) {
			in = append(in, filepath.Base(f))
		}
	}
	return in
}

func withIdemKey(key string) kura.WriteOption {
	return kura.KeepAnswer(&kura.Idempotency{Identity: "user:oles", Key: key, Fingerprint: "fp-" + key, Answer: func(v any, created bool) (int, []byte) {
		b, _ := json.Marshal(v)
		return 201, b
	}})
}

func TestStore_RedactRecord(t *testing.T) {
	t.Parallel()
	for _, size := range []struct {
		name string
		pad  int
	}{{"Small", 0}, {"Overflow", 12000}} { // beyond one page: overflow pages
		t.Run(size.name, func(t *testing.T) {
			ctx := context.Background()
			path := sqlitetest.File(t)
			db := mustOpenAt(t, path, nil)
			nonce := make([]byte, 8)
			rand.Read(nonce)
			marker := "KURA-SECRET-" + hex.EncodeToString(nonce)
			mustRecords(t, db, 20) // neighbours on the same pages

			// The record is written with an Idempotency-Key (the stored
			// answer holds its content), put in a ledger and appended to
			// a turn of a session.
			content := fmt.Sprintf(`{"text":"the key is %s","pad":%q}`, marker, strings.Repeat("x", size.pad))
			rec, err := db.CreateRecord(ctx, &kura.RecordInput{Type: "agent.thought", Content: json.RawMessage(content),
				AuthorID: "agent:bmo", Metadata: map[string]string{"project_id": "hashi"}}, withIdemKey("k-secret"))
			if err != nil {
				t.Fatal(err)
			}
			other := mustRecords(t, db, 2)
			l, err := db.CreateLedger(ctx, &kura.LedgerInput{Label: "holds-it", RecordIDs: []string{other[0].ID, rec.ID, other[1].ID, rec.ID}})
			if err != nil {
				t.Fatal(err)
			}
			s, err := db.CreateSession(ctx, &kura.SessionInput{Project: "hashi", Name: "redact"})
			if err != nil {
				t.Fatal(err)
			}
			tr, err := db.OpenTurn(ctx, s.ID, &kura.TurnOpenInput{Instruction: &kura.RecordInput{Type: "task.instruction", Content: json.RawMessage(`"go"`), AuthorID: "user:oles"},
				Context: []kura.RecordRef{{RecordID: rec.ID}}}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.AppendTurn(ctx, tr.ID, &kura.TurnAppend{Records: []kura.RecordRef{{RecordID: rec.ID}}}); err != nil {
				t.Fatal(err)
			}
			closed, err := db.CloseTurn(ctx, tr.ID, &kura.TurnClose{Status: "complete"})
			if err != nil {
				t.Fatal(err)
			}
			holding := []string{l.ID, tr.ContextLedgerID, *closed.OutputLedgerID}
			// The test can fail: before the redaction the files hold it.
			if got := fileHolds(t, path, marker); len(got) == 0 {
				t.Fatalf("the marker is in no file before the redaction; the test would prove nothing")
			}
			eventsBefore := db.LastEventSeq()

			t.Run("BadInputChangesNothing", func(t *testing.T) {
				for _, tc := range []struct {
					id, reason, code string
				}{
					{rec.ID, "", kura.EInvalid},
					{rec.ID, "   ", kura.EInvalid},
					{rec.ID, strings.Repeat("r", kura.MaxRedactReason+1), kura.EInvalid},
					{rec.ID, "line\nbreak", kura.EInvalid},
					{"not-a-uuid", "leak", kura.EInvalid},
					{"01a1fdca-0000-7000-8000-0000000000ff", "leak", kura.ENotFound},
				} {
					_, err := db.RedactRecord(ctx, tc.id, "user:oles", &kura.RedactInput{Reason: tc.reason})
					if !kura.IsCode(err, tc.code) {
						t.Errorf("redact %q reason %q: got %v, want %s", tc.id, tc.reason, err, tc.code)
					}
				}
				if got, _ := db.GetRecord(ctx, rec.ID); got.Redacted || string(got.Content) != string(rec.Content) {
					t.Fatalf("got %s redacted=%v after refused redactions, want the content untouched", got.Content, got.Redacted)
				}
				if db.LastEventSeq() != eventsBefore {
					t.Fatalf("refused redactions appended events")
				}
			})

			res, err := db.RedactRecord(ctx, rec.ID, "user:oles", &kura.RedactInput{Reason: "leaked an API key"})
			if err != nil {
				t.Fatal(err)
			}
			if res.AlreadyRedacted || !res.Record.Redacted || string(res.Record.Content) != "null" || res.Record.ContentHash != rec.ContentHash || res.Record.Seal != rec.Seal {
				t.Fatalf("got %+v, want the record redacted with its hashes kept", res.Record)
			}
			if rd := res.Redaction; rd.By != "user:oles" || rd.Reason != "leaked an API key" || rd.At == "" || rd.Seq != eventsBefore+1 {
				t.Fatalf("got redaction %+v, want by user:oles, the reason, a time and event %d", rd, eventsBefore+1)
			}

			t.Run("FileBytes", func(t *testing.T) {
				if got := fileHolds(t, path, marker); len(got) > 0 {
					t.Fatalf("the marker is still in %v after the redaction", got)
				}
				if a, err := db.LookupIdempotency(ctx, "user:oles", "k-secret"); err != nil || a != nil {
					t.Fatalf("got stored answer %v (%v), want it purged", a, err)
				}
			})
			t.Run("Reads", func(t *testing.T) {
				for name, get := range map[string]func() (*kura.Record, error){
					"id":   func() (*kura.Record, error) { return db.GetRecord(ctx, rec.ID) },
					"hash": func() (*kura.Record, error) { return db.GetRecordByHash(ctx, rec.Hash) },
				} {
					r, err := get()
					if err != nil {
						t.Fatal(err)
					}
					if b := r.AppendJSON(nil); !bytes.Contains(b, []byte(`"content":null`)) || !bytes.Contains(b, []byte(`"redacted":true`)) {
						t.Errorf("by %s: got %s, want content null and redacted true", name, b)
					}
				}
				var buf bytes.Buffer
				if err := db.HydrateLedger(ctx, l.ID, -1, 100, nil, &buf, func(int) error { return nil }); err != nil {
					t.Fatal(err)
				}
				if n := strings.Count(buf.String(), `"content":null`); n != 2 || strings.Count(buf.String(), `"redacted":true`) != 2 || strings.Contains(buf.String(), marker) {
					t.Errorf("hydrate: got %d null contents in %s, want 2 redacted", n, buf.String())
				}
			})
			t.Run("LedgersStillVerify", func(t *testing.T) {
				for _, id := range holding {
					v, err := db.VerifyLedger(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					if !v.OK || len(v.Redacted) == 0 || v.Redacted[0] != rec.ID {
						t.Errorf("ledger %s: got ok=%v redacted=%v mismatches=%+v, want ok with the record listed as redacted", id, v.OK, v.Redacted, v.Mismatches)
					}
				}
				sv, err := db.VerifySession(ctx, s.ID, "")
				if err != nil {
					t.Fatal(err)
				}
				if !sv.OK || len(sv.Redacted) != 1 || sv.Redacted[0] != rec.ID {
					t.Errorf("session: got ok=%v redacted=%v problems=%+v, want ok and one redacted record", sv.OK, sv.Redacted, sv.Problems)
				}
				chk, err := db.VerifyAll(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(chk.FailedLedgers)+len(chk.FailedSessions) > 0 {
					t.Errorf("verify all: got %+v, want nothing failed", chk)
				}
			})
			t.Run("Event", func(t *testing.T) {
				page, err := db.ListEvents(ctx, kura.EventFilter{After: eventsBefore, Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Events) != 1 {
					t.Fatalf("got %d events, want 1", len(page.Events))
				}
				e := page.Events[0]
				if e.Type != "record.redacted" || e.Subject != "oclaw.v1.hashi.evt.record.redacted" || len(e.Refs) != 1 || e.Refs["record_id"] != rec.ID {
					t.Errorf("got event %+v, want record.redacted on hashi pointing at the record only", e)
				}
				rd, err := db.GetRedaction(ctx, rec.ID)
				if err != nil || rd.By != "user:oles" || rd.Reason != "leaked an API key" || rd.Seq != e.Seq {
					t.Errorf("got redaction %+v (%v), want who, why and the event's seq", rd, err)
				}
			})
			t.Run("BackupAndRestore", func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "backup")
				if _, err := db.Backup(ctx, dir); err != nil {
					t.Fatal(err)
				}
				if got := fileHolds(t, filepath.Join(dir, "kura.db"), marker); len(got) > 0 {
					t.Fatalf("the backup holds the content in %v", got)
				}
				rep, err := store.Restore(ctx, store.RestoreOptions{BackupDir: dir, DataDir: t.TempDir(), PublicKey: db.PublicKey()})
				if err != nil {
					t.Fatalf("restore of a backup holding a redacted record: %v", err)
				}
				if v := rep.Verification; v == nil || !v.OK || len(v.FailedLedgers)+len(v.FailedSessions) > 0 {
					t.Errorf("restore verification: got %+v, want ok", v)
				}
			})
			t.Run("Again", func(t *testing.T) {
				again, err := db.RedactRecord(ctx, rec.ID, "user:other", &kura.RedactInput{Reason: "twice"})
				if err != nil {
					t.Fatal(err)
				}
				if !again.AlreadyRedacted || again.Redaction.By != "user:oles" || again.Redaction.Reason != "leaked an API key" {
					t.Errorf("got %+v, want the first redaction back", again.Redaction)
				}
				if db.LastEventSeq() != eventsBefore+1 {
					t.Errorf("a second redaction appended an event")
				}
			})
			t.Run("RewriteIsDeduplicated", func(t *testing.T) {
				// Writing the same content again finds the redacted record:
				// the content does not come back.
				r, err := db.CreateRecord(ctx, &kura.RecordInput{Type: "agent.thought", Content: json.RawMessage(content), AuthorID: "agent:bmo"})
				if err != nil {
					t.Fatal(err)
				}
				if !r.Deduplicated || r.ID != rec.ID || !r.Redacted {
					t.Errorf("got %+v, want the redacted record, deduplicated", r)
				}
			})
		})
	}
}

func TestStore_RedactedRecordSurvivesReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := sqlitetest.File(t)
	key := newKey(t)
	db := store.New(store.Config{Path: path, Signer: key})
	if err := db.Open(ctx); err != nil {
		t.Fatal(err)
	}
	recs := mustRecords(t, db, 3)
	l, err := db.CreateLedger(ctx, &kura.LedgerInput{RecordIDs: ids(recs)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.RedactRecord(ctx, recs[1].ID, "user:oles", &kura.RedactInput{Reason: "pii"}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(ctx); err != nil {
		t.Fatal(err)
	}
	db = mustOpenAt(t, path, key)
	v, err := db.VerifyLedger(ctx, l.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK || len(v.Redacted) != 1 {
		t.Errorf("after reopen: got ok=%v redacted=%v, want ok with one redacted", v.OK, v.Redacted)
	}
}

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
