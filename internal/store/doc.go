// Package store keeps Kura's state in one SQLite file, or in PostgreSQL
// (Config.DatabaseURL, pg.go: the same statements and rules, a write lock
// several kurads share): embedded migrations,
// one writer goroutine that groups concurrent writes into one transaction
// (group commit), a read-only connection pool, and the event log written in
// the same transaction as every mutation.
//
// # The store line
//
// The API does not know it talks to SQLite: it holds an api.Store, the
// composition of one small interface per noun (records, ledgers,
// sessions and turns, memory nodes and relations, knowledge bases,
// events, backups and health), each declared by the consumer that needs it.
// Another store would implement those per-noun interfaces and nothing
// else (PostgreSQL did not need one: it runs this store's code through its
// own driver and schema); it must keep what this one guarantees:
//
//   - a write is acknowledged only after its transaction commits, and the
//     events it produced are published only after that commit (the
//     outbox: OnCommit hooks, LastEventSeq, the published cursor);
//   - every rule is decided outside SQL, in internal/kura and the pure
//     packages (kura.MergeNode, kura.TurnOpenInput.Validate,
//     admission.DecidingRelations...): a store loads, calls the rule and
//     writes, so a second store reuses the rules instead of rewriting them;
//   - failures carry kura codes: a uniqueness race is kura.EConflict, any
//     other constraint the schema enforces (NOT NULL, CHECK, FOREIGN KEY)
//     kura.EInternal, since validation should have refused the row first;
//     a failing disk carries kura.ErrStorage, a cancelled request
//     kura.EUnavailable;
//   - the caller's identity and the idempotent answer arrive as explicit
//     inputs (kura.Writer, CreatedBy, kura.WriteOption), never from ctx.
//
// Lifecycle: New returns an unopened DB, Open does the I/O and starts the
// writer, checkpointer and sweeper, Close stops them and releases every
// connection pool even when its ctx ends first; a second Close is a no-op.
package store
