package keys

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// CredentialName is the name kurad looks for in the systemd credentials
// directory (LoadCredential=kurad.key:/etc/kura/kurad.key).
const CredentialName = "kurad.key"

// DefaultPath is the key file kurad uses when none is configured: the
// systemd credential when the service was given one (credentialsDir is
// $CREDENTIALS_DIRECTORY, empty outside systemd), else kurad.key in the
// data directory.
func DefaultPath(dataDir, credentialsDir string) string {
	if credentialsDir != "" {
		p := filepath.Join(credentialsDir, CredentialName)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return filepath.Join(dataDir, "kurad.key")
}

// Open loads the key at path. A key inside the systemd credentials
// directory is only loaded, never created: that directory is read-only and
// its files come from the unit, so a missing one is a setup mistake to
// report, not a reason to sign with a fresh key nobody keeps. Elsewhere the
// key is created on first start (LoadOrCreate).
func Open(path, credentialsDir string) (ed25519.PrivateKey, error) {
	if credentialsDir != "" && within(path, credentialsDir) {
		return Load(path)
	}
	return LoadOrCreate(path)
}

// Load reads an existing key file, with the same checks as LoadOrCreate.
func Load(path string) (ed25519.PrivateKey, error) {
	k, err := read(path)
	if errors.Is(err, fs.ErrNotExist) {
		// kurad keygen, not a first start without the credential: that
		// creates the key inside the data directory, where anyone with a
		// copy of the directory has it too.
		return nil, fmt.Errorf("key file %s does not exist; a systemd credential must name an existing key (create one outside the data directory with kurad keygen /etc/kura/kurad.key, then LoadCredential=kurad.key:/etc/kura/kurad.key)", path)
	}
	return k, err
}

func within(path, dir string) bool {
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
