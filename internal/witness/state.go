package witness

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kura-memory/kura/internal/atomicfile"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// Files of the state directory.
const (
	keyFile     = "witness.key"  // note signer key, 0600, created on first start
	vkeyFile    = "witness.vkey" // its cosignature/v1 verifier key, for operators
	statePrefix = "log-"         // log-<sha256(origin)>.json: one per followed origin
)

// logState is what the witness keeps of one log (one origin): the keys it
// trusts to sign the log's checkpoints and the last checkpoint it cosigned.
// It is written whole, durably, before the cosigned checkpoint is served.
type logState struct {
	Origin string `json:"origin"`
	// VKeys are the log's pinned note verifier keys: the first one met (or
	// given with --log URL=VKEY), then each key rotated to.
	VKeys []string `json:"vkeys"`
	Size  uint64   `json:"size"`
	Hash  []byte   `json:"hash"` // root hash of the tree of Size leaves
	// Checkpoint is the signed checkpoint with the witness's cosignature
	// line, exactly as served.
	Checkpoint string    `json:"checkpoint"`
	CosignedAt time.Time `json:"cosigned_at"`
	// URLs are the log URLs that showed this origin, so that a restart
	// still notices a URL moving to a new origin.
	URLs []string `json:"urls,omitempty"`
}

func stateFileName(origin string) string {
	sum := sha256.Sum256([]byte(origin))
	return statePrefix + hex.EncodeToString(sum[:]) + ".json"
}

// loadOrCreateKey returns the witness's signer key from dir, creating it
// (named name) on first start. The cosignature verifier key is written next
// to it so an operator can hand it to kurad and clients without the secret.
func loadOrCreateKey(dir, name string) (skey, vkey string, err error) {
	b, err := os.ReadFile(filepath.Join(dir, keyFile))
	switch {
	case err == nil:
		skey = strings.TrimSpace(string(b))
	case errors.Is(err, fs.ErrNotExist):
		var plain string
		skey, plain, err = note.GenerateKey(rand.Reader, name)
		if err != nil {
			return "", "", fmt.Errorf("generate witness key: %w", err)
		}
		if err := atomicfile.Write(filepath.Join(dir, keyFile), []byte(skey+"\n"), 0o600); err != nil {
			return "", "", err
		}
		vkey, err = fnote.VKeyToCosignatureV1(plain)
		if err != nil {
			return "", "", fmt.Errorf("witness verifier key: %w", err)
		}
		if err := atomicfile.Write(filepath.Join(dir, vkeyFile), []byte(vkey+"\n"), 0o644); err != nil {
			return "", "", err
		}
		return skey, vkey, nil
	default:
		return "", "", fmt.Errorf("read witness key: %w", err)
	}
	b, err = os.ReadFile(filepath.Join(dir, vkeyFile))
	if err != nil {
		return "", "", fmt.Errorf("read witness verifier key: %w", err)
	}
	vkey = strings.TrimSpace(string(b))
	// An edited or stale witness.vkey would hand out a key no cosignature
	// verifies with: prove the pair matches by signing and checking a probe.
	if err := checkKeyPair(skey, vkey); err != nil {
		return "", "", fmt.Errorf("witness keys in %s: %w", dir, err)
	}
	return skey, vkey, nil
}

func checkKeyPair(skey, vkey string) error {
	signer, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		return fmt.Errorf("signer key: %w", err)
	}
	verifier, err := fnote.NewVerifierForCosignatureV1(vkey)
	if err != nil {
		return fmt.Errorf("verifier key: %w", err)
	}
	msg, err := note.Sign(&note.Note{Text: "kura-witness key check\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"}, signer)
	if err != nil {
		return fmt.Errorf("sign probe: %w", err)
	}
	if _, err := note.Open(msg, note.VerifierList(verifier)); err != nil {
		return fmt.Errorf("%s does not match %s: %w", vkeyFile, keyFile, err)
	}
	return nil
}

// loadStates reads every log state file of dir. A file that does not parse
// fails the start: a witness that forgot what it cosigned would accept the
// very rollback it is there to catch.
func loadStates(dir string) (map[string]*logState, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read state dir: %w", err)
	}
	out := map[string]*logState{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, statePrefix) || !strings.HasSuffix(name, ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("read state %s: %w", name, err)
		}
		var st logState
		if err := json.Unmarshal(b, &st); err != nil {
			return nil, fmt.Errorf("read state %s: %w", name, err)
		}
		if st.Origin == "" || len(st.VKeys) == 0 || len(st.Hash) != 32 || st.Checkpoint == "" || stateFileName(st.Origin) != name {
			return nil, fmt.Errorf("read state %s: incomplete or misnamed", name)
		}
		out[st.Origin] = &st
	}
	return out, nil
}

func saveState(dir string, st *logState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state of %s: %w", st.Origin, err)
	}
	return atomicfile.Write(filepath.Join(dir, stateFileName(st.Origin)), append(b, '\n'), 0o600)
}
