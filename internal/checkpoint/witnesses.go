package checkpoint

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	tlogformat "github.com/transparency-dev/formats/log"

	"github.com/kura-memory/kura/internal/kura"
)

// Doer sends HTTP requests (an *http.Client).
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

func defaultClient() Doer { return &http.Client{Timeout: checkBudget} }

// checkBudget is the least time one check of a witness gets, whatever the
// poll: the witness's answer and the reads of the log that judge it. A
// check cut short says nothing about the log (inconclusive, below).
const checkBudget = 5 * time.Second

// errNotThisLog marks an entry of a witness's list that is not a checkpoint
// this kurad signed: another log's, or no checkpoint at all.
var errNotThisLog = errors.New("not a checkpoint of this log")

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

// witnessed is the newest tree of the log's origin one witness cosigned and
// kurad found its log consistent with, with the witness's cosignature lines.
// A cosignature signs the checkpoint's text, not kurad's signature lines,
// so the lines go under any note kurad signs of the same tree.
type witnessed struct {
	origin string
	head   kura.LogHead
	lines  string
}

// keepWitnessed remembers w as what witness url cosigned, unless it already
// holds a larger tree of the same origin.
func (c *Checkpointer) keepWitnessed(url string, w *witnessed) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.witnessed[url]; ok && cur.origin == w.origin && cur.head.Size > w.head.Size {
		return
	}
	c.witnessed[url] = *w
}

func (c *Checkpointer) withCosignatures(s *signed) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := s.note
	// The configured order, fixed; the URLs as watchState keeps them. The
	// statuses themselves are guarded by watch.mu, not c.mu: read none.
	for _, u := range c.cfg.Witnesses {
		w, ok := c.witnessed[strings.TrimRight(u, "/")]
		if !ok || w.origin != s.origin || w.head != s.head {
			continue
		}
		if len(out) == len(s.note) {
			out = append([]byte(nil), s.note...)
		}
		out = append(out, w.lines...)
	}
	return out
}

