package store

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/kura-memory/kura/internal/kura"
)

// TestMapPGErr maps PostgreSQL failures by SQLSTATE as mapErr maps
// SQLite's by extended code.
func TestMapPGErr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		state string
		want  string // kura code; "" = not mapped here
	}{
		{"23505", kura.EConflict},    // unique_violation: a racing write
		{"23502", kura.EInternal},    // not_null_violation: validation let it through
		{"23514", kura.EInternal},    // check_violation
		{"23503", kura.EInternal},    // foreign_key_violation
		{"40P01", kura.EUnavailable}, // deadlock_detected
		{"40001", kura.EUnavailable}, // serialization_failure
		{"53100", kura.EStorageFull}, // disk_full
		{"57P01", kura.EUnavailable}, // admin_shutdown
		{"57P03", kura.EUnavailable}, // cannot_connect_now: starting, recovering
		{"08006", kura.EUnavailable}, // connection_failure
		{"25006", kura.EUnavailable}, // read_only_sql_transaction: a standby
		{"58030", kura.EUnavailable}, // io_error
		{"42601", ""},                // syntax_error: a bug, left as it is
	} {
		t.Run(tc.state, func(t *testing.T) {
			// Wrapped as the driver wraps it (statementErr).
			err := fmt.Errorf("%w (statement %q)", &pgconn.PgError{Code: tc.state, Message: "secret detail"}, "INSERT ...")
			got := mapPGErr(err)
			if tc.want == "" {
				if got != nil {
					t.Fatalf("got %v, want no mapping", got)
				}
				return
			}
			var ke *kura.Error
			if !errors.As(got, &ke) || ke.Code != tc.want {
				t.Fatalf("got %v, want code %s", got, tc.want)
			}
			if tc.want == kura.EInternal && !errors.Is(ke.Cause, err) {
				t.Fatalf("cause %v, want the PostgreSQL error kept for the log", ke.Cause)
			}
		})
	}
}

// TestMapPGErr_Unreachable: a server that cannot be reached is a 503 to
// retry (not kurad's fault, a 500), and not a failing disk.
func TestMapPGErr_Unreachable(t *testing.T) {
	t.Parallel()
	for name, err := range map[string]error{
		"refused":   fmt.Errorf("begin: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}),
		"reset":     &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET},
		"bad conn":  fmt.Errorf("exec: %w", driver.ErrBadConn),
		"shutdown":  &pgconn.PgError{Code: "57P01"},
		"starting":  &pgconn.PgError{Code: "57P03"},
		"conn done": sql.ErrConnDone,
		"eof":       fmt.Errorf("read: %w", io.ErrUnexpectedEOF), // the server gone mid-statement
		"closed":    fmt.Errorf("query: %w", pgconn.ErrConnClosed),
	} {
		var ke *kura.Error
		if got := mapPGErr(err); !errors.As(got, &ke) || ke.Code != kura.EUnavailable || ke.Message != msgUnreachable || errors.Is(ke, kura.ErrStorage) {
			t.Errorf("%s: %v, want unavailable %q without a storage cause", name, got, msgUnreachable)
		}
	}
	if got := mapPGErr(&pgconn.PgError{Code: "57014"}); !kura.IsCode(got, kura.EUnavailable) || errors.Is(got, kura.ErrStorage) {
		t.Errorf("query_canceled: %v, want unavailable without a storage cause", got)
	}
	if got := mapPGErr(&pgconn.PgError{Code: "58030"}); !errors.Is(got, kura.ErrStorage) {
		t.Errorf("io_error: %v, want a storage failure", got)
	}
}
