package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// pgDriverName is the database/sql driver of the PostgreSQL store: pgx's,
// with the store's statements rewritten on their way in. The store writes
// one SQL for both engines, with SQLite's positional `?`; PostgreSQL wants
// `$1, $2...`. Rewriting in the driver keeps every call site (and every
// rule above it) the same for both stores; the few statements whose
// meaning differs (search, storage upkeep) are chosen by the store itself.
const pgDriverName = PGDriverName

// PGDriverName is the database/sql name of the driver, for tools and tests
// that open a Kura PostgreSQL database with the store's statements.
const PGDriverName = "kura-pgx"

func init() {
	sql.Register(pgDriverName, pgDriver{})
}

type pgDriver struct{}

func (pgDriver) Open(name string) (driver.Conn, error) {
	c, err := stdlib.GetDefaultDriver().Open(name)
	if err != nil {
		return nil, err
	}
	return &pgConn{Conn: c.(*stdlib.Conn)}, nil
}

// pgConn is pgx's connection with the statements rebound; every other
// method (transactions, pings, argument checks, session resets) is pgx's.
type pgConn struct {
	*stdlib.Conn
	// ended is set when pipeCommit ended the open transaction on the
	// server, endErr to how (pgTx).
	ended  bool
	endErr error
}

func (c *pgConn) Prepare(query string) (driver.Stmt, error) {
	s, err := c.Conn.Prepare(rebind(query))
	return s, statementErr(err, query)
}

func (c *pgConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s, err := c.Conn.PrepareContext(ctx, rebind(query))
	return s, statementErr(err, query)
}

func (c *pgConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	r, err := c.Conn.ExecContext(ctx, rebind(query), args)
	return r, statementErr(err, query)
}

func (c *pgConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	r, err := c.Conn.QueryContext(ctx, rebind(query), args)
	return r, statementErr(err, query)
}

// BeginTx is pgx's, with a transaction that knows when pipeCommit ended
// it already.
func (c *pgConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	t, err := c.Conn.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	c.ended = false
	return &pgTx{Tx: t, c: c}, nil
}

// pgTx is pgx's transaction; once pipeCommit has ended it on the server,
// Commit and Rollback have nothing left to send.
type pgTx struct {
	driver.Tx
	c *pgConn
}

func (t *pgTx) Commit() error {
	if t.c.ended {
		return t.c.endErr
	}
	return t.Tx.Commit()
}

func (t *pgTx) Rollback() error {
	if t.c.ended {
		return nil
	}
	return t.Tx.Rollback()
}

// pipeCommit runs stmts and then COMMIT in the open transaction, sent
// together as one pipeline: one round trip. PostgreSQL skips what follows
// a failed statement, COMMIT too, so the transaction is either committed
// whole or left for Rollback. The first failure is returned, naming its
// statement.
func (c *pgConn) pipeCommit(ctx context.Context, stmts []pgStmt) error {
	b := &pgx.Batch{}
	ran := 0 // pgx calls a statement's callback only once it succeeded
	for _, s := range stmts {
		b.Queue(rebind(s.q), s.args...).Exec(func(pgconn.CommandTag) error {
			ran++
			return nil
		})
	}
	b.Queue("COMMIT").Exec(func(tag pgconn.CommandTag) error {
		if tag.String() == "ROLLBACK" {
			return pgx.ErrTxCommitRollback
		}
		return nil
	})
	err := c.Conn.Conn().SendBatch(ctx, b).Close()
	if ran < len(stmts) {
		err = statementErr(err, stmts[ran].q)
	}
	if c.Conn.Conn().PgConn().TxStatus() == 'I' {
		// COMMIT ran, or the server ended the transaction failing it.
		c.ended, c.endErr = true, err
	}
	return err
}

// statementErr names the statement a server error came from, for the log
// of an internal error (the arguments, which may hold content, are not in
// it). Errors stay matchable: pgconn.PgError, driver.ErrBadConn.
func statementErr(err error, query string) error {
	var pe *pgconn.PgError
	if err == nil || !errors.As(err, &pe) {
		return err
	}
	if len(query) > 300 {
		query = query[:300] + "..."
	}
	return fmt.Errorf("%w (statement %q)", err, query)
}

// rebound caches rewrites: the store's statements are a fixed, small set
// (built ones vary only in their count of placeholders).
var rebound sync.Map

// maxRebound bounds the cache against statements built per request.
const maxRebound = 4096

var reboundN struct {
	sync.Mutex
	n int
}

// rebind turns SQLite's positional `?` into PostgreSQL's `$n` and its
// CROSS JOIN ... ON into JOIN ... ON, leaving string literals, quoted
// identifiers and comments alone.
func rebind(q string) string {
	if !strings.Contains(q, "?") && !strings.Contains(q, "CROSS JOIN") {
		return q
	}
	if r, ok := rebound.Load(q); ok {
		return r.(string)
	}
	r := rebindScan(q)
	reboundN.Lock()
	if reboundN.n < maxRebound {
		reboundN.n++
		rebound.Store(q, r)
	}
	reboundN.Unlock()
	return r
}

func rebindScan(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		ch := q[i]
		switch {
		case ch == '\'' || ch == '"':
			j := i + 1
			for j < len(q) {
				if q[j] == ch {
					if j+1 < len(q) && q[j+1] == ch { // doubled quote inside
						j += 2
						continue
					}
					break
				}
				j++
			}
			if j >= len(q) {
				j = len(q) - 1
			}
			b.WriteString(q[i : j+1])
			i = j
		case ch == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				b.WriteString(q[i:])
				return b.String()
			}
			b.WriteString(q[i : i+j+1])
			i += j
		case ch == '/' && i+1 < len(q) && q[i+1] == '*':
			j := strings.Index(q[i+2:], "*/")
			if j < 0 {
				b.WriteString(q[i:])
				return b.String()
			}
			b.WriteString(q[i : i+2+j+2])
			i += 2 + j + 1
		case ch == 'C' && strings.HasPrefix(q[i:], "CROSS JOIN ") && (i == 0 || !isWordByte(q[i-1])):
			// SQLite reads CROSS JOIN ... ON as an inner join in the
			// order written (the statements use it to fix the plan);
			// PostgreSQL allows ON only after a plain JOIN.
			b.WriteString("JOIN ")
			i += len("CROSS JOIN ") - 1
		case ch == '?':
			// ?NNN names its argument (SQLite's numbered form); a bare ?
			// is the next one.
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			b.WriteByte('$')
			if j > i+1 {
				b.WriteString(q[i+1 : j])
				i = j - 1
			} else {
				n++
				b.WriteString(strconv.Itoa(n))
			}
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
