package checkpoint

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"

	tlogformat "github.com/transparency-dev/formats/log"

	"github.com/kura-memory/kura/internal/kura"
)

// Doer sends HTTP requests (an *http.Client).
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

func defaultClient() Doer { return &http.Client{Timeout: 5 * time.Second} }

type watchState struct {
	mu        sync.Mutex
	witnesses []kura.WitnessStatus
	// conflicts stay until an admin acknowledges them: nothing found is
	// forgotten because a witness stopped answering.
	conflicts []kura.LogConflict
}

func (w *watchState) init(urls []string) {
	for _, u := range urls {
		w.witnesses = append(w.witnesses, kura.WitnessStatus{URL: strings.TrimRight(u, "/"), State: "unchecked"})
	}
}

// cosigned are the cosignature lines witnesses gave one tree.
type cosigned struct {
	origin string
	head   kura.LogHead
	lines  map[string]string // witness URL -> its signature lines
}

func (c *Checkpointer) withCosignatures(s *signed) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cosigs.origin != s.origin || c.cosigs.head != s.head || len(c.cosigs.lines) == 0 {
		return s.note
	}
	out := append([]byte(nil), s.note...)
	// The configured order, fixed; the URLs as watchState keeps them. The
	// statuses themselves are guarded by watch.mu, not c.mu: read none.
	for _, u := range c.cfg.Witnesses {
		out = append(out, c.cosigs.lines[strings.TrimRight(u, "/")]...)
	}
	return out
}

// witnessList is GET /v1/witness/checkpoints.
type witnessList struct {
	Witness     string `json:"witness"`
	Checkpoints []struct {
		Origin     string `json:"origin"`
		Size       int64  `json:"size"`
		Checkpoint string `json:"checkpoint"`
	} `json:"checkpoints"`
}

// maxWitnessAnswer bounds what a witness may send.
const maxWitnessAnswer = 4 << 20

func (c *Checkpointer) fetch(ctx context.Context, base string) (*witnessList, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/witness/checkpoints", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("witness answered %s", resp.Status)
	}
	var l witnessList
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxWitnessAnswer)).Decode(&l); err != nil {
		return nil, fmt.Errorf("witness answer: %w", err)
	}
	return &l, nil
}

// CheckWitnesses asks every witness what it cosigned and compares it with
// the log: a witnessed tree larger than the log, or one the log does not
// extend, holds every write (503) until an admin acknowledges it.
//
// The log is read after each witness answered, never before: a live log
// grows while the question is on its way, and a witness may meanwhile
// cosign a tree larger than the one the log had when it was asked. The log
// only ever grows, so a tree larger than the log read afterwards is one
// this log never had.
func (c *Checkpointer) CheckWitnesses(ctx context.Context) {
	for i := range c.watch.witnesses {
		c.watch.mu.Lock()
		url := c.watch.witnesses[i].URL
		c.watch.mu.Unlock()
		st := kura.WitnessStatus{URL: url, CheckedAt: kura.FormatTime(time.Now())}
		var found []kura.LogConflict
		lines := ""
		list, err := c.fetch(ctx, url)
		origin, head := c.cfg.Log.LogOrigin(), c.cfg.Log.Log()
		if err != nil {
			st.State, st.Error = "unreachable", err.Error()
			c.log.Warn("witness unreachable", "witness", url, "err", err)
		} else {
			st.State = "no_checkpoint"
			for _, e := range list.Checkpoints {
				cf, size, l, err := c.judge(ctx, url, e.Checkpoint, origin, head)
				if err != nil {
					continue // not this kurad's log, or not a checkpoint
				}
				if cf != nil {
					found = append(found, *cf)
					continue
				}
				if size >= 0 { // this origin, consistent
					st.Size, st.State, lines = size, kura.LogOK, l
				}
			}
			for _, cf := range found {
				st.State = cf.State
			}
		}
		c.watch.mu.Lock()
		c.watch.witnesses[i] = st
		for _, cf := range found {
			if !containsConflict(c.watch.conflicts, cf) {
				c.watch.conflicts = append(c.watch.conflicts, cf)
				c.log.Error("log contradicted by a witness: writes are refused until an admin acknowledges it (docs/log.md)",
					"witness", url, "state", cf.State, "origin", cf.Origin, "witnessed_size", cf.Size, "log_size", head.Size, "reason", cf.Reason)
			}
		}
		c.watch.mu.Unlock()
		c.mu.Lock()
		if lines != "" && st.Size == head.Size {
			if c.cosigs.origin != origin || c.cosigs.head != head {
				c.cosigs = cosigned{origin: origin, head: head, lines: map[string]string{}}
			}
			c.cosigs.lines[url] = lines
		}
		c.mu.Unlock()
	}
	c.applyGate()
}

func containsConflict(l []kura.LogConflict, c kura.LogConflict) bool {
	for _, x := range l {
		if x.Witness == c.Witness && x.Origin == c.Origin && x.Size == c.Size && x.Root == c.Root {
			return true
		}
	}
	return false
}

