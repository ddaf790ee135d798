package client

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kura-memory/kura/internal/atomicfile"
	"golang.org/x/mod/sumdb/note"
)

// CheckpointState keeps, per log origin, the last checkpoint a client
// verified and the verifier keys it pinned, so that every later checkpoint
// is checked to extend it: a server put back to an older copy of its data
// (genuinely signed, but smaller or forked) is caught by the client that
// kept what it saw. It also keeps, per server key, the origin it last
// verified under that key: an older copy whose origin was renamed would
// otherwise be a log never seen before, pinned on first use. Layout:
// Dir/<escaped origin>/checkpoint (the note as served),
// Dir/<escaped origin>/vkeys (one verifier key a line) and
// Dir/+keys/<hex Ed25519 public key> (an origin; "+" is in no origin, so it
// names no origin's directory). Files are replaced by write-temp, fsync,
// rename, fsync the directory.
type CheckpointState struct {
	Dir string
	// AcceptOrigin is a new origin the caller accepts under a key that
	// last verified another. After an acknowledged rollback kurad's log
	// goes on under a new origin (docs/log.md); an older copy of its data
	// directory with its origin renamed looks the same to a client, so
	// only a person who asked the operator can tell them apart. Update
	// refuses such a checkpoint (LogOriginChanged) unless its origin is
	// AcceptOrigin.
	AcceptOrigin string
}

// keysDir holds the origin last verified per key.
const keysDir = "+keys"

// KeptCheckpoint is what a CheckpointState holds for one origin.
type KeptCheckpoint struct {
	Checkpoint *Checkpoint
	VKeys      []string
}

// StateUpdate says what CheckpointState.Update did.
type StateUpdate struct {
	Origin   string
	Old      *Checkpoint // nil on first use
	New      *Checkpoint
	FirstUse bool   // nothing was kept: the key was pinned on trust
	KeyAdded string // a rotated key now pinned beside the old ones
	// OriginChangedFrom is the origin last verified under the same key,
	// when AcceptOrigin let this one in.
	OriginChangedFrom string
}

// originDir names the directory of origin: path-escaped, so that an origin
// holding "/" or ".." stays one directory inside Dir.
func (s *CheckpointState) originDir(origin string) (string, error) {
	if origin == "" {
		return "", errors.New("checkpoint state: empty origin")
	}
	name := url.PathEscape(origin)
	if name == "." || name == ".." {
		name = strings.ReplaceAll(name, ".", "%2E")
	}
	return filepath.Join(s.Dir, name), nil
}

