package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/kurahash"
	"golang.org/x/mod/sumdb/tlog"
)

// kura log checkpoint|prove|consistency: kurad's Merkle log, every answer
// checked here with golang.org/x/mod's tlog and note before it is shown.
// The checkpoint's signature is checked against the key kurad names in
// /v1/info and, when kura verify kept one for the origin, the pinned keys.

// logKeys returns the verifier keys a checkpoint of kurad's log is checked
// with, and the log info. It fails when kurad keeps no log.
func (c *cli) logKeys(ctx context.Context) (*client.LogInfo, []string, error) {
	info, err := c.client.LogInfo(ctx)
	if err != nil {
		return nil, nil, err
	}
	if info.Origin == "" || info.VKey == "" {
		return nil, nil, errors.New("kurad keeps no log (its /v1/info names no log_origin)")
	}
	keys := []string{info.VKey}
	if dir := c.stateDir(); dir != "" {
		if kept, err := (&client.CheckpointState{Dir: dir}).Load(info.Origin); err == nil && kept != nil {
			keys = append(keys, kept.VKeys...)
		}
	}
	return info, keys, nil
}

// currentCheckpoint fetches kurad's checkpoint and checks its signature.
func (c *cli) currentCheckpoint(ctx context.Context) (*client.Checkpoint, error) {
	_, keys, err := c.logKeys(ctx)
	if err != nil {
		return nil, err
	}
	text, err := c.client.LogCheckpoint(ctx)
	if err != nil {
		return nil, err
	}
	return client.VerifyCheckpoint(text, keys...)
}

func b64(h tlog.Hash) string { return base64.StdEncoding.EncodeToString(h[:]) }

func setupLogCheckpoint(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 0 {
			return usagef("log checkpoint takes no arguments")
		}
		cp, err := c.currentCheckpoint(ctx)
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(map[string]any{"origin": cp.Origin, "size": cp.Size, "root": b64(cp.Root),
				"signature_ok": true, "other_signers": orEmpty(cp.Unverified), "checkpoint": string(cp.Text)})
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "origin\t%s\n", cp.Origin)
		fmt.Fprintf(tw, "size\t%d\n", cp.Size)
		fmt.Fprintf(tw, "root\t%s\n", b64(cp.Root))
		fmt.Fprintf(tw, "signature\tverified against kurad's log key\n")
		// Witness cosignatures are listed, not checked: kura verify --pubkey
		// --witness-key checks them against keys the caller trusts.
		fmt.Fprintf(tw, "other signers\t%s\n", orNone(strings.Join(cp.Unverified, " ")))
		if err := tw.Flush(); err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.stdout, "\n%s", cp.Text)
		return err
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// checkLedgerLeaf checks that leaf data (base64) is the ledger.written leaf
// of the ledger with this id and hash, that it hashes to leafHash (base64)
// and that it sits at seq; it returns the leaf hash to prove.
func checkLedgerLeaf(leaf, leafHash, ledgerID, ledgerHash string, seq int64) (tlog.Hash, error) {
	data, err := client.DecodeLeafData(leaf)
	if err != nil || len(data) == 0 {
		return tlog.Hash{}, fmt.Errorf("leaf data is not base64 (%v)", err)
	}
	h := kurahash.LogLeafHash(data)
	if leafHash != "" && b64(h) != leafHash {
		return tlog.Hash{}, fmt.Errorf("leaf data hashes to %s, not the leaf hash %s", b64(h), leafHash)
	}
	l, err := kurahash.ParseLogLeaf(data)
	if err != nil {
		return tlog.Hash{}, err
	}
	switch {
	case l.Type != kura.EventLedgerWritten:
		return tlog.Hash{}, fmt.Errorf("leaf is a %q event, not %s", l.Type, kura.EventLedgerWritten)
	case l.Refs["ledger_id"] != ledgerID:
		return tlog.Hash{}, fmt.Errorf("leaf names ledger %q, not %s", l.Refs["ledger_id"], ledgerID)
	case l.Digest != ledgerHash:
		return tlog.Hash{}, fmt.Errorf("leaf digest %s is not the ledger's hash %s", orNone(l.Digest), ledgerHash)
	case l.Seq != seq:
		return tlog.Hash{}, fmt.Errorf("leaf has seq %d, the proof is for seq %d", l.Seq, seq)
	}
	return h, nil
}

