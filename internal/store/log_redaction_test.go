package store_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/sqlitetest"
	"github.com/kura-memory/kura/internal/store"
	"github.com/kura-memory/kura/kurahash"
)

// redactedLeaf redacts a new record and returns it, the redaction, and the
// leaf of its record.redacted event.
func redactedLeaf(t *testing.T, db *store.DB) (*kura.Record, *kura.Redaction) {
	t.Helper()
	ctx := context.Background()
	r, err := db.CreateRecord(ctx, recIn(thought(1)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.RedactRecord(ctx, r.ID, "user:admin", &kura.RedactInput{Reason: "personal data"})
	if err != nil {
		t.Fatal(err)
	}
	return r, res.Redaction
}

func leafAt(t *testing.T, db *store.DB, seq int64) *kurahash.LogLeaf {
	t.Helper()
	leaves, err := db.LogLeaves(context.Background(), seq-1, seq, nil)
	if err != nil {
		t.Fatal(err)
	}
	if leaves[0].Data == nil {
		return nil
	}
	l, err := kurahash.ParseLogLeaf(leaves[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A record.redacted leaf commits to the redaction (who, why, when, and the
// record's seal): an edit of the redactions row afterwards no longer
// hashes to the leaf, so its data is not served as the leaf's. Before, the
// leaf held only the seal, which a redaction leaves as it was.
func TestLog_RedactionLeafCommitsToTheRedaction(t *testing.T) {
	t.Parallel()
	path := sqlitetest.File(t)
	db := mustOpenAt(t, path, nil)
	r, rd := redactedLeaf(t, db)
	want, err := kurahash.RedactionDigest(kurahash.Redaction{RecordID: r.ID, Seal: r.Seal, By: "user:admin", Reason: "personal data", At: rd.At})
	if err != nil {
		t.Fatal(err)
	}
	l := leafAt(t, db, rd.Seq)
	if l == nil || l.Type != kura.EventRecordRedacted || l.Digest != want {
		t.Fatalf("redaction leaf %+v, want digest %s", l, want)
	}
	raw := rawDB(t, path)
	for _, col := range []string{"by_id", "reason", "at"} {
		t.Run(col, func(t *testing.T) {
			if _, err := raw.Exec("UPDATE redactions SET "+col+" = 'edited' WHERE record_id = ?", r.ID); err != nil {
				t.Fatal(err)
			}
			if l := leafAt(t, db, rd.Seq); l != nil {
				t.Errorf("redactions.%s edited: the leaf's data is still served: %+v", col, l)
			}
			old := map[string]string{"by_id": "user:admin", "reason": "personal data", "at": rd.At}[col]
			if _, err := raw.Exec("UPDATE redactions SET "+col+" = ? WHERE record_id = ?", old, r.ID); err != nil {
				t.Fatal(err)
			}
			if l := leafAt(t, db, rd.Seq); l == nil || l.Digest != want {
				t.Errorf("redactions.%s put back: leaf %+v, want it served again", col, l)
			}
		})
	}
}

// A redaction logged by an older kurad committed to the record's seal
// alone: its leaf keeps that digest (the events row holds it), and is
// served as before.
func TestLog_RedactionLeafOfAnOlderKuradKeepsTheSeal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	path := sqlitetest.File(t)
	off := store.New(store.Config{Path: path, Signer: key, LogOff: true})
	if err := off.Open(ctx); err != nil {
		t.Fatal(err)
	}
	r, rd := redactedLeaf(t, off)
	if _, err := rawDB(t, path).Exec("UPDATE events SET digest = ? WHERE seq = ?", r.Seal, rd.Seq); err != nil {
		t.Fatal(err)
	}
	off.Close(ctx)

	db := mustOpenAt(t, path, key) // the log appends the leaves it missed
	if l := leafAt(t, db, rd.Seq); l == nil || l.Digest != r.Seal {
		t.Fatalf("older redaction leaf %+v, want the seal %s as its digest", l, r.Seal)
	}
}
