package kuradtest

import (
	"net"
	"testing"
)

// FreeAddr is an address on 127.0.0.1 whose port the OS has just picked
// and on which nothing listens now: for a kurad or witness a test starts
// later on an address it must know first, or for a client that must find
// nobody there.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
