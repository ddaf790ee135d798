package main

import (
	"os"
	"testing"

	"github.com/kura-memory/kura/internal/pgtest"
)

// TestMain stops the PostgreSQL server the tests that need one started.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
