package witness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	tlogfmt "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Actions of an Outcome.
const (
	ActionCosigned  = "cosigned"  // a new checkpoint was checked, cosigned and persisted
	ActionUnchanged = "unchanged" // the log shows the checkpoint already cosigned
	ActionRefused   = "refused"   // the checkpoint was refused; Reason says why
	ActionError     = "error"     // the poll failed before the checkpoint could be judged
)

// Outcome is what one poll of one log came to.
type Outcome struct {
	URL    string
	Origin string // empty when the log could not be read
	Size   uint64 // the size the log showed
	Action string
	Reason string // for ActionRefused: smaller, inconsistent, bad_signature, bad_proof
	Err    error  // for ActionError and ActionRefused: the detail
}

// pollTimeout bounds one poll of one log, all its requests together.
const pollTimeout = 30 * time.Second

// Poll polls every log once, in order, and says what came of each. Run
// does the same on every tick; tests and one-shot checks call it directly.
func (w *Witness) Poll(ctx context.Context) []Outcome {
	out := make([]Outcome, 0, len(w.cfg.Logs))
	for _, l := range w.cfg.Logs {
		out = append(out, w.pollOnce(ctx, l))
	}
	return out
}

func (w *Witness) pollOnce(ctx context.Context, l Log) Outcome {
	ctx, cancel := context.WithTimeout(ctx, pollTimeout)
	defer cancel()
	o := Outcome{URL: l.URL}
	body, err := w.get(ctx, l.URL+"/v1/log/checkpoint")
	if err != nil {
		return w.failed(o, err)
	}
	// The origin picks the state and the pinned keys, so it is read before
	// the signature is checked; nothing else of the text is trusted yet.
	var cp tlogfmt.Checkpoint
	if _, err := cp.Unmarshal(body); err != nil {
		return w.failed(o, fmt.Errorf("parse checkpoint: %w", err))
	}
	if len(cp.Hash) != 32 {
		return w.failed(o, fmt.Errorf("parse checkpoint: root hash of %d bytes, want 32", len(cp.Hash)))
	}
	o.Origin, o.Size = cp.Origin, cp.Size
	w.reached(l.URL)

	defer w.lockOrigin(cp.Origin)()
	old, known := w.checkpoint(cp.Origin)
	var pins []string
	if known {
		pins = slices.Clone(old.VKeys)
	}
	if l.VKey != "" && !slices.Contains(pins, l.VKey) {
		pins = append(pins, l.VKey)
	}
	if len(pins) == 0 {
		// First contact with no key given: trust the key kurad names now.
		vkey, err := w.infoVKey(ctx, l.URL)
		if err != nil {
			return w.failed(o, err)
		}
		pins = []string{vkey}
	}
	n, pins, err := w.open(ctx, l, cp.Origin, body, pins)
	if err != nil {
		return w.refuse(o, known, reasonBadSignature, err)
	}
	var newHash tlog.Hash
	copy(newHash[:], cp.Hash)

	switch {
	case !known:
		w.log.Info("first contact with a log: cosigning its checkpoint as the base", "origin", cp.Origin, "url", l.URL, "size", cp.Size, "vkey", pins[0])
		if prev := w.originOf(l.URL); prev != "" && prev != cp.Origin {
			// Legitimate after an acknowledged rollback; otherwise a host
			// that started a fresh log to shed its history. Either way a
			// person should know.
			w.metrics.originChanges.WithLabelValues(l.URL).Inc()
			w.log.Warn("log moved to a new origin: the old one's last cosigned checkpoint is kept, the new one is trusted from now on", "url", l.URL, "old_origin", prev, "origin", cp.Origin)
		}
	case cp.Size < old.Size:
		return w.refuse(o, known, reasonSmaller, fmt.Errorf("log shows %d leaves, the witness cosigned %d", cp.Size, old.Size))
	case cp.Size == old.Size:
		if !bytes.Equal(cp.Hash, old.Hash) {
			return w.refuse(o, known, reasonInconsistent, fmt.Errorf("log shows another root hash for size %d than the one cosigned (a fork)", cp.Size))
		}
		if len(pins) != len(old.VKeys) {
			st := *old
			st.VKeys = pins
			if err := saveState(w.cfg.StateDir, &st); err != nil {
				return w.failed(o, err)
			}
			w.store(&st)
		}
		o.Action = ActionUnchanged
		return o
	case old.Size > 0:
		proof, err := w.consistency(ctx, l.URL, old.Size, cp.Size)
		if err != nil {
			var pe *proofError
			if errors.As(err, &pe) {
				return w.refuse(o, known, reasonBadProof, err)
			}
			return w.failed(o, err)
		}
		var oldHash tlog.Hash
		copy(oldHash[:], old.Hash)
		if err := tlog.CheckTree(proof, int64(cp.Size), newHash, int64(old.Size), oldHash); err != nil {
			return w.refuse(o, known, reasonInconsistent, fmt.Errorf("tree of size %d is not an extension of the cosigned tree of size %d: %w", cp.Size, old.Size, err))
		}
	}

	// Only the log's own signatures go under the cosignature: other
	// witnesses' lines are not this witness's to vouch for.
	var logSigs []note.Signature
	for _, s := range n.Sigs {
		if s.Name == cp.Origin {
			logSigs = append(logSigs, s)
		}
	}
	signed, err := note.Sign(&note.Note{Text: n.Text, Sigs: logSigs}, w.cosigner)
	if err != nil {
		return w.failed(o, fmt.Errorf("cosign: %w", err))
	}
	st := &logState{Origin: cp.Origin, VKeys: pins, Size: cp.Size, Hash: cp.Hash, Checkpoint: string(signed), CosignedAt: time.Now().UTC(), URLs: []string{l.URL}}
	if known {
		st.URLs = old.URLs
		if !slices.Contains(st.URLs, l.URL) {
			st.URLs = append(slices.Clone(st.URLs), l.URL)
		}
	}
	// Durable before served: a cosignature handed out and then forgotten
	// in a crash would let the log roll back under it.
	if err := saveState(w.cfg.StateDir, st); err != nil {
		w.log.Error("cannot keep the cosigned checkpoint; not serving it", "origin", cp.Origin, "err", err)
		return w.failed(o, err)
	}
	w.store(st)
	w.setOriginOf(l.URL, cp.Origin)
	w.metrics.cosigned.WithLabelValues(cp.Origin).Inc()
	w.log.Debug("cosigned", "origin", cp.Origin, "size", cp.Size)
	o.Action = ActionCosigned
	return o
}

