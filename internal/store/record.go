package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"

	"github.com/google/uuid"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/kurahash"
)

// PreparedRecord is a validated record input with its canonical content and
// hashes computed; the work is done outside the writer so that the single
// writer goroutine only inserts.
type PreparedRecord struct {
	Type         string
	Content      []byte // canonical
	ContentHash  string
	Hash         string
	AuthorID     string
	Metadata     map[string]string
	MetadataJSON []byte // canonical
	MetadataHash string // hex SHA-256 of MetadataJSON
	Project      string
}

// maxSafeDigits flags integer literals that may not survive the trip through
// an IEEE-754 double (RFC 8785 numbers are doubles).
const maxSafeDigits = 16

// PrepareRecord validates in and computes its canonical form and hashes.
// field prefixes names in errors (e.g. "records[2].").
func (db *DB) PrepareRecord(in *kura.RecordInput, field string) (*PreparedRecord, error) {
	if err := in.Validate(db.cfg.Vocabulary, field); err != nil {
		return nil, err
	}
	if err := checkNumbers(in.Content, field+"content"); err != nil {
		return nil, err
	}
	ch, canon, err := kurahash.ContentHash(in.Content)
	if err != nil {
		return nil, kura.Invalid(field+"content", "content is not canonicalizable JSON (RFC 8785): %s", err)
	}
	p := &PreparedRecord{
		Type:         in.Type,
		Content:      canon,
		ContentHash:  ch,
		Hash:         kurahash.RecordHash(in.Type, ch, in.AuthorID),
		AuthorID:     in.AuthorID,
		Metadata:     in.Metadata,
		MetadataJSON: kurahash.MetadataJSON(in.Metadata),
		Project:      db.cfg.DefaultProject,
	}
	p.MetadataHash = kurahash.SumHex(p.MetadataJSON)
	if pid := in.Metadata["project_id"]; kura.ValidSlug(pid) {
		p.Project = pid
	}
	return p, nil
}

// checkNumbers rejects integers too long to be exact as doubles, so that
// canonicalization never silently changes a stored number. Only texts with
// a long digit run are decoded, keeping the common case cheap.
func checkNumbers(raw []byte, field string) error {
	run := 0
	long := false
	for _, c := range raw {
		if c >= '0' && c <= '9' {
			run++
			if run >= maxSafeDigits {
				long = true
				break
			}
		} else {
			run = 0
		}
	}
	if !long {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // malformed JSON is reported by canonicalization
		}
		n, ok := tok.(json.Number)
		if !ok {
			continue
		}
		s := strings.TrimPrefix(string(n), "-")
		if strings.ContainsAny(s, ".eE") {
			continue
		}
		if len(s) > 16 || absOver(s) {
			return kura.Invalid(field, "integer %s cannot be represented exactly in canonical JSON (IEEE-754 double); send it as a string", n)
		}
	}
}

// absOver reports whether a 16-digit decimal exceeds 2^53.
func absOver(s string) bool {
	const max = "9007199254740992"
	return len(s) == len(max) && s > max
}

const recordCols = "id, hash, content_hash, seal, type, content, author_id, metadata, created_at, redacted"

const (
	qInsertRecord = "INSERT INTO records(" + recordCols + ") VALUES(?,?,?,?,?,?,?,?,?,0) ON CONFLICT(hash) DO NOTHING"
	qRecordByHash = "SELECT " + recordCols + " FROM records WHERE hash = ?"
)

// InsertRecord writes p in tx, or returns the existing record with the same
// hash (Deduplicated set). A new record gets a UUIDv7 id, tx's time and its
// record.written event.
func (tx *Tx) InsertRecord(p *PreparedRecord) (*kura.Record, error) {
	var id, at, seal string
	inserted := false
	if r := tx.takePre(p); r != nil {
		// Written ahead with the batch's other records (record_batch.go).
		id, at, seal, inserted = r.id, r.at, r.seal, r.inserted
	} else {
		id = uuid.Must(uuid.NewV7()).String()
		at = tx.NowString()
		seal = kurahash.SealWithMetadataHash(p.Hash, p.MetadataHash, at)
		res, err := tx.Exec(qInsertRecord,
			id, p.Hash, p.ContentHash, seal, p.Type, string(p.Content), p.AuthorID, string(p.MetadataJSON), at)
		if err != nil {
			return nil, err
		}
		n, _ := res.RowsAffected()
		inserted = n > 0
	}
	if !inserted {
		r, err := scanRecord(tx.QueryRow(qRecordByHash, p.Hash))
		if err != nil {
			return nil, err
		}
		r.Deduplicated = true
		return r, nil
	}
	if err := tx.AddEvent(kura.EventRecordWritten, p.Project, map[string]string{"record_id": id}, seal); err != nil {
		return nil, err
	}
	md := p.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return &kura.Record{ID: id, Hash: p.Hash, ContentHash: p.ContentHash, Seal: seal, Type: p.Type,
		Content: json.RawMessage(p.Content), AuthorID: p.AuthorID, Metadata: md, CreatedAt: at}, nil
}

// CreateRecord stores one record (or finds its duplicate) durably.
func (db *DB) CreateRecord(ctx context.Context, in *kura.RecordInput, opts ...kura.WriteOption) (*kura.Record, error) {
	return db.CreateRecordFor(ctx, in, nil, opts...)
}

// CreateRecords stores a batch all or nothing, answering in input order.
func (db *DB) CreateRecords(ctx context.Context, ins []kura.RecordInput, opts ...kura.WriteOption) ([]kura.Record, error) {
	return db.CreateRecordsFor(ctx, ins, nil, opts...)
}

