package store_test

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/sqlitetest"
	"github.com/kura-memory/kura/internal/store"
	"github.com/kura-memory/kura/kurahash"
)

// twoTurnSession makes a session of two closed turns (four ledgers, four
// head moves) and returns it with the id of an agent.thought record in the
// first turn's output.
func twoTurnSession(t *testing.T, db *store.DB, marker string) (*kura.Session, string) {
	t.Helper()
	ctx := context.Background()
	s, err := db.CreateSession(ctx, &kura.SessionInput{Project: "hashi", Name: "sig"})
	if err != nil {
		t.Fatal(err)
	}
	var target string
	for i := 0; i < 2; i++ {
		tr, err := db.OpenTurn(ctx, s.ID, &kura.TurnOpenInput{Instruction: &kura.RecordInput{Type: "task.instruction",
			Content: json.RawMessage(fmt.Sprintf(`"step %d"`, i)), AuthorID: "user:oles"}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		res, err := db.AppendTurn(ctx, tr.ID, &kura.TurnAppend{Records: []kura.RecordRef{
			{RecordInput: kura.RecordInput{Type: "agent.thought", Content: json.RawMessage(fmt.Sprintf(`{"text":"%s %d"}`, marker, i)), AuthorID: "agent:bmo"}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			target = res.Records[0].ID
		}
		if _, err := db.CloseTurn(ctx, tr.ID, &kura.TurnClose{Status: "complete"}); err != nil {
			t.Fatal(err)
		}
	}
	if s, err = db.GetSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	return s, target
}

// rewriteConsistently is what someone with write access to the file but
// without the key can do: change a record's content and recompute every
// hash above it, so that every stored hash, seal, leaf, root, ledger hash
// and signed head hash agrees with the new content.
func rewriteConsistently(t *testing.T, raw *sql.DB, recordID, content string) {
	t.Helper()
	var typ, author, md, at string
	if err := raw.QueryRow("SELECT type, author_id, metadata, created_at FROM records WHERE id = ?", recordID).Scan(&typ, &author, &md, &at); err != nil {
		t.Fatal(err)
	}
	ch, canon, err := kurahash.ContentHash([]byte(content))
	if err != nil {
		t.Fatal(err)
	}
	h := kurahash.RecordHash(typ, ch, author)
	seal := kurahash.Seal(h, []byte(md), at)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := raw.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("UPDATE records SET content = ?, content_hash = ?, hash = ?, seal = ? WHERE id = ?", string(canon), ch, h, seal, recordID)
	exec("UPDATE ledger_records SET leaf = ? WHERE record_id = ?", seal, recordID)
	// Ledgers in creation (UUIDv7) order: parents before children.
	rows, err := raw.Query("SELECT id, label, created_at FROM ledgers ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	type ledger struct{ id, label, at string }
	var ls []ledger
	for rows.Next() {
		var l ledger
		if err := rows.Scan(&l.id, &l.label, &l.at); err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	rows.Close()
	for _, l := range ls {
		var leaves [][32]byte
		lr, err := raw.Query("SELECT leaf FROM ledger_records WHERE ledger_id = ? ORDER BY pos", l.id)
		if err != nil {
			t.Fatal(err)
		}
		for lr.Next() {
			var leaf string
			lr.Scan(&leaf)
			b, _ := kurahash.DecodeHash(leaf)
			leaves = append(leaves, b)
		}
		lr.Close()
		var parents []string
		pr, err := raw.Query("SELECT p.hash FROM ledger_parents lp JOIN ledgers p ON p.id = lp.parent_id WHERE lp.ledger_id = ? ORDER BY lp.pos", l.id)
		if err != nil {
			t.Fatal(err)
		}
		for pr.Next() {
			var ph string
			pr.Scan(&ph)
			parents = append(parents, ph)
		}
		pr.Close()
		root := kurahash.MerkleRoot(leaves)
		rootHex := hex.EncodeToString(root[:])
		exec("UPDATE ledgers SET root_hash = ?, hash = ? WHERE id = ?", rootHex, kurahash.LedgerHash(rootHex, parents, l.label, l.at), l.id)
	}
	exec("UPDATE session_reflog SET head_hash = (SELECT hash FROM ledgers WHERE id = to_ledger_id)")
}

// flipHex changes the last hex digit of a stored signature.
func flipHex(s string) string {
	last := s[len(s)-1]
	repl := byte('0')
	if last == '0' {
		repl = '1'
	}
	return s[:len(s)-1] + string(repl)
}

func fieldsOf(ms []kura.Mismatch) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Field)
	}
	return out
}

func problemFields(v *kura.SessionVerification) string {
	var out []string
	for _, p := range v.Problems {
		out = append(out, p.Field)
	}
	return strings.Join(out, ",")
}

func TestStore_SignaturesCatchWhatHashesCannot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type setup struct {
		db      *store.DB
		raw     *sql.DB
		session *kura.Session
		target  string
		chain   []string // ledger ids, head first
	}
	open := func(t *testing.T) setup {
		path := sqlitetest.File(t)
		db := mustOpenAt(t, path, nil)
		s, target := twoTurnSession(t, db, "original")
		v, err := db.VerifySession(ctx, s.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		if !v.OK || v.HeadMovesChecked != 4 || v.LedgersChecked != 4 {
			t.Fatalf("fresh session: got ok=%v, %d head moves and %d ledgers checked, problems %+v; want ok, 4 and 4", v.OK, v.HeadMovesChecked, v.LedgersChecked, v.Problems)
		}
		log, _, err := db.SessionLog(ctx, s.ID, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		var chain []string
		for _, l := range log {
			chain = append(chain, l.ID)
		}
		return setup{db: db, raw: rawDB(t, path), session: s, target: target, chain: chain}
	}

	t.Run("ConsistentRewrite", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		rewriteConsistently(t, st.raw, st.target, `{"text":"forged"}`)
		r, err := st.db.GetRecord(ctx, st.target)
		if err != nil {
			t.Fatal(err)
		}
		if string(r.Content) != `{"text":"forged"}` {
			t.Fatalf("got content %s, want the forged one", r.Content)
		}
		// Every ledger from the rewritten one up to the head changed hash;
		// each recomputes consistently, so only its signature gives it away.
		for _, id := range st.chain[:3] {
			v, err := st.db.VerifyLedger(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(fieldsOf(v.Mismatches), ","); v.OK || got != "signature" || v.SignatureOK {
				t.Errorf("ledger %s: got ok=%v, mismatches [%s], want not ok with exactly [signature]", id, v.OK, got)
			}
		}
		// The oldest ledger (the first context) does not hold the record.
		if v, _ := st.db.VerifyLedger(ctx, st.chain[3]); !v.OK {
			t.Errorf("untouched ledger: got %+v, want ok", v.Mismatches)
		}
		v, err := st.db.VerifySession(ctx, st.session.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		if v.OK {
			t.Fatalf("session verify: got ok after a consistent rewrite, want problems")
		}
		var heads, ledgers, logHeads int
		for _, p := range v.Problems {
			switch p.Field {
			case "head_signature":
				heads++
			case "ledger":
				ledgers++
			case "log_head":
				// The log's newest head move names the head hash before
				// the rewrite.
				logHeads++
			default:
				t.Errorf("unexpected problem %+v: every hash was recomputed", p)
			}
		}
		// Head moves 2, 3 and 4 point at the rewritten ledgers.
		if heads != 3 || ledgers != 3 || logHeads != 1 {
			t.Errorf("got %d head signature, %d ledger and %d log head problems (%s), want 3, 3 and 1", heads, ledgers, logHeads, problemFields(v))
		}
	})

	t.Run("LedgerSignatureAltered", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		id := st.chain[2] // an old ledger, not the head
		var sig string
		st.raw.QueryRow("SELECT signature FROM ledgers WHERE id = ?", id).Scan(&sig)
		if _, err := st.raw.Exec("UPDATE ledgers SET signature = ? WHERE id = ?", flipHex(sig), id); err != nil {
			t.Fatal(err)
		}
		v, err := st.db.VerifyLedger(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(fieldsOf(v.Mismatches), ","); v.OK || got != "signature" {
			t.Errorf("ledger verify: got ok=%v, [%s], want not ok with [signature]", v.OK, got)
		}
		sv, err := st.db.VerifySession(ctx, st.session.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		if sv.OK || len(sv.Problems) != 1 || sv.Problems[0].LedgerID != id || sv.Problems[0].Field != "ledger" {
			t.Errorf("session verify: got ok=%v, %+v, want one ledger problem on %s", sv.OK, sv.Problems, id)
		}
	})

	for _, seq := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("HeadMoveSignatureAltered/%d", seq), func(t *testing.T) {
			t.Parallel()
			st := open(t)
			var sig string
			st.raw.QueryRow("SELECT signature FROM session_reflog WHERE session_id = ? AND seq = ?", st.session.ID, seq).Scan(&sig)
			if _, err := st.raw.Exec("UPDATE session_reflog SET signature = ? WHERE session_id = ? AND seq = ?", flipHex(sig), st.session.ID, seq); err != nil {
				t.Fatal(err)
			}
			v, err := st.db.VerifySession(ctx, st.session.ID, "")
			if err != nil {
				t.Fatal(err)
			}
			if v.OK || problemFields(v) != "head_signature" || !strings.Contains(v.Problems[0].Detail, fmt.Sprintf("head move %d ", seq)) {
				t.Errorf("got ok=%v, %+v, want one head_signature problem naming head move %d", v.OK, v.Problems, seq)
			}
		})
	}

	t.Run("HeadMoveRemoved", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		if _, err := st.raw.Exec("DELETE FROM session_reflog WHERE session_id = ? AND seq = 2", st.session.ID); err != nil {
			t.Fatal(err)
		}
		v, err := st.db.VerifySession(ctx, st.session.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		if v.OK || !strings.Contains(problemFields(v), "reflog") {
			t.Errorf("got ok=%v, %+v, want a reflog problem", v.OK, v.Problems)
		}
	})
}