// Load returns what is kept for origin, nil when nothing is. A kept file
// that does not parse or verify is an error naming it: it is never silently
// replaced, since that would make the client trust the next server anew.
func (s *CheckpointState) Load(origin string) (*KeptCheckpoint, error) {
	dir, err := s.originDir(origin)
	if err != nil {
		return nil, err
	}
	cpPath, keyPath := filepath.Join(dir, "checkpoint"), filepath.Join(dir, "vkeys")
	text, err := os.ReadFile(cpPath)
	if errors.Is(err, fs.ErrNotExist) {
		if _, kerr := os.Stat(keyPath); kerr == nil {
			return nil, fmt.Errorf("checkpoint state %s: keys kept but no checkpoint; remove the directory only if you mean to trust the server anew", dir)
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint state: %w", err)
	}
	kb, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("checkpoint state %s: %w", dir, err)
	}
	var keys []string
	sc := bufio.NewScanner(bytes.NewReader(kb))
	for sc.Scan() {
		if k := strings.TrimSpace(sc.Text()); k != "" {
			if _, err := note.NewVerifier(k); err != nil {
				return nil, fmt.Errorf("checkpoint state %s: corrupt: verifier key %q: %v", keyPath, k, err)
			}
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("checkpoint state %s: corrupt: no verifier key", keyPath)
	}
	cp, err := VerifyCheckpoint(text, keys...)
	if err != nil {
		return nil, fmt.Errorf("checkpoint state %s: corrupt: %v", cpPath, err)
	}
	if cp.Origin != origin {
		return nil, fmt.Errorf("checkpoint state %s: corrupt: holds origin %q", cpPath, cp.Origin)
	}
	return &KeptCheckpoint{Checkpoint: cp, VKeys: keys}, nil
}

// Update checks the server's checkpoint text against what is kept for its
// origin and keeps it. advertisedVKey is the key the server names now
// (/v1/info log_vkey): it is pinned on first use, and added to the pins
// when a checkpoint is signed by both it and a pinned key (key rotation).
// A checkpoint no pinned key signed, a smaller tree, another root at the
// same size or a consistency proof that fails is refused (*LogCheckError)
// and the kept state is left as it was. The proof is fetched through c.
func (s *CheckpointState) Update(ctx context.Context, c *Client, text []byte, advertisedVKey string) (*StateUpdate, error) {
	origin, err := CheckpointOrigin(text)
	if err != nil {
		return nil, err
	}
	kept, err := s.Load(origin)
	if err != nil {
		return nil, err
	}
	up := &StateUpdate{Origin: origin}
	keys := []string{advertisedVKey}
	if kept == nil {
		if advertisedVKey == "" {
			return nil, badSignature("log %s: no verifier key to pin (kurad names none in /v1/info)", origin)
		}
		if up.New, err = VerifyCheckpoint(text, advertisedVKey); err != nil {
			return nil, err
		}
		up.FirstUse = true
		if err := s.checkOrigin(origin, keys, up); err != nil {
			return nil, err
		}
	} else {
		keys = kept.VKeys
		up.Old = kept.Checkpoint
		if up.New, err = VerifyCheckpoint(text, keys...); err != nil {
			var le *LogCheckError
			if errors.As(err, &le) && advertisedVKey != "" && !slices.Contains(keys, advertisedVKey) {
				le.Msg += fmt.Sprintf("; kurad now names key %s, which is pinned only from a checkpoint signed by both it and a pinned key", advertisedVKey)
			}
			return nil, err
		}
		if advertisedVKey != "" && !slices.Contains(keys, advertisedVKey) {
			if _, err := VerifyCheckpoint(text, advertisedVKey); err == nil {
				keys = append(slices.Clone(keys), advertisedVKey)
				up.KeyAdded = advertisedVKey
			}
		}
		if err := s.checkOrigin(origin, keys, up); err != nil {
			return nil, err
		}
		if up.New.Size > up.Old.Size && up.Old.Size > 0 {
			p, err := c.LogConsistency(ctx, up.Old.Size, up.New.Size)
			if err != nil {
				return nil, fmt.Errorf("log %s: consistency proof %d -> %d: %w", origin, up.Old.Size, up.New.Size, err)
			}
			if err := CheckConsistency(up.Old, up.New, p.Proof); err != nil {
				return nil, err
			}
		} else if err := CheckConsistency(up.Old, up.New, nil); err != nil {
			return nil, err
		}
	}
	if err := s.save(origin, text, keys); err != nil {
		return nil, err
	}
	return up, nil
}

// Save keeps text and keys for origin as they are, after checking that one
// of keys signed text; for callers that verified the checkpoint otherwise.
func (s *CheckpointState) Save(text []byte, keys ...string) error {
	cp, err := VerifyCheckpoint(text, keys...)
	if err != nil {
		return err
	}
	return s.save(cp.Origin, text, keys)
}

// checkOrigin refuses a checkpoint of origin when a key of keys last
// verified another origin here, unless origin is AcceptOrigin.
func (s *CheckpointState) checkOrigin(origin string, keys []string, up *StateUpdate) error {
	for _, k := range keys {
		pub, err := vkeyPublicKey(k)
		if err != nil {
			return fmt.Errorf("checkpoint state: verifier key %q: %v", k, err)
		}
		prev, err := s.lastOrigin(pub, origin)
		if err != nil {
			return err
		}
		if prev == "" || prev == origin {
			continue
		}
		if s.AcceptOrigin != origin {
			return &LogCheckError{Reason: LogOriginChanged, Origin: origin, Previous: prev, New: up.New.Size,
				Msg: fmt.Sprintf("log %s: signed by the key that last verified log %s here. A log that changes origin under the same key is an older copy of kurad's data directory with its origin renamed, another database under the same key, or a log an admin moved to a new origin after a rollback (POST /v1/admin/log/acknowledge); only kurad's operator can say which, so it is refused until accepted explicitly", origin, prev)}
		}
		up.OriginChangedFrom = prev
	}
	return nil
}

// vkeyPublicKey is the hex Ed25519 public key inside a note verifier key
// ("name+hash+base64(0x01 || key)"): the server's key, whatever origin
// names it.
func vkeyPublicKey(vkey string) (string, error) {
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		return "", errors.New("not a note verifier key")
	}
	b, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(b) != 1+ed25519.PublicKeySize || b[0] != 1 {
		return "", errors.New("not an Ed25519 note verifier key")
	}
	return hex.EncodeToString(b[1:]), nil
}

