package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/kura-memory/kura/client"
)

// kura verify also checks kurad's log: the server's checkpoint must be
// signed, and consistent with the last checkpoint this kura verified for the
// same origin (kept in the state directory). A server put back to an older
// copy of its data directory signs a smaller or forked tree with its real
// key: only what a client kept, or a witness, tells.

// stateDir is where verified checkpoints are kept: KURA_STATE_DIR, else
// $XDG_STATE_HOME/kura, else ~/.local/state/kura; "" when none of them is
// set (nothing is kept then, and kura says so).
func (c *cli) stateDir() string {
	if d := c.env("KURA_STATE_DIR"); d != "" {
		return d
	}
	if d := c.env("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "kura")
	}
	if h := c.env("HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "kura")
	}
	return ""
}

// logCheck is what kura verify found about the log, for --json.
type logCheck struct {
	OK       bool   `json:"ok"`
	Checked  bool   `json:"checked"`
	Origin   string `json:"origin,omitempty"`
	Size     int64  `json:"size,omitempty"`
	KeptSize *int64 `json:"kept_size,omitempty"`
	State    string `json:"state,omitempty"` // /v1/info log.state
	StateDir string `json:"state_dir,omitempty"`
	FirstUse bool   `json:"first_use,omitempty"`
	KeyAdded string `json:"key_added,omitempty"`
	// PreviousOrigin is the origin last verified under kurad's key when
	// the log now shows another: refused, or accepted with --accept-origin.
	PreviousOrigin string `json:"previous_origin,omitempty"`
	// AcknowledgedSeq is the seq of the log.acknowledged event in kurad's
	// feed that moved PreviousOrigin to Origin, 0 when there is none.
	AcknowledgedSeq int64  `json:"acknowledged_seq,omitempty"`
	Problem         string `json:"problem,omitempty"`
}

// logCheckOptions are kura verify's flags about the kept state.
type logCheckOptions struct {
	noState      bool
	acceptOrigin string
}

// checkLog checks kurad's log and prints one line saying what was checked
// (to stderr under --json, whose stdout is kurad's verification answer).
// It returns an exitError when the log does not hold up.
func (c *cli) checkLog(ctx context.Context, o logCheckOptions) error {
	lc, err := c.runLogCheck(ctx, o)
	if err != nil {
		return err
	}
	w := c.stdout
	if c.json {
		w = c.stderr
	}
	printLogCheck(w, lc)
	if !lc.OK {
		return &exitError{code: exitFail}
	}
	return nil
}

func (c *cli) runLogCheck(ctx context.Context, o logCheckOptions) (*logCheck, error) {
	info, err := c.client.LogInfo(ctx)
	if err != nil {
		return nil, err
	}
	lc := &logCheck{Origin: info.Origin}
	if info.Log != nil {
		lc.State = info.Log.State
	}
	if info.Origin == "" || lc.State == client.LogStateOff {
		lc.OK = true // nothing to check: kurad keeps no log
		return lc, nil
	}
	lc.Checked = true
	if lc.State == client.LogStateRollback || lc.State == client.LogStateFork {
		lc.Problem = fmt.Sprintf("kurad reports %s: a witness holds a tree this log does not extend (see /v1/info log.witnesses; recovery in docs)", lc.State)
		return lc, nil
	}
	text, err := c.client.LogCheckpoint(ctx)
	if err != nil {
		return nil, err
	}
	dir := ""
	if !o.noState {
		dir = c.stateDir()
	}
	if dir == "" {
		cp, err := client.VerifyCheckpoint(text, info.VKey)
		if err != nil {
			lc.Problem = err.Error()
			return lc, nil
		}
		lc.OK, lc.Size = true, cp.Size
		return lc, nil
	}
	lc.StateDir = dir
	st := &client.CheckpointState{Dir: dir, AcceptOrigin: o.acceptOrigin}
	up, err := st.Update(ctx, c.client, text, info.VKey)
	var le *client.LogCheckError
	switch {
	case errors.As(err, &le) && le.Reason == client.LogOriginChanged:
		lc.PreviousOrigin, lc.Size = le.Previous, le.New
		lc.AcknowledgedSeq = c.acknowledgedMove(ctx, le.Previous, le.Origin)
		lc.Problem = le.Error() + ". " + moveEvidence(lc) +
			fmt.Sprintf(". If kurad's operator confirms the move, accept it once with: kura verify --accept-origin %s", le.Origin)
		return lc, nil
	case errors.As(err, &le):
		lc.Problem = le.Error()
		if le.Old > 0 || le.New > 0 {
			old := le.Old
			lc.KeptSize, lc.Size = &old, le.New
		}
		return lc, nil
	case err != nil:
		return nil, err
	}
	lc.OK, lc.Size, lc.FirstUse, lc.KeyAdded = true, up.New.Size, up.FirstUse, up.KeyAdded
	if lc.PreviousOrigin = up.OriginChangedFrom; lc.PreviousOrigin != "" {
		lc.AcknowledgedSeq = c.acknowledgedMove(ctx, lc.PreviousOrigin, lc.Origin)
	}
	if up.Old != nil {
		old := up.Old.Size
		lc.KeptSize = &old
	}
	return lc, nil
}

