package kuradtest

import (
	"testing"

	"github.com/kura-memory/kura/internal/freeport"
)

// FreeAddr is an address on 127.0.0.1 on which nothing listens now: for a
// kurad or witness a test starts later on an address it must know first,
// or for a client that must find nobody there. Its port is below the
// kernel's ephemeral range, so no other listener or client socket of the
// test run takes it meanwhile (freeport).
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		tb.Fatal(err)
	}
	return addr
}
