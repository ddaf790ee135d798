package store

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/kura-memory/kura/kurahash"
)

// On PostgreSQL every statement is a round trip to the server, so a batch
// of single-record writes, one INSERT each, spends its time waiting for
// the network rather than working (and more so when the database is on
// another host). The records of a batch's lock-free jobs go in first, in
// multi-row INSERTs; each job's InsertRecord then finds its row already
// written (or, for a duplicate, already there) and only adds its event.
//
// Only when the batch runs without savepoints: the rows go in before any
// job runs, so a job rolled back to its savepoint would leave its records
// behind, with no event. A batch with a failing job is run again with
// savepoints, one INSERT a record, as on SQLite.

// preRecord is a record written ahead of its job (preinsertRecords).
type preRecord struct {
	p        *PreparedRecord
	id, at   string
	seal     string
	inserted bool // false: a record with its hash was there already (or came first in this batch)
}

// recordRows inserts records many rows a statement, answering the ids it
// inserted.
var recordRows = newMultiRow("INSERT INTO records("+recordCols+") VALUES ", 10, 500, " ON CONFLICT(hash) DO NOTHING RETURNING id")

// preinsertRecords writes the records of the lock-free jobs among txs
// (each job's Tx, in run order, nil where the job is not run) and hands
// each Tx the queue its InsertRecord calls take from.
func (db *DB) preinsertRecords(ctx context.Context, sqlTx *sql.Tx, batch []*job, txs []*Tx) error {
	var all []*preRecord
	for i, j := range batch {
		if txs[i] == nil || !j.lockFree || len(j.records) == 0 {
			continue
		}
		at := txs[i].NowString()
		q := make([]*preRecord, len(j.records))
		for k, p := range j.records {
			q[k] = &preRecord{p: p, id: uuid.Must(uuid.NewV7()).String(), at: at,
				seal: kurahash.SealWithMetadataHash(p.Hash, p.MetadataHash, at)}
		}
		txs[i].pre = q
		all = append(all, q...)
	}
	if len(all) == 0 {
		return nil
	}
	// In hash order: two kurads writing some of the same records take
	// their rows' locks in the same order, so neither waits for a row the
	// other holds while holding one it wants. Stable, so that of a batch's
	// copies of one record the first in run order is the one written.
	slices.SortStableFunc(all, func(a, b *preRecord) int { return strings.Compare(a.p.Hash, b.p.Hash) })
	byID := make(map[string]*preRecord, len(all))
	for _, r := range all {
		byID[r.id] = r
	}
	for len(all) > 0 {
		n := min(len(all), recordRows.chunk)
		args := make([]any, 0, recordRows.cols*n)
		for _, r := range all[:n] {
			p := r.p
			args = append(args, r.id, p.Hash, p.ContentHash, r.seal, p.Type, string(p.Content), p.AuthorID, string(p.MetadataJSON), r.at, 0)
		}
		q := recordRows.full
		if n < recordRows.chunk {
			q = recordRows.sql(n)
		}
		rows, err := sqlTx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			if r := byID[id]; r != nil {
				r.inserted = true
			}
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		all = all[n:]
	}
	return nil
}

// takePre is the record written ahead for p, the next in this job's
// queue; nil when none was (SQLite, a batch with savepoints), or when the
// job inserts a record it did not declare.
func (tx *Tx) takePre(p *PreparedRecord) *preRecord {
	if len(tx.pre) == 0 || tx.pre[0].p != p {
		return nil
	}
	r := tx.pre[0]
	tx.pre = tx.pre[1:]
	return r
}