// prepareRecordFor is PrepareRecord with the event project decided for a
// writer limited to projects (nil: all).
func (db *DB) prepareRecordFor(in *kura.RecordInput, field string, projects []string) (*PreparedRecord, error) {
	p, err := db.PrepareRecord(in, field)
	if err != nil {
		return nil, err
	}
	p.Project = kura.RecordEventProject(in.Metadata, db.cfg.DefaultProject, projects)
	return p, nil
}

// CreateRecordFor is CreateRecord for a writer limited to projects (nil:
// all): a record naming no metadata.project_id rings in the default
// project only if the writer holds it, else in the writer's first project.
func (db *DB) CreateRecordFor(ctx context.Context, in *kura.RecordInput, projects []string, opts ...kura.WriteOption) (*kura.Record, error) {
	p, err := db.prepareRecordFor(in, "", projects)
	if err != nil {
		return nil, err
	}
	var out *kura.Record
	err = db.writeLockFree(ctx, opts, []*PreparedRecord{p}, func(tx *Tx) error {
		var err error
		if out, err = tx.InsertRecord(p); err != nil {
			return err
		}
		return tx.KeepAnswer(!out.Deduplicated, out)
	})
	return out, err
}

// CreateRecordsFor is CreateRecords (a batch, all or nothing) with the
// event projects of CreateRecordFor.
func (db *DB) CreateRecordsFor(ctx context.Context, ins []kura.RecordInput, projects []string, opts ...kura.WriteOption) ([]kura.Record, error) {
	if len(ins) == 0 {
		return nil, kura.Invalid("records", "records must hold at least one record")
	}
	if len(ins) > kura.MaxBatchRecords {
		return nil, kura.Invalid("records", "a batch holds at most %d records, got %d", kura.MaxBatchRecords, len(ins))
	}
	ps := make([]*PreparedRecord, len(ins))
	for i := range ins {
		p, err := db.prepareRecordFor(&ins[i], "records["+itoa(i)+"].", projects)
		if err != nil {
			return nil, err
		}
		ps[i] = p
	}
	out := make([]kura.Record, len(ps))
	err := db.writeLockFree(ctx, opts, ps, func(tx *Tx) error {
		for i, p := range ps {
			r, err := tx.InsertRecord(p)
			if err != nil {
				return err
			}
			out[i] = *r
		}
		return tx.KeepAnswer(true, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

type rowScanner interface{ Scan(...any) error }

func scanRecord(row rowScanner) (*kura.Record, error) {
	var r kura.Record
	var content, md []byte
	var redacted int
	if err := row.Scan(&r.ID, &r.Hash, &r.ContentHash, &r.Seal, &r.Type, &content, &r.AuthorID, &md, &r.CreatedAt, &redacted); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, kura.Errorf(kura.ENotFound, "record not found")
		}
		return nil, err
	}
	if err := fillRecord(&r, content, md, redacted); err != nil {
		return nil, err
	}
	checkRecord(&r, content, r.MetadataJSON)
	return &r, nil
}

// GetRecord reads a record by id.
func (db *DB) GetRecord(ctx context.Context, id string) (*kura.Record, error) {
	if !kura.ValidID(id) {
		return nil, kura.Invalid("id", "%q is not a lowercase UUID", id)
	}
	r, err := scanRecord(db.rdb.QueryRowContext(ctx, "SELECT "+recordCols+" FROM records WHERE id = ?", id))
	return r, mapErr(err)
}

// GetRecordByHash reads a record by its hash.
func (db *DB) GetRecordByHash(ctx context.Context, hash string) (*kura.Record, error) {
	if !kura.ValidHash(hash) {
		return nil, kura.Invalid("hash", "%q is not a lowercase hex SHA-256", hash)
	}
	r, err := scanRecord(db.rdb.QueryRowContext(ctx, "SELECT "+recordCols+" FROM records WHERE hash = ?", hash))
	return r, mapErr(err)
}

// ListRecords returns records oldest first (UUIDv7 order) matching f, and
// the id to continue after when there may be more.
func (db *DB) ListRecords(ctx context.Context, f kura.RecordFilter) ([]kura.Record, string, error) {
	var where []string
	var args []any
	if f.Type != "" {
		where = append(where, "type = ?")
		args = append(args, f.Type)
	}
	if f.AuthorID != "" {
		where = append(where, "author_id = ?")
		args = append(args, f.AuthorID)
	}
	if f.Since != "" {
		where = append(where, "created_at >= ?")
		args = append(args, f.Since)
	}
	if f.Until != "" {
		where = append(where, "created_at < ?")
		args = append(args, f.Until)
	}
	if f.After != "" {
		where = append(where, "id > ?")
		args = append(args, f.After)
	}
	if f.Scopes != nil {
		where = append(where, "NOT "+withheld("?"))
		args = append(args, projectsJSON(f.Scopes))
	}
	q := "SELECT " + recordCols + " FROM records r"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id LIMIT ?"
	args = append(args, f.Limit+1)
	rows, err := db.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", mapErr(err)
	}
	return scanPage(rows, f.Limit, scanRecord, func(r *kura.Record) string { return r.ID })
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// fillRecord sets the decoded columns of a record row. Metadata stays in
// its stored canonical form (Record.Meta decodes it when needed).
func fillRecord(r *kura.Record, content, md []byte, redacted int) error {
	if content != nil {
		r.Content = content
	} else {
		r.Content = json.RawMessage("null") // redacted
	}
	r.Redacted = redacted != 0
	if len(md) == 0 {
		md = []byte("{}")
	}
	r.MetadataJSON = md
	return nil
}
