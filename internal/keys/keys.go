// Package keys loads kurad's Ed25519 signing key from a file kept outside
// the database, creating it (mode 0600) on first start. Someone who can
// rewrite the database file still cannot forge signatures without it.
package keys

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// LoadOrCreate reads the hex-encoded Ed25519 seed at path, or creates a new
// key there when the file does not exist. A key file readable by others is
// refused: a leaked key makes every signature worthless.
func LoadOrCreate(path string) (ed25519.PrivateKey, error) {
	k, err := read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return create(path)
	}
	return k, err
}

// read loads an existing key file; a missing one is fs.ErrNotExist.
func read(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("stat key file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("key file %s has mode %o; it must not be readable by group or others (chmod 600)", path, st.Mode().Perm())
	}
	return parse(b, path)
}

func parse(b []byte, path string) (ed25519.PrivateKey, error) {
	seed, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("key file %s does not hold a hex Ed25519 seed of %d bytes", path, ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

func create(path string) (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create key dir: %w", err)
	}
	// Write the key in full to a private temp file, then hard-link it into
	// place: the key file is never seen half-written (not by a concurrent
	// start, not after a crash), and an existing key is never overwritten.
	f, err := os.CreateTemp(dir, ".kurad-key-*")
	if err != nil {
		return nil, fmt.Errorf("create key file: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, fmt.Errorf("create key file: %w", err)
	}
	if _, err := f.WriteString(hex.EncodeToString(priv.Seed()) + "\n"); err != nil {
		f.Close()
		return nil, fmt.Errorf("write key file: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("sync key file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("close key file: %w", err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return LoadOrCreate(path) // another start won the race: use its key
		}
		return nil, fmt.Errorf("install key file: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // make the new directory entry durable
		d.Close()
	}
	return priv, nil
}

// PublicKeyString renders a public key as Kura publishes it: "ed25519:<hex>".
func PublicKeyString(pub ed25519.PublicKey) string {
	return "ed25519:" + hex.EncodeToString(pub)
}

// ParsePublicKey reads a public key in the form PublicKeyString writes.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), "ed25519:")
	b, err := hex.DecodeString(rest)
	if !ok || err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%q is not a public key of the form ed25519:<64 hex digits>", s)
	}
	return ed25519.PublicKey(b), nil
}
