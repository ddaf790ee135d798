package keys_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/kura-memory/kura/internal/keys"
)

func TestLoadOrCreate_Create(t *testing.T) {
	t.Parallel()
	// A missing parent directory is created too.
	path := filepath.Join(t.TempDir(), "sub", "kurad.key")
	key, err := keys.LoadOrCreate(path)
	if err != nil {
		t.Fatalf("got error %v, want nil", err)
	}
	if len(key) != ed25519.PrivateKeySize {
		t.Fatalf("got key of %d bytes, want %d", len(key), ed25519.PrivateKeySize)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o600 {
		t.Errorf("got mode %o, want 600", got)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("got file %q, want a hex seed: %v", b, err)
	}
	if !bytes.Equal(seed, key.Seed()) {
		t.Errorf("got seed %x in the file, want %x", seed, key.Seed())
	}

	t.Run("LoadAgain", func(t *testing.T) {
		again, err := keys.LoadOrCreate(path)
		if err != nil {
			t.Fatalf("got error %v, want nil", err)
		}
		if !again.Equal(key) {
			t.Errorf("got a different key on reload, want the same")
		}
	})
}

func TestLoadOrCreate_Refused(t *testing.T) {
	t.Parallel()
	goodSeed := strings.Repeat("ab", ed25519.SeedSize) + "\n"
	tests := []struct {
		name    string
		content string
		mode    os.FileMode
		wantErr string
	}{
		{"GroupReadable", goodSeed, 0o640, "chmod 600"},
		{"WorldReadable", goodSeed, 0o644, "chmod 600"},
		{"GroupWritable", goodSeed, 0o620, "chmod 600"},
		{"Garbage", "not a key at all\n", 0o600, "hex Ed25519 seed"},
		{"Empty", "", 0o600, "hex Ed25519 seed"},
		{"ShortSeed", strings.Repeat("ab", ed25519.SeedSize-1), 0o600, "hex Ed25519 seed"},
		{"LongSeed", strings.Repeat("ab", ed25519.SeedSize+1), 0o600, "hex Ed25519 seed"},
		{"FullPrivateKey", strings.Repeat("ab", ed25519.PrivateKeySize), 0o600, "hex Ed25519 seed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kurad.key")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			// Chmod after writing: the umask must not decide the test.
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			key, err := keys.LoadOrCreate(path)
			if err == nil {
				t.Fatalf("got key %x, want an error", key.Public())
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %q, want it to contain %q", err, tt.wantErr)
			}
			// A refused file is left as it was, never replaced.
			b, _ := os.ReadFile(path)
			if string(b) != tt.content {
				t.Errorf("got file %q, want %q untouched", b, tt.content)
			}
		})
	}
}

func TestLoadOrCreate_Existing(t *testing.T) {
	t.Parallel()
	seed := bytes.Repeat([]byte{7}, ed25519.SeedSize)
	want := ed25519.NewKeyFromSeed(seed)
	tests := []struct {
		name    string
		content string
	}{
		{"Newline", hex.EncodeToString(seed) + "\n"},
		{"NoNewline", hex.EncodeToString(seed)},
		{"Whitespace", "  " + hex.EncodeToString(seed) + "\r\n\n"},
		{"Uppercase", strings.ToUpper(hex.EncodeToString(seed))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kurad.key")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := keys.LoadOrCreate(path)
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if !got.Equal(want) {
				t.Errorf("got public key %x, want %x", got.Public(), want.Public())
			}
		})
	}
}

func TestLoadOrCreate_Unreadable(t *testing.T) {
	t.Parallel()
	// A directory where the file should be is an error, not a new key.
	path := filepath.Join(t.TempDir(), "kurad.key")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.LoadOrCreate(path); err == nil {
		t.Error("got nil error for a directory, want an error")
	}
}

func TestLoadOrCreate_Concurrent(t *testing.T) {
	t.Parallel()
	// Two kurads starting at once on a fresh data dir must agree on one key.
	// The race window is small, so try several fresh paths.
	for round := 0; round < 20; round++ {
		path := filepath.Join(t.TempDir(), "kurad.key")
		var (
			wg    sync.WaitGroup
			got   [2]ed25519.PrivateKey
			errs  [2]error
			start = make(chan struct{})
		)
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got[i], errs[i] = keys.LoadOrCreate(path)
			}()
		}
		close(start)
		wg.Wait()
		for i := range got {
			if errs[i] != nil {
				t.Fatalf("round %d, caller %d: got error %v, want nil", round, i, errs[i])
			}
		}
		if !got[0].Equal(got[1]) {
			t.Fatalf("round %d: got public keys %x and %x, want one key", round, got[0].Public(), got[1].Public())
		}
		onDisk, err := keys.LoadOrCreate(path)
		if err != nil {
			t.Fatalf("round %d: reload: got error %v, want nil", round, err)
		}
		if !onDisk.Equal(got[0]) {
			t.Fatalf("round %d: got file key %x, want %x", round, onDisk.Public(), got[0].Public())
		}
	}
}

func TestPublicKeyString(t *testing.T) {
	t.Parallel()
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	got := keys.PublicKeyString(key.Public().(ed25519.PublicKey))
	if !regexp.MustCompile(`^ed25519:[0-9a-f]{64}$`).MatchString(got) {
		t.Errorf("got %q, want ed25519:<64 lowercase hex>", got)
	}
	if want := "ed25519:" + hex.EncodeToString(key.Public().(ed25519.PublicKey)); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
