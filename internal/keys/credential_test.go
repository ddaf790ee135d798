package keys_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/keys"
)

func TestDefaultPath(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	creds := t.TempDir()
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(creds, keys.CredentialName), []byte(strings.Repeat("ab", 32)), 0o400); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, creds, want string
	}{
		{"NoSystemd", "", filepath.Join(data, "kurad.key")},
		{"Credential", creds, filepath.Join(creds, keys.CredentialName)},
		{"CredentialsWithoutKey", empty, filepath.Join(data, "kurad.key")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keys.DefaultPath(data, tt.creds); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestOpen_Credential(t *testing.T) {
	t.Parallel()
	seed := strings.Repeat("cd", ed25519.SeedSize)
	t.Run("Loaded", func(t *testing.T) {
		creds := t.TempDir()
		p := filepath.Join(creds, keys.CredentialName)
		// systemd hands credentials over read-only to the service user.
		if err := os.WriteFile(p, []byte(seed+"\n"), 0o400); err != nil {
			t.Fatal(err)
		}
		k, err := keys.Open(p, creds)
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(k.Seed()); got != seed {
			t.Errorf("got seed %s, want %s", got, seed)
		}
	})
	t.Run("MissingIsNotCreated", func(t *testing.T) {
		creds := t.TempDir()
		p := filepath.Join(creds, keys.CredentialName)
		_, err := keys.Open(p, creds)
		if err == nil || !strings.Contains(err.Error(), "LoadCredential") || !strings.Contains(err.Error(), "kurad keygen ") {
			t.Fatalf("got %v, want an error explaining the credential and kurad keygen", err)
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("a key was created in the credentials directory")
		}
	})
	t.Run("OutsideCredentialsIsCreated", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "kurad.key")
		if _, err := keys.Open(p, t.TempDir()); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("got %v, want the key created", err)
		}
	})
	t.Run("GroupReadableRefused", func(t *testing.T) {
		creds := t.TempDir()
		p := filepath.Join(creds, keys.CredentialName)
		os.WriteFile(p, []byte(seed), 0o600)
		os.Chmod(p, 0o640)
		if _, err := keys.Open(p, creds); err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("got %v, want the mode refused", err)
		}
	})
}