func (w *Witness) store(st *logState) {
	w.mu.Lock()
	w.states[st.Origin] = st
	w.mu.Unlock()
	w.metrics.setState(st)
}

func (w *Witness) failed(o Outcome, err error) Outcome {
	o.Action, o.Err = ActionError, err
	w.metrics.pollErrors.WithLabelValues(o.URL).Inc()
	// A log that stays down would write a line every poll: the first
	// failure is a warning, the rest are counted and logged at debug, and
	// the recovery says how many there were.
	w.mu.Lock()
	w.failures[o.URL]++
	n := w.failures[o.URL]
	w.mu.Unlock()
	if n == 1 {
		w.log.Warn("poll failed; trying again on every poll", "url", o.URL, "err", err)
	} else {
		w.log.Debug("poll failed again", "url", o.URL, "failures", n, "err", err)
	}
	return o
}

// reached notes that a poll of url got an answer it could judge.
func (w *Witness) reached(url string) {
	w.mu.Lock()
	n := w.failures[url]
	delete(w.failures, url)
	w.mu.Unlock()
	if n > 0 {
		w.log.Info("log reachable again", "url", url, "failed_polls", n)
	}
}

func (w *Witness) refuse(o Outcome, known bool, reason string, err error) Outcome {
	o.Action, o.Reason, o.Err = ActionRefused, reason, err
	label := o.Origin
	if !known {
		label = unknownOrigin
	}
	w.metrics.refused.WithLabelValues(label, reason).Inc()
	w.log.Error("checkpoint refused; keeping the last one cosigned", "origin", o.Origin, "url", o.URL, "size", o.Size, "reason", reason, "err", err)
	return o
}

