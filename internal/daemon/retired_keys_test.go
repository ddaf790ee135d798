package daemon_test

import (
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/daemon"
)

// TestConfig_RetiredKeys: --retired-keys and KURA_RETIRED_KEYS take
// comma-separated ed25519:<hex> keys; anything else is refused by name.
func TestConfig_RetiredKeys(t *testing.T) {
	t.Parallel()
	k1 := "ed25519:" + strings.Repeat("ab", 32)
	k2 := "ed25519:" + strings.Repeat("cd", 32)
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want int    // keys parsed
		err  string // "" accepted
	}{
		{"None", nil, nil, 0, ""},
		{"Flag", []string{"--retired-keys", k1 + ", " + k2}, nil, 2, ""},
		{"Env", nil, map[string]string{"KURA_RETIRED_KEYS": k1}, 1, ""},
		{"NoPrefix", []string{"--retired-keys", strings.Repeat("ab", 32)}, nil, 0, "retired-keys"},
		{"Short", []string{"--retired-keys", "ed25519:abcd"}, nil, 0, "retired-keys"},
		{"NotHex", nil, map[string]string{"KURA_RETIRED_KEYS": "ed25519:" + strings.Repeat("zz", 32)}, 0, "retired-keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := daemon.LoadConfig(tc.args, env(tc.env), devNull(t))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			keys, err := c.RetiredPublicKeys()
			if err != nil || len(keys) != tc.want {
				t.Fatalf("got %d keys, %v, want %d", len(keys), err, tc.want)
			}
		})
	}
}
