package main

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kura-memory/kura/client"
	"golang.org/x/mod/sumdb/note"
)

// exportedLog is the log section of an export: one checkpoint note and, per
// ledger, the inclusion proof of its ledger.written leaf in that
// checkpoint's tree, so that kura verify --pubkey proves with no kurad that
// kurad's log held each exported ledger.
type exportedLog struct {
	Checkpoint string              `json:"checkpoint"`
	Inclusions []exportedInclusion `json:"inclusions"`
}

// exportedInclusion is GET /v1/log/inclusion?ledger_id= as kurad answered.
type exportedInclusion struct {
	LedgerID string   `json:"ledger_id"`
	Seq      int64    `json:"seq"`
	Size     int64    `json:"size"`
	LeafHash string   `json:"leaf_hash"`
	Leaf     string   `json:"leaf"`
	Proof    []string `json:"proof"`
}

// exportLog fetches the checkpoint, then every ledger's proof against its
// size (ledgers were listed before, so each one's leaf is in that tree). A
// ledger without a leaf (written before the log, or compacted) is left
// out; the offline verification names it. nil when kurad keeps no log.
func exportLog(ctx context.Context, c *client.Client, ledgers []client.Ledger) (*exportedLog, error) {
	info, err := c.LogInfo(ctx)
	if err != nil {
		return nil, err
	}
	if info.Origin == "" || (info.Log != nil && info.Log.State == client.LogStateOff) {
		return nil, nil
	}
	text, err := c.LogCheckpoint(ctx)
	if err != nil {
		return nil, err
	}
	cp, err := client.VerifyCheckpoint(text, info.VKey)
	if err != nil {
		return nil, fmt.Errorf("export: kurad's log %w", err)
	}
	out := &exportedLog{Checkpoint: string(text), Inclusions: []exportedInclusion{}}
	for i := range ledgers {
		ip, err := c.LogInclusionByLedger(ctx, ledgers[i].ID, cp.Size)
		var ke *client.Error
		if errors.As(err, &ke) && ke.Code == client.ENotFound {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("export ledger %s: log inclusion: %w", ledgers[i].ID, err)
		}
		out.Inclusions = append(out.Inclusions, exportedInclusion{LedgerID: ledgers[i].ID, Seq: ip.Seq, Size: ip.Size,
			LeafHash: ip.LeafHash, Leaf: ip.Leaf, Proof: orEmpty(ip.Proof)})
	}
	return out, nil
}

// offlineLog is what kura verify --pubkey found about an export's log section.
type offlineLog struct {
	Checked       bool     `json:"checked"`
	Origin        string   `json:"origin,omitempty"`
	Size          int64    `json:"size,omitempty"`
	Root          string   `json:"root,omitempty"`
	LedgersProved int      `json:"ledgers_proved"`
	NotInLog      []string `json:"not_in_log,omitempty"`
	Cosigners     []string `json:"cosigners,omitempty"`
}

// logVKey is the note verifier key of origin for the Ed25519 key pub
// ("ed25519:<hex>"): kurad signs checkpoints with the key that signs its
// ledgers, named after the origin.
func logVKey(origin, pub string) (string, error) {
	b, err := hex.DecodeString(strings.TrimPrefix(pub, "ed25519:"))
	if err != nil || len(b) != ed25519.PublicKeySize {
		return "", errors.New("not an ed25519 public key")
	}
	return note.NewEd25519VerifierKey(origin, ed25519.PublicKey(b))
}

// verifyExportLog checks the log section lg against pub: the checkpoint's
// signature (and every witness of witnessKeys cosigned it), then for each
// exported ledger its leaf (a ledger.written event naming the ledger with
// its hash as digest) and the inclusion proof of that leaf to the
// checkpoint's root. problem records what failed.
func verifyExportLog(lg *exportedLog, ledgers []client.Ledger, pub string, witnessKeys []string, problem func(ledger, field, format string, args ...any)) *offlineLog {
	rep := &offlineLog{}
	if lg == nil {
		if len(witnessKeys) > 0 {
			problem("", "log_cosignature", "the export has no log section, so no witness cosignature to check")
		}
		return rep
	}
	rep.Checked = true
	text := []byte(lg.Checkpoint)
	origin, err := client.CheckpointOrigin(text)
	if err != nil {
		problem("", "log_signature", "%v", err)
		return rep
	}
	rep.Origin = origin
	vkey, err := logVKey(origin, pub)
	if err != nil {
		problem("", "log_signature", "%v", err)
		return rep
	}
	cp, err := client.VerifyCheckpoint(text, vkey)
	if err != nil {
		problem("", "log_signature", "the log checkpoint does not verify against %s: %v", pub, err)
		return rep
	}
	rep.Size, rep.Root = cp.Size, b64(cp.Root)
	if len(witnessKeys) > 0 {
		names, err := client.VerifyCosignatures(text, vkey, witnessKeys...)
		if err != nil {
			problem("", "log_cosignature", "%v", err)
		}
		rep.Cosigners = names
	}
	byLedger := make(map[string]*exportedInclusion, len(lg.Inclusions))
	for i := range lg.Inclusions {
		byLedger[lg.Inclusions[i].LedgerID] = &lg.Inclusions[i]
	}
	for i := range ledgers {
		l := &ledgers[i]
		in := byLedger[l.ID]
		if in == nil {
			rep.NotInLog = append(rep.NotInLog, l.ID)
			continue
		}
		if in.Size != cp.Size {
			problem(l.ID, "log_root", "the inclusion proof is for a tree of size %d, the checkpoint's has size %d", in.Size, cp.Size)
			continue
		}
		lh, err := checkLedgerLeaf(in.Leaf, in.LeafHash, l.ID, l.Hash, in.Seq)
		if err != nil {
			problem(l.ID, "log_leaf", "%v", err)
			continue
		}
		if err := client.CheckInclusion(cp, in.Seq, lh, in.Proof); err != nil {
			problem(l.ID, "log_proof", "%v", err)
			continue
		}
		rep.LedgersProved++
	}
	return rep
}

func printOfflineLog(w io.Writer, lg *offlineLog) {
	switch {
	case lg == nil || !lg.Checked:
		fmt.Fprintf(w, "  log: not checked (the export has no log section: made by an older kura, or kurad keeps no log)\n")
	case lg.Size == 0 && lg.Root == "":
		fmt.Fprintf(w, "  log: the checkpoint does not verify (see the problems)\n")
	default:
		fmt.Fprintf(w, "  log: checkpoint %s of size %d verified; %s proved included", lg.Origin, lg.Size, plural(lg.LedgersProved, "ledger"))
		if len(lg.Cosigners) > 0 {
			fmt.Fprintf(w, "; cosigned by %s", strings.Join(lg.Cosigners, " "))
		}
		fmt.Fprintln(w)
		if len(lg.NotInLog) > 0 {
			fmt.Fprintf(w, "  log: no proof in the export for %s (written before the log, or compacted)\n", strings.Join(lg.NotInLog, " "))
		}
	}
}
