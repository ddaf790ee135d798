package kuradtest

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// CopyDataDir copies the regular files of a stopped kurad's data directory
// (the database, its WAL, the lock and address files) into to, creating
// it: the "old copy" an attacker or a careless restore puts back, in the
// rollback tests. Files already in to are replaced.
func CopyDataDir(tb testing.TB, from, to string) {
	tb.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		tb.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := copyFile(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			tb.Fatal(err)
		}
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