// Cosigned returns the current origin and the newest tree each witness
// cosigned of it, one checkpoint per tree, largest first. Under writes a
// witness's newest tree is seldom the log's current one, so the current
// checkpoint rarely carries a cosignature; these are what a client checks
// a witness vouched for, after checking that the current checkpoint is
// consistent with them (GET /v1/log/consistency).
func (c *Checkpointer) Cosigned() (string, []kura.CosignedCheckpoint, error) {
	origin := c.cfg.Log.LogOrigin()
	c.mu.Lock()
	byTree := map[kura.LogHead]int{}
	var out []kura.CosignedCheckpoint
	var heads []kura.LogHead
	var lines [][]string
	for _, u := range c.cfg.Witnesses {
		url := strings.TrimRight(u, "/")
		w, ok := c.witnessed[url]
		if !ok || w.origin != origin {
			continue
		}
		i, seen := byTree[w.head]
		if !seen {
			i = len(out)
			byTree[w.head] = i
			out = append(out, kura.CosignedCheckpoint{Size: w.head.Size, Root: base64.StdEncoding.EncodeToString(w.head.Root[:])})
			heads, lines = append(heads, w.head), append(lines, nil)
		}
		out[i].Witnesses = append(out[i].Witnesses, url)
		lines[i] = append(lines[i], w.lines)
	}
	signers, err := c.signersFor(origin)
	c.mu.Unlock()
	if err != nil {
		return "", nil, err
	}
	for i := range out {
		msg, err := note.Sign(&note.Note{Text: Body(origin, heads[i].Size, tlog.Hash(heads[i].Root))}, signers...)
		if err != nil {
			return "", nil, fmt.Errorf("sign cosigned checkpoint: %w", err)
		}
		out[i].Checkpoint = string(msg) + strings.Join(lines[i], "")
	}
	slices.SortFunc(out, func(a, b kura.CosignedCheckpoint) int { return cmp.Compare(b.Size, a.Size) })
	return origin, out, nil
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
		prev := c.watch.witnesses[i]
		c.watch.mu.Unlock()
		url := prev.URL
		st := kura.WitnessStatus{URL: url, CheckedAt: kura.FormatTime(time.Now())}
		var found []kura.LogConflict
		var got *witnessed
		list, err := c.fetch(ctx, url)
		// The log's size after the witness answered: it only grows, and a
		// witness may have cosigned what was written while it answered.
		head, herr := c.cfg.Log.LogCaughtUp(ctx)
		origin := c.cfg.Log.LogOrigin()
		var failed error // the log could not be read to judge the answer
		switch {
		case err != nil:
			st.State, st.Error = "unreachable", err.Error()
			c.log.Warn("witness unreachable", "witness", url, "err", err)
		case herr != nil:
			// Judged against a log not caught up, a witness ahead of this
			// instance would look like a rollback.
			failed = fmt.Errorf("reading the log: %w", herr)
		default:
			st.State = "no_checkpoint"
			for _, e := range list.Checkpoints {
				cf, w, err := c.judge(ctx, url, e.Checkpoint, origin, head)
				if errors.Is(err, errNotThisLog) {
					continue
				}
				if err != nil {
					failed = err
					continue
				}
				if cf != nil {
					found = append(found, *cf)
					continue
				}
				if w != nil { // this origin, consistent
					st.Size, st.State, got = w.head.Size, kura.LogOK, w
				}
			}
			for _, cf := range found {
				st.State = cf.State
			}
		}
		if failed != nil && len(found) == 0 {
			// Inconclusive: a database error is no news about the witness
			// or the log. The last conclusive status stands, with the
			// reason this check did not replace it.
			st, got = prev, nil
			st.Error = "check not completed: " + failed.Error()
			c.log.Warn("witness check not completed", "witness", url, "err", failed)
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
		if got != nil && got.lines != "" {
			c.keepWitnessed(url, got)
		}
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

// judge reads one witnessed checkpoint. An error wrapping errNotThisLog:
// not a checkpoint this kurad signed (another log's); any other error: the
// log could not be read to judge it. Otherwise a conflict, or the witnessed
// tree with its cosignature lines when it is of the current origin and
// consistent, or neither for an acknowledged one.
func (c *Checkpointer) judge(ctx context.Context, witness, text, origin string, head kura.LogHead) (*kura.LogConflict, *witnessed, error) {
	first, _, _ := strings.Cut(text, "\n")
	n, err := note.Open([]byte(text), c.verifiers(first))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errNotThisLog, err)
	}
	var cp tlogformat.Checkpoint
	if _, err := cp.Unmarshal([]byte(n.Text)); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errNotThisLog, err)
	}
	if cp.Origin != first {
		return nil, nil, fmt.Errorf("%w: origin line mismatch", errNotThisLog)
	}
	size := int64(cp.Size)
	root := base64.StdEncoding.EncodeToString(cp.Hash)
	cf := &kura.LogConflict{Witness: witness, Origin: cp.Origin, Size: size, Root: root}
	if cp.Origin != origin {
		ok, err := c.cfg.Log.LogAcknowledged(ctx, cp.Origin, size, root)
		if err != nil || ok {
			return nil, nil, err
		}
		cf.State, cf.Reason = kura.LogRollback, fmt.Sprintf("the witness holds a checkpoint of log %q (size %d) signed by this kurad's key; this database is log %q and knows nothing of it: an older copy, or another database under the same key", cp.Origin, size, origin)
		return cf, nil, nil
	}
	if size > head.Size {
		if ok, err := c.cfg.Log.LogAcknowledged(ctx, cp.Origin, size, root); err != nil || ok {
			return nil, nil, err
		}
		cf.State, cf.Reason = kura.LogRollback, fmt.Sprintf("the witness cosigned a tree of %d leaves; this log has %d", size, head.Size)
		return cf, nil, nil
	}
	mine, err := c.cfg.Log.LogTreeHash(ctx, size)
	if err != nil {
		return nil, nil, err
	}
	if string(mine[:]) != string(cp.Hash) {
		if ok, err := c.cfg.Log.LogAcknowledged(ctx, cp.Origin, size, root); err != nil || ok {
			return nil, nil, err
		}
		cf.State, cf.Reason = kura.LogFork, fmt.Sprintf("the witness cosigned another tree of %d leaves than this log's", size)
		return cf, nil, nil
	}
	var lines strings.Builder
	for _, s := range n.UnverifiedSigs {
		lines.WriteString("— " + s.Name + " " + s.Base64 + "\n")
	}
	return nil, &witnessed{origin: cp.Origin, head: kura.LogHead{Size: size, Root: mine}, lines: lines.String()}, nil
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
