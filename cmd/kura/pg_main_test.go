package main

import (
	"os"
	"testing"

	"github.com/kura-memory/kura/internal/pgtest"
)

// TestMain stops the PostgreSQL server the tests started when they run
// against PostgreSQL (KURA_TEST_STORE=postgres).
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
