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
	// Cosigned are the newest trees kurad's witnesses cosigned, each with
	// the consistency proof from it to Checkpoint: under writes the
	// checkpoint itself seldom carries a cosignature.
	Cosigned []exportedCosigned `json:"cosigned,omitempty"`
	// Head is the session's newest head move in the log (GET
	// /v1/log/inclusion?session_id=) against Checkpoint's size: the head
	// kurad's log holds, which the exported session must have. Absent
	// when the feed holds none (and in older exports).
	Head *exportedInclusion `json:"head,omitempty"`
}

// exportedCosigned is a cosigned checkpoint (GET /v1/log/cosigned) and the
// proof (GET /v1/log/consistency) that the export's checkpoint extends it.
type exportedCosigned struct {
	Checkpoint  string   `json:"checkpoint"`
	Consistency []string `json:"consistency"`
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

// exportLog fetches the checkpoint and the trees witnesses cosigned (each
// proved extended by the checkpoint), then every ledger's proof against
// the checkpoint's size (ledgers were listed before, so each one's leaf is
// in that tree). A ledger without a leaf (written before the log, or
// compacted) is left out; the offline verification names it. nil when
// kurad keeps no log.
func exportLog(ctx context.Context, c *client.Client, s *client.Session, ledgers []client.Ledger) (*exportedLog, error) {
	info, err := c.LogInfo(ctx)
	if err != nil {
		return nil, err
	}
	if info.Origin == "" || (info.Log != nil && info.Log.State == client.LogStateOff) {
		return nil, nil
	}
	cp, witnessed, err := c.WitnessedCheckpoints(ctx, info.VKey)
	if err != nil {
		return nil, fmt.Errorf("export: kurad's log %w", err)
	}
	out := &exportedLog{Checkpoint: string(cp.Text), Inclusions: []exportedInclusion{}}
	for _, w := range witnessed {
		out.Cosigned = append(out.Cosigned, exportedCosigned{Checkpoint: string(w.Text), Consistency: orEmpty(w.Proof)})
	}
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
	ip, err := c.LogInclusionBySession(ctx, s.ID, cp.Size)
	var ke *client.Error
	switch {
	case errors.As(err, &ke) && ke.Code == client.ENotFound:
	case err != nil:
		return nil, fmt.Errorf("export session %s: log inclusion of its head: %w", s.ID, err)
	default:
		out.Head = &exportedInclusion{LedgerID: deref(s.HeadLedgerID), Seq: ip.Seq, Size: ip.Size, LeafHash: ip.LeafHash, Leaf: ip.Leaf, Proof: orEmpty(ip.Proof)}
	}
	return out, nil
}

// verifyExportHead checks the head move of the log section (when the
// export has one, and its checkpoint verified): a session.head leaf of the
// session, proved in the checkpoint, naming the exported session's head.
// An export of a session whose newest turns were cut off consistently in
// kurad's database still carries the log's newest head move, which names
// a head the export does not have.
func verifyExportHead(lg *exportedLog, rep *offlineLog, s *client.Session, problem func(ledger, field, format string, args ...any)) {
	if lg == nil || rep.cp == nil {
		return
	}
	if lg.Head == nil {
		rep.Head = "not in the export"
		return
	}
	in := lg.Head
	if in.Size != rep.cp.Size {
		problem("", "log_head", "the head move's proof is for a tree of size %d, the checkpoint's has size %d", in.Size, rep.cp.Size)
		return
	}
	h, leaf, err := checkSessionHeadLeaf(in.Leaf, in.LeafHash, s.ID, in.Seq)
	if err != nil {
		problem("", "log_head", "%v", err)
		return
	}
	if err := client.CheckInclusion(rep.cp, in.Seq, h, in.Proof); err != nil {
		problem("", "log_head", "%v", err)
		return
	}
	if leaf.Refs["ledger_id"] != deref(s.HeadLedgerID) || leaf.Digest != deref(s.HeadHash) {
		problem(deref(s.HeadLedgerID), "log_head", "the log's newest head move of the session (seq %d) is to ledger %s, hash %s; the exported session's head is %s, hash %s: history was cut short or rewritten",
			in.Seq, orNone(leaf.Refs["ledger_id"]), orNone(leaf.Digest), orNone(deref(s.HeadLedgerID)), orNone(deref(s.HeadHash)))
		return
	}
	rep.Head = fmt.Sprintf("proved at seq %d", in.Seq)
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
	// Witnessed says, per cosigner of --witness-key, the tree it cosigned:
	// the checkpoint's own, or an older one the checkpoint extends.
	Witnessed []offlineWitness `json:"witnessed,omitempty"`
	// Head says what became of the session's head in the log
	// (verifyExportHead).
	Head string `json:"head,omitempty"`
	cp   *client.Checkpoint
}

// offlineWitness is one required witness and the size of the tree it
// cosigned.
type offlineWitness struct {
	Witness string `json:"witness"`
	Size    int64  `json:"size"`
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
	rep.Size, rep.Root, rep.cp = cp.Size, b64(cp.Root), cp
	older := verifyExportCosigned(lg.Cosigned, cp, vkey, problem)
	for _, k := range witnessKeys {
		w, err := cosignedBy(k, cp, older, vkey)
		if err != nil {
			problem("", "log_cosignature", "%v", err)
			continue
		}
		rep.Cosigners = append(rep.Cosigners, w.Witness)
		rep.Witnessed = append(rep.Witnessed, *w)
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

// verifyExportCosigned checks each cosigned checkpoint of an export: signed
// by kurad's key for the checkpoint's origin, and extended by the
// checkpoint (its consistency proof). It returns those that hold.
func verifyExportCosigned(cosigned []exportedCosigned, cp *client.Checkpoint, vkey string, problem func(ledger, field, format string, args ...any)) []*client.Checkpoint {
	var out []*client.Checkpoint
	for i, e := range cosigned {
		old, err := client.VerifyCheckpoint([]byte(e.Checkpoint), vkey)
		if err != nil {
			problem("", "log_signature", "cosigned checkpoint %d: %v", i+1, err)
			continue
		}
		if err := client.CheckConsistency(old, cp, e.Consistency); err != nil {
			problem("", "log_consistency", "cosigned checkpoint %d (size %d): %v", i+1, old.Size, err)
			continue
		}
		out = append(out, old)
	}
	return out
}

// cosignedBy finds the witness of cosignature verifier key wkey on the
// checkpoint, else on the largest older cosigned checkpoint that carries it.
func cosignedBy(wkey string, cp *client.Checkpoint, older []*client.Checkpoint, vkey string) (*offlineWitness, error) {
	names, err := client.VerifyCosignatures(cp.Text, vkey, wkey)
	if err == nil {
		return &offlineWitness{Witness: names[0], Size: cp.Size}, nil
	}
	var best *offlineWitness
	for _, o := range older {
		if names, err := client.VerifyCosignatures(o.Text, vkey, wkey); err == nil && (best == nil || o.Size > best.Size) {
			best = &offlineWitness{Witness: names[0], Size: o.Size}
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%v, nor on any cosigned checkpoint the export's extends", err)
	}
	return best, nil
}

func printOfflineLog(w io.Writer, lg *offlineLog) {
	switch {
	case lg == nil || !lg.Checked:
		fmt.Fprintf(w, "  log: not checked (the export has no log section: made by an older kura, or kurad keeps no log)\n")
	case lg.Size == 0 && lg.Root == "":
		fmt.Fprintf(w, "  log: the checkpoint does not verify (see the problems)\n")
	default:
		fmt.Fprintf(w, "  log: checkpoint %s of size %d verified; %s proved included", lg.Origin, lg.Size, plural(lg.LedgersProved, "ledger"))
		if len(lg.Witnessed) > 0 {
			var by []string
			for _, x := range lg.Witnessed {
				if x.Size == lg.Size {
					by = append(by, x.Witness)
				} else {
					by = append(by, fmt.Sprintf("%s (at size %d, which it extends)", x.Witness, x.Size))
				}
			}
			fmt.Fprintf(w, "; cosigned by %s", strings.Join(by, ", "))
		}
		fmt.Fprintln(w)
		if len(lg.NotInLog) > 0 {
			fmt.Fprintf(w, "  log: no proof in the export for %s (written before the log, or compacted)\n", strings.Join(lg.NotInLog, " "))
		}
		if lg.Head != "" {
			fmt.Fprintf(w, "  log: the session's head move %s\n", lg.Head)
		}
	}
}
