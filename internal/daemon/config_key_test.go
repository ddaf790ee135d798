package daemon_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kura-memory/kura/internal/daemon"
)

// The key file defaults to the systemd credential when kurad runs with one;
// KURA_KEY_FILE still wins.
func TestLoadConfig_KeyFileFromCredential(t *testing.T) {
	t.Parallel()
	creds := t.TempDir()
	cred := filepath.Join(creds, "kurad.key")
	if err := os.WriteFile(cred, []byte("x"), 0o400); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"Credential", map[string]string{"KURA_DATA_DIR": data, "CREDENTIALS_DIRECTORY": creds}, cred},
		{"NoCredential", map[string]string{"KURA_DATA_DIR": data}, filepath.Join(data, "kurad.key")},
		{"ExplicitWins", map[string]string{"KURA_DATA_DIR": data, "CREDENTIALS_DIRECTORY": creds, "KURA_KEY_FILE": "/etc/kura/other.key"}, "/etc/kura/other.key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := daemon.LoadConfig(nil, env(tt.env), devNull(t))
			if err != nil {
				t.Fatal(err)
			}
			if c.KeyFile != tt.want {
				t.Errorf("got key file %s, want %s", c.KeyFile, tt.want)
			}
		})
	}
}