// checkSessionHeadLeaf checks that leaf data (base64) is a session.head
// leaf of the session, hashing to leafHash (base64) and sitting at seq; it
// returns the leaf hash to prove and the leaf.
func checkSessionHeadLeaf(leaf, leafHash, sessionID string, seq int64) (tlog.Hash, *kurahash.LogLeaf, error) {
	data, err := client.DecodeLeafData(leaf)
	if err != nil || len(data) == 0 {
		return tlog.Hash{}, nil, fmt.Errorf("leaf data is not base64 (%v)", err)
	}
	h := kurahash.LogLeafHash(data)
	if leafHash != "" && b64(h) != leafHash {
		return tlog.Hash{}, nil, fmt.Errorf("leaf data hashes to %s, not the leaf hash %s", b64(h), leafHash)
	}
	l, err := kurahash.ParseLogLeaf(data)
	if err != nil {
		return tlog.Hash{}, nil, err
	}
	switch {
	case l.Type != kura.EventSessionHead:
		return tlog.Hash{}, nil, fmt.Errorf("leaf is a %q event, not %s", l.Type, kura.EventSessionHead)
	case l.Refs["session_id"] != sessionID:
		return tlog.Hash{}, nil, fmt.Errorf("leaf names session %q, not %s", l.Refs["session_id"], sessionID)
	case l.Seq != seq:
		return tlog.Hash{}, nil, fmt.Errorf("leaf has seq %d, the proof is for seq %d", l.Seq, seq)
	}
	return h, l, nil
}

func setupLogProve(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("log prove takes one event seq or ledger:<id>")
		}
		var (
			seq      int64
			ledgerID string
		)
		if id, ok := strings.CutPrefix(args[0], "ledger:"); ok {
			ledgerID = id
		} else if n, err := strconv.ParseInt(args[0], 10, 64); err == nil && n >= 1 {
			seq = n
		} else {
			return usagef("%q is neither an event seq (1 or more) nor ledger:<id>", args[0])
		}
		cp, err := c.currentCheckpoint(ctx)
		if err != nil {
			return err
		}
		var (
			ip *client.LogInclusionProof
			lh tlog.Hash
		)
		if ledgerID != "" {
			l, err := c.client.GetLedger(ctx, ledgerID)
			if err != nil {
				return err
			}
			if ip, err = c.client.LogInclusionByLedger(ctx, ledgerID, cp.Size); err != nil {
				return err
			}
			if lh, err = checkLedgerLeaf(ip.Leaf, ip.LeafHash, ledgerID, l.Hash, ip.Seq); err != nil {
				return c.proveFailed(cp, ip.Seq, fmt.Errorf("leaf: %v", err))
			}
		} else {
			if ip, err = c.client.LogInclusion(ctx, seq, cp.Size); err != nil {
				return err
			}
			if lh, err = client.DecodeLeafHash(ip.LeafHash); err != nil {
				return c.proveFailed(cp, ip.Seq, fmt.Errorf("leaf hash: %v", err))
			}
		}
		if ip.Size != cp.Size {
			return c.proveFailed(cp, ip.Seq, fmt.Errorf("proof: for size %d, the checkpoint has size %d", ip.Size, cp.Size))
		}
		if err := client.CheckInclusion(cp, ip.Seq, lh, ip.Proof); err != nil {
			return c.proveFailed(cp, ip.Seq, fmt.Errorf("proof: %v", err))
		}
		if c.json {
			out := map[string]any{"ok": true, "origin": cp.Origin, "size": cp.Size, "root": b64(cp.Root),
				"seq": ip.Seq, "leaf_hash": ip.LeafHash, "proof": orEmpty(ip.Proof)}
			if ledgerID != "" {
				out["ledger_id"], out["leaf"] = ledgerID, ip.Leaf
			}
			return c.printJSON(out)
		}
		what := fmt.Sprintf("event %d", ip.Seq)
		if ledgerID != "" {
			what = fmt.Sprintf("ledger %s (event %d, its ledger.written leaf checked against the ledger's hash)", ledgerID, ip.Seq)
		}
		fmt.Fprintf(c.stdout, "OK %s is in log %s: leaf %d of %d, inclusion proof of %s checked against the signed root %s\n",
			what, cp.Origin, ip.Seq-1, cp.Size, plural(len(ip.Proof), "hash"), b64(cp.Root))
		return nil
	}
}

