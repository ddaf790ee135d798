package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	tlogfmt "github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// kurad keeps one RFC 6962 Merkle log of every event (shared/API.md, "Log,
// checkpoints and witnesses"). This file fetches its checkpoints and proofs
// and checks them with golang.org/x/mod's tlog and note packages: nothing
// here trusts kurad's word for a hash.

// Log states /v1/info reports in log.state.
const (
	LogStateOK          = "ok"
	LogStateUnwitnessed = "unwitnessed"
	LogStateRollback    = "rollback_detected"
	LogStateFork        = "fork_detected"
	LogStateOff         = "off"
)

// LogInfo is the log part of GET /v1/info.
type LogInfo struct {
	Origin string     `json:"log_origin"`
	VKey   string     `json:"log_vkey"`
	Log    *LogStatus `json:"log"`
}

// LogStatus is /v1/info's "log" object.
type LogStatus struct {
	State     string       `json:"state"`
	Size      int64        `json:"size"`
	Witnesses []LogWitness `json:"witnesses"`
}

// LogWitness is what kurad last heard from one witness.
type LogWitness struct {
	URL       string `json:"url"`
	Size      int64  `json:"size"`
	State     string `json:"state"`
	CheckedAt string `json:"checked_at"`
	Error     string `json:"error"`
}

