package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/kura-memory/kura/internal/kura"
)

// ErrReplay is returned by a write whose Idempotency-Key was stored by a
// concurrent request first: the caller answers with the stored answer.
var ErrReplay = &kura.Error{Code: kura.EReplay, Message: "this Idempotency-Key was answered already"}

const qInsertIdem = "INSERT INTO idempotency(identity, key, fingerprint, status, body, created_at) VALUES(?,?,?,?,?,?) ON CONFLICT(identity, key) DO NOTHING"

// KeepAnswer keeps the API's answer to v under the write's Idempotency-Key,
// when it carries one (kura.KeepAnswer), in the write's own transaction.
// created says v is new (the API may answer 201 rather than 200). Every
// write that takes WriteOptions calls it once, with the value it returns.
func (tx *Tx) KeepAnswer(created bool, v any) error {
	idem := tx.idem
	if idem == nil {
		return nil
	}
	status, body := idem.Answer(v, created)
	res, err := tx.Exec(qInsertIdem, idem.Identity, idem.Key, idem.Fingerprint, status, body, tx.NowString())
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrReplay
	}
	return nil
}

// LookupIdempotency returns the answer stored for identity's key, or nil.
// Another identity's use of the same key is not looked at.
func (db *DB) LookupIdempotency(ctx context.Context, identity, key string) (*kura.StoredAnswer, error) {
	var a kura.StoredAnswer
	err := db.rdb.QueryRowContext(ctx, "SELECT fingerprint, status, body FROM idempotency WHERE identity = ? AND key = ?", identity, key).Scan(&a.Fingerprint, &a.Status, &a.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, mapErr(err)
	}
	return &a, nil
}

// IdempotencyRetention is how long stored answers are kept (at least the
// 24 hours API.md promises).
const IdempotencyRetention = 48 * 3600

func (db *DB) expireIdempotency(ctx context.Context) error {
	cutoff := kura.FormatTime(db.now().Add(-IdempotencyRetention * 1e9))
	return db.Update(ctx, func(tx *Tx) error {
		_, err := tx.Exec("DELETE FROM idempotency WHERE created_at < ?", cutoff)
		return err
	})
}