func (c *cli) proveFailed(cp *client.Checkpoint, seq int64, err error) error {
	if c.json {
		c.printJSON(map[string]any{"ok": false, "origin": cp.Origin, "size": cp.Size, "seq": seq, "problem": err.Error()})
	} else {
		fmt.Fprintf(c.stdout, "FAILED event %d in log %s at size %d: %v\n", seq, cp.Origin, cp.Size, err)
	}
	return &exitError{code: exitFail}
}

// maxCheckpointFile bounds a checkpoint file given on the command line.
const maxCheckpointFile = 64 << 10

func setupLogConsistency(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) < 1 || len(args) > 2 {
			return usagef("log consistency takes an old tree size or checkpoint file, and optionally a new one (default: kurad's current checkpoint)")
		}
		info, keys, err := c.logKeys(ctx)
		if err != nil {
			return err
		}
		text, err := c.client.LogCheckpoint(ctx)
		if err != nil {
			return err
		}
		cur, err := client.VerifyCheckpoint(text, keys...)
		if err != nil {
			return err
		}
		// Signed roots known here, by size: now, the one kura verify kept,
		// and any checkpoint file given.
		known := map[int64]*client.Checkpoint{cur.Size: cur}
		if dir := c.stateDir(); dir != "" {
			if kept, err := (&client.CheckpointState{Dir: dir}).Load(info.Origin); err == nil && kept != nil {
				if _, clash := known[kept.Checkpoint.Size]; !clash {
					known[kept.Checkpoint.Size] = kept.Checkpoint
				}
			}
		}
		resolve := func(arg string) (int64, *client.Checkpoint, error) {
			if n, err := strconv.ParseInt(arg, 10, 64); err == nil {
				if n < 0 {
					return 0, nil, usagef("tree size %d is negative", n)
				}
				return n, known[n], nil
			}
			b, err := os.ReadFile(arg)
			if err != nil {
				return 0, nil, usagef("%q is neither a tree size nor a readable checkpoint file: %v", arg, err)
			}
			if len(b) > maxCheckpointFile {
				return 0, nil, usagef("%s: larger than %d bytes; not a checkpoint", arg, maxCheckpointFile)
			}
			cp, err := client.VerifyCheckpoint(b, keys...)
			if err != nil {
				return 0, nil, fmt.Errorf("%s: %w", arg, err)
			}
			if cp.Origin != info.Origin {
				return 0, nil, fmt.Errorf("%s: a checkpoint of log %q, kurad's is %q", arg, cp.Origin, info.Origin)
			}
			return cp.Size, cp, nil
		}
		oldSize, oldCP, err := resolve(args[0])
		if err != nil {
			return err
		}
		newSize, newCP := cur.Size, cur
		if len(args) == 2 {
			if newSize, newCP, err = resolve(args[1]); err != nil {
				return err
			}
		}
		if oldSize > newSize {
			return usagef("old size %d is larger than new size %d", oldSize, newSize)
		}
		p, err := c.client.LogConsistency(ctx, oldSize, newSize)
		if err != nil {
			return err
		}
		res := map[string]any{"origin": info.Origin, "old": oldSize, "new": newSize, "proof": orEmpty(p.Proof), "checked": false}
		var problem error
		if oldCP != nil && newCP != nil {
			res["checked"] = true
			problem = client.CheckConsistency(oldCP, newCP, p.Proof)
			res["ok"] = problem == nil
			if problem != nil {
				res["problem"] = problem.Error()
			}
		}
		if c.json {
			if err := c.printJSON(res); err != nil {
				return err
			}
		} else {
			switch {
			case oldCP == nil || newCP == nil:
				missing := oldSize
				if oldCP != nil {
					missing = newSize
				}
				fmt.Fprintf(c.stdout, "NOT CHECKED log %s %d -> %d: no signed root for size %d here (give a checkpoint file, or run kura verify to keep one); the proof has %s\n",
					info.Origin, oldSize, newSize, missing, plural(len(p.Proof), "hash"))
			case problem != nil:
				fmt.Fprintf(c.stdout, "FAILED log %s %d -> %d: %v\n", info.Origin, oldSize, newSize, problem)
			default:
				fmt.Fprintf(c.stdout, "OK log %s: the tree of size %d is a prefix of the tree of size %d (consistency proof of %s checked against both signed roots)\n",
					info.Origin, oldSize, newSize, plural(len(p.Proof), "hash"))
			}
			for _, h := range p.Proof {
				fmt.Fprintf(c.stdout, "  %s\n", h)
			}
		}
		if problem != nil {
			return &exitError{code: exitFail}
		}
		return nil
	}
}