// open verifies the log's signature on the checkpoint with the pinned keys
// and returns the pins, one longer when the log rotated its key: a
// checkpoint signed by a pinned key and by the key /v1/info names now adds
// that key, so the old key vouches for the new one.
func (w *Witness) open(ctx context.Context, l Log, origin string, body []byte, pins []string) (*note.Note, []string, error) {
	n, err := openWith(body, origin, pins)
	if err != nil {
		return nil, nil, err
	}
	rotated := false
	for _, s := range n.UnverifiedSigs {
		if s.Name == origin {
			rotated = true
		}
	}
	if !rotated {
		return n, pins, nil
	}
	vkey, err := w.infoVKey(ctx, l.URL)
	if err != nil || slices.Contains(pins, vkey) {
		return n, pins, nil // no new key to learn; the checkpoint is good on the pinned one
	}
	more := append(slices.Clone(pins), vkey)
	n2, err := openWith(body, origin, more)
	if err != nil {
		return n, pins, nil
	}
	v, _ := note.NewVerifier(vkey)
	for _, s := range n2.Sigs {
		if s.Name == v.Name() && s.Hash == v.KeyHash() {
			w.log.Info("log key rotated: the pinned key signed a checkpoint with the new one; pinning it", "origin", origin, "vkey", vkey)
			return n2, more, nil
		}
	}
	return n, pins, nil
}

// openWith verifies body with the pinned keys named origin; at least one
// of them must have signed.
func openWith(body []byte, origin string, pins []string) (*note.Note, error) {
	var vs []note.Verifier
	for _, k := range pins {
		v, err := note.NewVerifier(k)
		if err != nil || v.Name() != origin {
			continue
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("no pinned key is named %q", origin)
	}
	n, err := note.Open(body, note.VerifierList(vs...))
	if err != nil {
		return nil, fmt.Errorf("verify checkpoint signature: %w", err)
	}
	return n, nil
}

// infoVKey reads the log's verifier key from /v1/info.
func (w *Witness) infoVKey(ctx context.Context, base string) (string, error) {
	b, err := w.get(ctx, base+"/v1/info")
	if err != nil {
		return "", err
	}
	var info struct {
		LogVKey string `json:"log_vkey"`
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return "", fmt.Errorf("read /v1/info: %w", err)
	}
	if info.LogVKey == "" {
		return "", errors.New("read /v1/info: no log_vkey (is the log off?)")
	}
	if _, err := note.NewVerifier(info.LogVKey); err != nil {
		return "", fmt.Errorf("read /v1/info: log_vkey: %w", err)
	}
	return info.LogVKey, nil
}

// proofError is a consistency proof that came back but is malformed.
type proofError struct{ msg string }

func (e *proofError) Error() string { return "consistency proof: " + e.msg }

func (w *Witness) consistency(ctx context.Context, base string, old, new uint64) (tlog.TreeProof, error) {
	q := url.Values{"old": {strconv.FormatUint(old, 10)}, "new": {strconv.FormatUint(new, 10)}}
	b, err := w.get(ctx, base+"/v1/log/consistency?"+q.Encode())
	if err != nil {
		return nil, err
	}
	var resp struct {
		Old   uint64   `json:"old"`
		New   uint64   `json:"new"`
		Proof []string `json:"proof"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, &proofError{msg: err.Error()}
	}
	if resp.Old != old || resp.New != new {
		return nil, &proofError{msg: fmt.Sprintf("asked for %d..%d, got %d..%d", old, new, resp.Old, resp.New)}
	}
	// A proof has at most about 2·log2(size) hashes; more is garbage.
	if len(resp.Proof) > 128 {
		return nil, &proofError{msg: fmt.Sprintf("%d hashes", len(resp.Proof))}
	}
	proof := make(tlog.TreeProof, len(resp.Proof))
	for i, s := range resp.Proof {
		h, err := tlog.ParseHash(s)
		if err != nil {
			return nil, &proofError{msg: fmt.Sprintf("hash %d: %v", i, err)}
		}
		proof[i] = h
	}
	return proof, nil
}

// get fetches base-relative u with the bearer token and returns the body of
// a 200 answer, at most maxBody bytes.
func (w *Witness) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", u, err)
	}
	if w.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+w.cfg.Token)
	}
	resp, err := w.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", u, err)
	}
	if len(b) > maxBody {
		return nil, fmt.Errorf("get %s: answer longer than %d bytes", u, maxBody)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("get %s: %s: %s", u, resp.Status, strings.TrimSpace(string(b[:min(len(b), 200)])))
	}
	return b, nil
}

// originOf is the origin the log at url showed when last cosigned, "" for
// none.
func (w *Witness) originOf(url string) string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.urlOrigin[url]
}

func (w *Witness) setOriginOf(url, origin string) {
	w.mu.Lock()
	w.urlOrigin[url] = origin
	w.mu.Unlock()
}
