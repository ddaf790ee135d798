package store_test

import (
	"os"
	"testing"

	"github.com/kura-memory/kura/internal/pgtest"
)

// TestMain stops the PostgreSQL server a test started (pgtest.URL).
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