// judge reads one witnessed checkpoint. err: not a checkpoint this kurad
// signed (another log's). Otherwise a conflict, or size >= 0 with the
// cosignature lines when it is of the current origin and consistent, or
// size -1 for an acknowledged one of another origin.
func (c *Checkpointer) judge(ctx context.Context, witness, text, origin string, head kura.LogHead) (*kura.LogConflict, int64, string, error) {
	first, _, _ := strings.Cut(text, "\n")
	n, err := note.Open([]byte(text), c.verifiers(first))
	if err != nil {
		return nil, 0, "", err
	}
	var cp tlogformat.Checkpoint
	if _, err := cp.Unmarshal([]byte(n.Text)); err != nil {
		return nil, 0, "", err
	}
	if cp.Origin != first {
		return nil, 0, "", errors.New("origin line mismatch")
	}
	size := int64(cp.Size)
	root := base64.StdEncoding.EncodeToString(cp.Hash)
	cf := &kura.LogConflict{Witness: witness, Origin: cp.Origin, Size: size, Root: root}
	if cp.Origin != origin {
		ok, err := c.cfg.Log.LogAcknowledged(ctx, cp.Origin, size, root)
		if err != nil || ok {
			return nil, -1, "", err
		}
		cf.State, cf.Reason = kura.LogRollback, fmt.Sprintf("the witness holds a checkpoint of log %q (size %d) signed by this kurad's key; this database is log %q and knows nothing of it: an older copy, or another database under the same key", cp.Origin, size, origin)
		return cf, 0, "", nil
	}
	if size > head.Size {
		if ok, err := c.cfg.Log.LogAcknowledged(ctx, cp.Origin, size, root); err == nil && ok {
			return nil, -1, "", nil
		}
		cf.State, cf.Reason = kura.LogRollback, fmt.Sprintf("the witness cosigned a tree of %d leaves; this log has %d", size, head.Size)
		return cf, 0, "", nil
	}
	mine, err := c.cfg.Log.LogTreeHash(ctx, size)
	if err != nil {
		return nil, 0, "", err
	}
	if string(mine[:]) != string(cp.Hash) {
		if ok, err := c.cfg.Log.LogAcknowledged(ctx, cp.Origin, size, root); err == nil && ok {
			return nil, -1, "", nil
		}
		cf.State, cf.Reason = kura.LogFork, fmt.Sprintf("the witness cosigned another tree of %d leaves than this log's", size)
		return cf, 0, "", nil
	}
	var lines strings.Builder
	for _, s := range n.UnverifiedSigs {
		lines.WriteString("— " + s.Name + " " + s.Base64 + "\n")
	}
	return nil, size, lines.String(), nil
}

// applyGate holds or releases writes after a check.
func (c *Checkpointer) applyGate() {
	c.watch.mu.Lock()
	var first *kura.LogConflict
	if len(c.watch.conflicts) > 0 {
		first = &c.watch.conflicts[0]
	}
	c.watch.mu.Unlock()
	if first == nil {
		c.cfg.Log.AllowWrites()
		return
	}
	e := kura.Errorf(kura.EUnavailable, "writes are refused: %s (%s; %s). Restore the newer backup, or acknowledge with POST /v1/admin/log/acknowledge (docs/log.md)",
		first.State, first.Witness, first.Reason)
	e.Details = map[string]any{"log": first.State}
	c.cfg.Log.RefuseWrites(e)
}

// Status is the log's state for /v1/info and /readyz.
func (c *Checkpointer) Status() kura.LogStatus {
	head := c.cfg.Log.Log()
	c.watch.mu.Lock()
	defer c.watch.mu.Unlock()
	st := kura.LogStatus{Size: head.Size, Witnesses: append([]kura.WitnessStatus{}, c.watch.witnesses...),
		Detected: append([]kura.LogConflict(nil), c.watch.conflicts...), State: kura.LogUnwitnessed}
	for _, w := range st.Witnesses {
		if w.State == kura.LogOK {
			st.State = kura.LogOK
		}
	}
	for _, cf := range st.Detected {
		st.State = cf.State
		if cf.State == kura.LogFork {
			break
		}
	}
	return st
}

// ErrNothingDetected answers an acknowledgement with nothing to
// acknowledge.
var ErrNothingDetected = kura.Errorf(kura.EConflict, "no rollback or fork is detected; there is nothing to acknowledge")

// Acknowledge records every detected conflict in the log (an admin
// decided to go on from this database), moves the log to a new origin when
// its own was contradicted, and lets writes through again. It returns the
// origin the log continues under.
func (c *Checkpointer) Acknowledge(ctx context.Context, reason, by string) (string, []kura.LogConflict, error) {
	c.watch.mu.Lock()
	conflicts := append([]kura.LogConflict(nil), c.watch.conflicts...)
	c.watch.mu.Unlock()
	if len(conflicts) == 0 {
		return "", nil, ErrNothingDetected
	}
	origin := c.cfg.Log.LogOrigin()
	for _, cf := range conflicts {
		o, err := c.cfg.Log.AcknowledgeLog(ctx, kura.LogAcknowledgement{Origin: cf.Origin, Size: cf.Size, Root: cf.Root,
			Witness: cf.Witness, Reason: reason, By: by})
		if err != nil {
			return "", nil, err
		}
		origin = o
	}
	c.watch.mu.Lock()
	c.watch.conflicts = nil
	c.watch.mu.Unlock()
	c.log.Warn("log rollback or fork acknowledged: writes resume under a new origin", "by", by, "reason", reason,
		"origin", origin, "conflicts", len(conflicts))
	c.applyGate()
	c.Notify()
	return origin, conflicts, nil
}