// lastOrigin is the origin last verified under the key pub (hex), "" when
// none. State kept by an older kura has no key files: a kept origin that
// pinned the key stands for it (origin itself when it is one of them).
func (s *CheckpointState) lastOrigin(pub, origin string) (string, error) {
	path := filepath.Join(s.Dir, keysDir, pub)
	b, err := os.ReadFile(path)
	if err == nil {
		o := strings.TrimSpace(string(b))
		if o == "" {
			return "", fmt.Errorf("checkpoint state %s: corrupt: empty", path)
		}
		return o, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("checkpoint state: %w", err)
	}
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return "", nil // nothing kept yet
	}
	found := ""
	for _, e := range entries {
		if !e.IsDir() || e.Name() == keysDir {
			continue
		}
		kb, err := os.ReadFile(filepath.Join(s.Dir, e.Name(), "vkeys"))
		if err != nil {
			continue
		}
		for _, k := range strings.Fields(string(kb)) {
			if p, err := vkeyPublicKey(k); err == nil && p == pub {
				name, _, _ := strings.Cut(k, "+") // a log key's name is its origin
				if name == origin {
					return origin, nil
				}
				found = name
			}
		}
	}
	return found, nil
}

func (s *CheckpointState) save(origin string, text []byte, keys []string) error {
	dir, err := s.originDir(origin)
	if err != nil {
		return err
	}
	// The origin per key first: a crash before the checkpoint is kept
	// leaves this origin to be pinned again, never the other one trusted.
	if err := s.saveOrigin(origin, keys); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("checkpoint state: %w", err)
	}
	// Keys first: a crash between the two leaves a pin beside the old
	// checkpoint, which only ever verifies what that key signed.
	if err := atomicfile.Write(filepath.Join(dir, "vkeys"), []byte(strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "checkpoint"), text, 0o600); err != nil {
		return fmt.Errorf("checkpoint state: %w", err)
	}
	return nil
}

// saveOrigin records origin as the one last verified under each key.
func (s *CheckpointState) saveOrigin(origin string, keys []string) error {
	dir := filepath.Join(s.Dir, keysDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("checkpoint state: %w", err)
	}
	for _, k := range keys {
		pub, err := vkeyPublicKey(k)
		if err != nil {
			return fmt.Errorf("checkpoint state: verifier key %q: %v", k, err)
		}
		path := filepath.Join(dir, pub)
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == origin {
			continue
		}
		if err := atomicfile.Write(path, []byte(origin+"\n"), 0o600); err != nil {
			return fmt.Errorf("checkpoint state: %w", err)
		}
	}
	return nil
}
