package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// A witness cosigns the tree it fetched a moment ago; under writes kurad's
// current tree has moved on by then, so its current checkpoint seldom
// carries a cosignature. GET /v1/log/cosigned serves the newest tree each
// witness cosigned instead, and a client checks that the current tree
// extends it: what the witness vouched for then still holds now.

// LogCosignedCheckpoint is one tree witnesses cosigned, as
// GET /v1/log/cosigned serves it: kurad's checkpoint note of that tree
// followed by the cosignature lines of the witnesses (their URLs in
// Witnesses) that cosigned exactly it.
type LogCosignedCheckpoint struct {
	Size       int64    `json:"size"`
	Root       string   `json:"root"`
	Witnesses  []string `json:"witnesses"`
	Checkpoint string   `json:"checkpoint"`
}

// LogCosigned is the answer of GET /v1/log/cosigned, largest tree first.
type LogCosigned struct {
	Origin      string                  `json:"origin"`
	Checkpoints []LogCosignedCheckpoint `json:"checkpoints"`
}

// LogCosigned returns the newest tree each of kurad's witnesses cosigned
// (GET /v1/log/cosigned), unchecked: see WitnessedCheckpoints. A kurad
// older than the endpoint answers none.
func (c *Client) LogCosigned(ctx context.Context) (*LogCosigned, error) {
	var out LogCosigned
	err := c.do(ctx, "log cosigned", http.MethodGet, "/v1/log/cosigned", nil, nil, &out)
	var ke *Error
	if errors.As(err, &ke) && ke.Code == ENotFound {
		return &LogCosigned{}, nil
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// WitnessedCheckpoint is a checkpoint witnesses cosigned whose log
// signature verified and which a newer checkpoint of the same log was
// proved to extend.
type WitnessedCheckpoint struct {
	*Checkpoint // Unverified names the cosigners: check them with VerifyCosignatures
	// Witnesses are the witness URLs kurad names for it.
	Witnesses []string
	// Proof is the consistency proof from this tree to the newer one
	// (empty when they are the same tree).
	Proof []string
}

// WitnessedCheckpoints fetches the trees kurad's witnesses cosigned, then
// kurad's current checkpoint (in that order, so the current tree is at
// least as large as each), checks kurad's signature on all of them with
// logVKeys, and that the current tree extends each cosigned one
// (GET /v1/log/consistency, tlog.CheckTree). It returns the current
// checkpoint and the witnessed ones. A cosigned tree the current one does
// not extend is a *LogCheckError (a fork or rollback); which witnesses to
// trust is the caller's: VerifyCosignatures(w.Text, logVKey, witnessVKey).
func (c *Client) WitnessedCheckpoints(ctx context.Context, logVKeys ...string) (*Checkpoint, []WitnessedCheckpoint, error) {
	list, err := c.LogCosigned(ctx)
	if err != nil {
		return nil, nil, err
	}
	text, err := c.LogCheckpoint(ctx)
	if err != nil {
		return nil, nil, err
	}
	cur, err := VerifyCheckpoint(text, logVKeys...)
	if err != nil {
		return nil, nil, err
	}
	out := make([]WitnessedCheckpoint, 0, len(list.Checkpoints))
	for _, e := range list.Checkpoints {
		cp, err := VerifyCheckpoint([]byte(e.Checkpoint), logVKeys...)
		if err != nil {
			return nil, nil, fmt.Errorf("cosigned checkpoint of size %d: %w", e.Size, err)
		}
		if cp.Origin != cur.Origin {
			continue // the log moved to a new origin between the two answers
		}
		w := WitnessedCheckpoint{Checkpoint: cp, Witnesses: e.Witnesses, Proof: []string{}}
		if cp.Size < cur.Size && cp.Size > 0 {
			p, err := c.LogConsistency(ctx, cp.Size, cur.Size)
			if err != nil {
				return nil, nil, fmt.Errorf("log %s: consistency proof %d -> %d: %w", cp.Origin, cp.Size, cur.Size, err)
			}
			w.Proof = p.Proof
		}
		if err := CheckConsistency(cp, cur, w.Proof); err != nil {
			return nil, nil, err
		}
		out = append(out, w)
	}
	return cur, out, nil
}