// LogInfo returns the log fields of GET /v1/info. Origin is empty when kurad
// keeps no log.
func (c *Client) LogInfo(ctx context.Context) (*LogInfo, error) {
	var out LogInfo
	if err := c.do(ctx, "log info", http.MethodGet, "/v1/info", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// maxCheckpoint bounds a checkpoint note: three lines and a few signatures.
const maxCheckpoint = 64 << 10

// LogCheckpoint returns kurad's current checkpoint note as served
// (GET /v1/log/checkpoint): the log's signature and any witness
// cosignatures. Check it with VerifyCheckpoint.
func (c *Client) LogCheckpoint(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/log/checkpoint", nil)
	if err != nil {
		return nil, fmt.Errorf("log checkpoint: %w", err)
	}
	req.Header.Set("Accept", "text/plain")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("log checkpoint: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, decodeError(resp)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxCheckpoint+1))
	if err != nil {
		return nil, fmt.Errorf("log checkpoint: read answer: %w", err)
	}
	if len(b) > maxCheckpoint {
		return nil, fmt.Errorf("log checkpoint: answer larger than %d bytes", maxCheckpoint)
	}
	return b, nil
}

// LogConsistencyProof is the answer of GET /v1/log/consistency.
type LogConsistencyProof struct {
	Old   int64    `json:"old"`
	New   int64    `json:"new"`
	Proof []string `json:"proof"`
}

// LogConsistency returns the proof that the tree of size old is a prefix of
// the tree of size new (GET /v1/log/consistency?old=&new=).
func (c *Client) LogConsistency(ctx context.Context, old, new int64) (*LogConsistencyProof, error) {
	q := url.Values{"old": {strconv.FormatInt(old, 10)}, "new": {strconv.FormatInt(new, 10)}}
	var out LogConsistencyProof
	if err := c.do(ctx, "log consistency", http.MethodGet, "/v1/log/consistency", q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// LogInclusionProof is the answer of GET /v1/log/inclusion. Leaf (base64
// leaf data) is set for a lookup by ledger id.
type LogInclusionProof struct {
	Seq      int64    `json:"seq"`
	Size     int64    `json:"size"`
	LeafHash string   `json:"leaf_hash"`
	Leaf     string   `json:"leaf,omitempty"`
	Proof    []string `json:"proof"`
}

// LogInclusion returns the proof that the event with seq is leaf seq-1 of
// the tree of size size (size 0: kurad's current size).
func (c *Client) LogInclusion(ctx context.Context, seq, size int64) (*LogInclusionProof, error) {
	return c.logInclusion(ctx, url.Values{"seq": {strconv.FormatInt(seq, 10)}}, size)
}

// LogInclusionByLedger returns the inclusion proof of the ledger.written
// event of ledger id, with its leaf data (size 0: kurad's current size).
func (c *Client) LogInclusionByLedger(ctx context.Context, ledgerID string, size int64) (*LogInclusionProof, error) {
	return c.logInclusion(ctx, url.Values{"ledger_id": {ledgerID}}, size)
}

// LogInclusionBySession returns the inclusion proof of the newest
// session.head event of session id, with its leaf data (size 0: kurad's
// current size): the head the log holds for the session.
func (c *Client) LogInclusionBySession(ctx context.Context, sessionID string, size int64) (*LogInclusionProof, error) {
	return c.logInclusion(ctx, url.Values{"session_id": {sessionID}}, size)
}

func (c *Client) logInclusion(ctx context.Context, q url.Values, size int64) (*LogInclusionProof, error) {
	if size > 0 {
		q.Set("size", strconv.FormatInt(size, 10))
	}
	var out LogInclusionProof
	if err := c.do(ctx, "log inclusion", http.MethodGet, "/v1/log/inclusion", q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// LogLeaf is one leaf of GET /v1/log/leaves. Data (base64) is empty when the
// event was compacted away or the caller may not read it.
type LogLeaf struct {
	Index    int64  `json:"index"`
	Seq      int64  `json:"seq"`
	LeafHash string `json:"leaf_hash"`
	Data     string `json:"data,omitempty"`
}

// LogLeaves returns leaves start (inclusive) to end (exclusive), at most
// 1000 (GET /v1/log/leaves).
func (c *Client) LogLeaves(ctx context.Context, start, end int64) ([]LogLeaf, error) {
	q := url.Values{"start": {strconv.FormatInt(start, 10)}, "end": {strconv.FormatInt(end, 10)}}
	var out struct {
		Leaves []LogLeaf `json:"leaves"`
	}
	if err := c.do(ctx, "log leaves", http.MethodGet, "/v1/log/leaves", q, nil, &out); err != nil {
		return nil, err
	}
	return out.Leaves, nil
}

// Checkpoint is a checkpoint whose log signature verified.
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
	// Text is the note as given, signatures included.
	Text []byte
	// Unverified names the signers of the other signature lines (witness
	// cosignatures), which VerifyCheckpoint did not check.
	Unverified []string
}

// Reasons a LogCheckError carries; the witness counts its refusals by the
// same words.
const (
	LogSmaller      = "smaller"
	LogInconsistent = "inconsistent"
	LogBadSignature = "bad_signature"
	LogBadProof     = "bad_proof"
	// LogOriginChanged: the checkpoint is of another origin than the one
	// last verified under the same key (CheckpointState).
	LogOriginChanged = "origin_changed"
)

// LogCheckError is a checkpoint or proof that does not hold up.
type LogCheckError struct {
	Reason string // LogSmaller, LogInconsistent, LogBadSignature, LogBadProof or LogOriginChanged
	Origin string
	Old    int64 // the size trusted so far (consistency failures)
	New    int64 // the size offered
	// Previous is, for LogOriginChanged, the origin last verified under
	// the key that signed this checkpoint.
	Previous string
	Msg      string
}

func (e *LogCheckError) Error() string { return e.Msg }

// IsLogCheckError reports whether err is a *LogCheckError for reason ("" any).
func IsLogCheckError(err error, reason string) bool {
	var le *LogCheckError
	return errors.As(err, &le) && (reason == "" || le.Reason == reason)
}

func badSignature(format string, args ...any) error {
	return &LogCheckError{Reason: LogBadSignature, Msg: "checkpoint: " + fmt.Sprintf(format, args...)}
}

// CheckpointOrigin reads the origin line of a checkpoint note without
// checking anything, to find which key or kept state applies to it.
func CheckpointOrigin(text []byte) (string, error) {
	body, _, ok := bytes.Cut(text, []byte("\n\n"))
	if !ok {
		return "", errors.New("checkpoint: not a signed note (no blank line before the signatures)")
	}
	var cp tlogfmt.Checkpoint
	if _, err := cp.Unmarshal(append(body, '\n')); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	return cp.Origin, nil
}

// VerifyCheckpoint checks that text is a C2SP checkpoint signed by one of
// vkeys whose name is the checkpoint's origin (a log key: kurad names its key
// after the origin), and returns what it commits to. Other signatures
// (witness cosignatures) are allowed and not checked here: see
// VerifyCosignatures. A signature by one of vkeys that does not verify fails
// the whole note.
func VerifyCheckpoint(text []byte, vkeys ...string) (*Checkpoint, error) {
	if len(vkeys) == 0 {
		return nil, badSignature("no verifier key to check the signature with")
	}
	vs := make([]note.Verifier, 0, len(vkeys))
	seen := map[string]bool{}
	for _, k := range vkeys {
		if seen[k] {
			continue // note.VerifierList refuses two verifiers for one key
		}
		seen[k] = true
		v, err := note.NewVerifier(k)
		if err != nil {
			return nil, badSignature("verifier key %q: %v", k, err)
		}
		vs = append(vs, v)
	}
	n, err := note.Open(text, note.VerifierList(vs...))
	if err != nil {
		return nil, badSignature("signature does not verify against %s: %v", strings.Join(vkeys, ", "), err)
	}
	var cp tlogfmt.Checkpoint
	if _, err := cp.Unmarshal([]byte(n.Text)); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	signed := false
	for _, s := range n.Sigs {
		if s.Name == cp.Origin {
			signed = true
		}
	}
	if !signed {
		return nil, badSignature("not signed by a key of its origin %q", cp.Origin)
	}
	if len(cp.Hash) != tlog.HashSize {
		return nil, fmt.Errorf("checkpoint %s: root hash has %d bytes, want %d", cp.Origin, len(cp.Hash), tlog.HashSize)
	}
	if cp.Size > 1<<62 {
		return nil, fmt.Errorf("checkpoint %s: size %d out of range", cp.Origin, cp.Size)
	}
	out := &Checkpoint{Origin: cp.Origin, Size: int64(cp.Size), Text: text}
	copy(out.Root[:], cp.Hash)
	for _, s := range n.UnverifiedSigs {
		out.Unverified = append(out.Unverified, s.Name)
	}
	return out, nil
}

// VerifyCosignatures checks that every witness of witnessVKeys (C2SP
// tlog-cosignature verifier keys) cosigned the checkpoint text, which must
// also carry the log's signature by logVKey. It returns the witnesses' names.
func VerifyCosignatures(text []byte, logVKey string, witnessVKeys ...string) ([]string, error) {
	lv, err := note.NewVerifier(logVKey)
	if err != nil {
		return nil, badSignature("log verifier key: %v", err)
	}
	vs := []note.Verifier{lv}
	for _, k := range witnessVKeys {
		v, err := fnote.NewVerifierForCosignatureV1(k)
		if err != nil {
			return nil, fmt.Errorf("witness key %q: %w", k, err)
		}
		vs = append(vs, v)
	}
	n, err := note.Open(text, note.VerifierList(vs...))
	if err != nil {
		return nil, badSignature("signatures do not verify: %v", err)
	}
	var names []string
	for _, v := range vs[1:] {
		found := false
		for _, s := range n.Sigs {
			if s.Name == v.Name() && s.Hash == v.KeyHash() {
				found = true
			}
		}
		if !found {
			return nil, badSignature("no cosignature of witness %s", v.Name())
		}
		names = append(names, v.Name())
	}
	return names, nil
}

// ParseProof decodes a proof as kurad serves it: base64 32-byte hashes.
func ParseProof(proof []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(proof))
	for i, s := range proof {
		h, err := tlog.ParseHash(s)
		if err != nil {
			return nil, fmt.Errorf("proof hash %d: %w", i, err)
		}
		out[i] = h
	}
	return out, nil
}

// CheckConsistency checks that newer extends old: the same origin, a tree
// at least as large, the same root at the same size, else a consistency
// proof that tlog.CheckTree accepts.
func CheckConsistency(old, newer *Checkpoint, proof []string) error {
	fail := func(reason, format string, args ...any) error {
		return &LogCheckError{Reason: reason, Origin: old.Origin, Old: old.Size, New: newer.Size, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case old.Origin != newer.Origin:
		return fail(LogInconsistent, "log origin is %q, not %q", newer.Origin, old.Origin)
	case newer.Size < old.Size:
		return fail(LogSmaller, "log %s: the tree has size %d, smaller than the %d verified before (rolled back or truncated)", old.Origin, newer.Size, old.Size)
	case newer.Size == old.Size:
		if newer.Root != old.Root {
			return fail(LogInconsistent, "log %s: two different roots at size %d (a fork)", old.Origin, old.Size)
		}
		return nil
	case old.Size == 0:
		return nil // the empty tree is a prefix of every tree
	}
	p, err := ParseProof(proof)
	if err != nil {
		return fail(LogBadProof, "log %s: consistency proof %d -> %d: %v", old.Origin, old.Size, newer.Size, err)
	}
	if err := tlog.CheckTree(p, newer.Size, newer.Root, old.Size, old.Root); err != nil {
		return fail(LogInconsistent, "log %s: the tree of size %d is not consistent with the one of size %d verified before: %v", old.Origin, newer.Size, old.Size, err)
	}
	return nil
}

// CheckInclusion checks that leafHash is leaf seq-1 of the checkpoint's tree.
func CheckInclusion(cp *Checkpoint, seq int64, leafHash tlog.Hash, proof []string) error {
	if seq < 1 || seq > cp.Size {
		return &LogCheckError{Reason: LogBadProof, Origin: cp.Origin, New: cp.Size, Msg: fmt.Sprintf("log %s: seq %d is not in a tree of size %d", cp.Origin, seq, cp.Size)}
	}
	p, err := ParseProof(proof)
	if err != nil {
		return &LogCheckError{Reason: LogBadProof, Origin: cp.Origin, New: cp.Size, Msg: fmt.Sprintf("log %s: inclusion proof of seq %d: %v", cp.Origin, seq, err)}
	}
	if err := tlog.CheckRecord(p, cp.Size, cp.Root, seq-1, leafHash); err != nil {
		return &LogCheckError{Reason: LogBadProof, Origin: cp.Origin, New: cp.Size, Msg: fmt.Sprintf("log %s: the inclusion proof of seq %d does not lead to the root of size %d: %v", cp.Origin, seq, cp.Size, err)}
	}
	return nil
}

// DecodeLeafHash decodes a base64 leaf hash.
func DecodeLeafHash(s string) (tlog.Hash, error) {
	return tlog.ParseHash(s)
}

// DecodeLeafData decodes base64 leaf data.
func DecodeLeafData(s string) ([]byte, error) {
	return base64.StdEncoding.DecodeString(s)
}