// acknowledgedMove is the seq of the log.acknowledged event in kurad's
// feed that moved log from to log to (POST /v1/admin/log/acknowledge), 0
// when the feed holds none (or cannot be read). It is kurad's own word:
// whoever can write kurad's files can write such an event too, so it
// informs the person deciding and accepts nothing by itself.
func (c *cli) acknowledgedMove(ctx context.Context, from, to string) int64 {
	var after int64
	for {
		p, err := c.client.Events(ctx, client.EventQuery{After: after, Limit: 1000, Types: []string{"log.acknowledged"}})
		if err != nil {
			return 0
		}
		for _, e := range p.Events {
			if e.Refs["origin"] == from && e.Refs["new_origin"] == to {
				return e.Seq
			}
		}
		if p.NextAfter <= after || p.NextAfter >= p.LastSeq {
			return 0
		}
		after = p.NextAfter
	}
}

// moveEvidence says what kurad's feed holds about the origin change.
func moveEvidence(lc *logCheck) string {
	if lc.AcknowledgedSeq == 0 {
		return fmt.Sprintf("kurad's event feed records no acknowledgement moving log %s to %s", lc.PreviousOrigin, lc.Origin)
	}
	return fmt.Sprintf("kurad's event feed records an acknowledgement moving log %s to %s (event %d), which is kurad's own word: whoever can write its files can write one too", lc.PreviousOrigin, lc.Origin, lc.AcknowledgedSeq)
}

func printLogCheck(w io.Writer, lc *logCheck) {
	switch {
	case !lc.Checked:
		fmt.Fprintf(w, "log: not checked (kurad keeps no log)\n")
	case !lc.OK:
		fmt.Fprintf(w, "FAILED log %s: %s\n", lc.Origin, lc.Problem)
	case lc.StateDir == "":
		fmt.Fprintf(w, "OK log %s: checkpoint of size %d signed by kurad's key; no checkpoint kept, so not checked against an earlier one\n", lc.Origin, lc.Size)
	case lc.FirstUse:
		fmt.Fprintf(w, "OK log %s: checkpoint of size %d signed by kurad's key, pinned on first use and kept in %s\n", lc.Origin, lc.Size, lc.StateDir)
	default:
		fmt.Fprintf(w, "OK log %s: checkpoint of size %d is consistent with the one of size %d kept in %s\n", lc.Origin, lc.Size, *lc.KeptSize, lc.StateDir)
	}
	if lc.OK && lc.PreviousOrigin != "" {
		fmt.Fprintf(w, "  log origin changed: %s accepted in place of %s (--accept-origin); %s\n", lc.Origin, lc.PreviousOrigin, moveEvidence(lc))
	}
	if lc.KeyAdded != "" {
		fmt.Fprintf(w, "  log key rotated: %s now pinned too (it signed beside a pinned key)\n", lc.KeyAdded)
	}
}
