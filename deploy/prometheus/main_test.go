package prometheus_test

import (
	"os"
	"testing"

	"github.com/kura-memory/kura/internal/pgtest"
)

// TestMain stops the PostgreSQL server the write lock's alert was checked
// against.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
