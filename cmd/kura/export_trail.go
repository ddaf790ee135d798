package main

import (
	"bufio"
	"context"
	"fmt"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kura"
)

// exportedSession is the session as an export writes it: the session, every
// signed head move, and the public key of the kurad that signed them and the
// ledgers. The key is informative only: an offline verify checks against a
// key the verifier already holds (--pubkey), never against the one the
// export names.
type exportedSession struct {
	*client.Session
	PublicKey string               `json:"public_key,omitempty"`
	Reflog    []client.ReflogEntry `json:"reflog"`
	// Log is kurad's checkpoint and, per exported ledger, the proof that
	// its ledger.written event is in the log (export_log.go); absent when
	// kurad keeps no log, and in exports made before it did.
	Log *exportedLog `json:"log,omitempty"`
}

func sessionTrail(ctx context.Context, c *client.Client, s *client.Session, ledgers []client.Ledger) (*exportedSession, error) {
	info, err := c.Info(ctx)
	if err != nil {
		return nil, err
	}
	rl, err := c.Reflog(ctx, s.ID)
	if err != nil {
		return nil, err
	}
	if rl == nil {
		rl = []client.ReflogEntry{}
	}
	lg, err := exportLog(ctx, c, s, ledgers)
	if err != nil {
		return nil, err
	}
	return &exportedSession{Session: s, PublicKey: info.PublicKey, Reflog: rl, Log: lg}, nil
}

// gitTagName is the tag an exported session's trail goes on.
func gitTagName(s *client.Session) string {
	name := s.Name
	if !kura.ValidSlug(name) {
		name = "kura-session"
	}
	return "kura/" + name
}

// writeGitSessionTag writes an annotated tag on the head commit whose
// message is the canonical JSON of the session's trail.
func writeGitSessionTag(ctx context.Context, c *client.Client, s *client.Session, ledgers []client.Ledger, bw *bufio.Writer, headMark int) error {
	trail, err := sessionTrail(ctx, c, s, ledgers)
	if err != nil {
		return err
	}
	b, err := canonicalJSON(trail)
	if err != nil {
		return fmt.Errorf("export session %s: %w", s.ID, err)
	}
	secs, err := gitTime(s.CreatedAt)
	if err != nil {
		return fmt.Errorf("export session %s: created_at: %w", s.ID, err)
	}
	fmt.Fprintf(bw, "tag %s\nfrom :%d\ntagger %s %d +0000\n", gitTagName(s), headMark, gitIdent, secs)
	gitData(bw, b)
	return nil
}
