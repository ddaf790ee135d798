package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kura"
)

func setupLedger(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	hydrate := fs.Bool("records", false, "show the records themselves, not only their ids")
	return func(ctx context.Context, c *cli, args []string) error {
		// "kura ledger nwe <record-id>" is a mistyped subcommand, not a
		// bad ledger id.
		if len(args) > 0 && !kura.ValidID(trimRef(args[0], "ledger")) {
			if s := suggest(args[0], subcommandNames("ledger")); s != "" {
				return usagef("%q is not a ledger id: did you mean \"ledger %s\"?", args[0], s)
			}
		}
		if len(args) != 1 {
			return usagef("ledger takes one ledger id")
		}
		id := trimRef(args[0], "ledger")
		var raw json.RawMessage
		l, err := c.client.GetLedger(client.WithRawResponse(ctx, &raw), id)
		if err != nil {
			return err
		}
		var recs []client.Record
		if *hydrate {
			if recs, err = c.client.AllLedgerRecords(ctx, id); err != nil {
				return err
			}
		}
		if c.json {
			if !*hydrate {
				return c.printRaw(raw)
			}
			// Two answers (the ledger, then its pages of records) make one
			// document; the ledger part is kept as the server wrote it.
			if recs == nil {
				recs = []client.Record{}
			}
			return c.printJSON(struct {
				Ledger  json.RawMessage `json:"ledger"`
				Records []client.Record `json:"records"`
			}{raw, recs})
		}

		return printLedger(c, l, recs, *hydrate)
	}
}

// printLedger prints a ledger's fields, then its record ids (with hydrate,
// the records recs).
func printLedger(c *cli, l *client.Ledger, recs []client.Record, hydrate bool) error {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "ledger\t%s\n", l.ID)
	fmt.Fprintf(tw, "label\t%s\n", l.Label)
	fmt.Fprintf(tw, "created\t%s\n", l.CreatedAt)
	fmt.Fprintf(tw, "hash\t%s\n", l.Hash)
	fmt.Fprintf(tw, "root hash\t%s\n", l.RootHash)
	fmt.Fprintf(tw, "parents\t%s\n", orNone(strings.Join(l.ParentIDs, " ")))
	fmt.Fprintf(tw, "signature\t%s\n", orNone(l.Signature))
	fmt.Fprintf(tw, "records\t%d\n", l.RecordCount)
	if err := tw.Flush(); err != nil {
		return err
	}
	tw = tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	if hydrate {
		for i := range recs {
			r := &recs[i]
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", i, r.ID, r.Type, r.AuthorID, oneLine(r, 80))
		}
	} else {
		for i, rid := range l.RecordIDs {
			fmt.Fprintf(tw, "  %d\t%s\n", i, rid)
		}
	}
	return tw.Flush()
}

func setupLedgerNew(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	label := fs.String("label", "", "the ledger's `label` (at most 256 bytes)")
	var parents listFlag
	fs.Var(&parents, "parent", "a parent ledger `ID` (repeatable: a merge has several)")
	idem := idempotencyFlag(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		// No ids is an empty ledger, as the API has it: a label to start
		// a chain from, or a merge of --parent ledgers adding nothing.
		in := client.LedgerInput{Label: *label, RecordIDs: make([]string, len(args)), ParentIDs: make([]string, len(parents))}
		for i, a := range args {
			in.RecordIDs[i] = trimRef(a, "record")
		}
		for i, p := range parents {
			in.ParentIDs[i] = trimRef(p, "ledger")
		}
		var raw json.RawMessage
		l, err := c.client.CreateLedger(client.WithRawResponse(idem(ctx), &raw), in)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		fmt.Fprintf(c.stdout, "created ledger %s\n", l.ID)
		return printLedger(c, l, nil, false)
	}
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func setupVerify(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	local := fs.Bool("local", false, "recompute every hash here instead of trusting kurad's answer (checks signatures against /v1/info's key)")
	expect := fs.String("expect-head-hash", "", "sessions: also check that the first-parent chain still holds this ledger `hash` (one you saw earlier)")
	pubkey := fs.String("pubkey", "", "verify an export `FILE` (kura export, jsonl or git; - for stdin) offline, without kurad, against this public key (ed25519:<hex>, or a file holding it or kura info --json)")
	noState := fs.Bool("no-state", false, "do not keep or compare the log checkpoint in KURA_STATE_DIR (the checkpoint's signature is still checked)")
	acceptOrigin := fs.String("accept-origin", "", "accept kurad's log under this new `ORIGIN`, signed by the key that last verified another origin here (only once kurad's operator confirmed the log was moved, docs/log.md)")
	var witnessKeys listFlag
	fs.Var(&witnessKeys, "witness-key", "with --pubkey: also require a cosignature of the export's checkpoint by this witness `VKEY` (repeatable)")
	return func(ctx context.Context, c *cli, args []string) error {
		if *pubkey != "" {
			if len(args) != 1 || *local {
				return usagef("verify --pubkey takes one export file (or - for stdin) and no --local")
			}
			if *expect != "" && !kura.ValidHash(*expect) {
				return usagef("--expect-head-hash %q is not a hex SHA-256 ledger hash", *expect)
			}
			return c.verifyOffline(args[0], *pubkey, *expect, witnessKeys)
		}
		if len(witnessKeys) > 0 {
			return usagef("--witness-key applies to an export (--pubkey)")
		}
		if *acceptOrigin != "" && *noState {
			return usagef("--accept-origin changes the kept state; it does not go with --no-state")
		}
		if len(args) != 1 {
			return usagef("verify takes one ledger or session (session:<id>, ledger:<id> or <project>/<name> to say which)")
		}
		if *expect != "" && !kura.ValidHash(*expect) {
			return usagef("--expect-head-hash %q is not a hex SHA-256 ledger hash", *expect)
		}
		kind, id, err := c.verifyTarget(ctx, args[0])
		if err != nil {
			return err
		}
		if kind == "session" {
			return thenCheckLog(c.verifySession(ctx, id, *expect, *local), func() error { return c.checkLog(ctx, logCheckOptions{noState: *noState, acceptOrigin: *acceptOrigin}) })
		}
		if *expect != "" {
			return usagef("--expect-head-hash applies to sessions; %s is a ledger", id)
		}
		var (
			raw json.RawMessage
			v   *client.Verification
		)
		if *local {
			var info *client.Info
			if info, err = c.client.Info(ctx); err != nil {
				return err
			}
			v, err = c.client.VerifyLedgerLocally(ctx, id, info.PublicKey)
		} else {
			v, err = c.client.VerifyLedger(client.WithRawResponse(ctx, &raw), id)
		}
		if err != nil {
			return err
		}
		switch {
		case c.json && raw != nil:
			err = c.printRaw(raw)
		case c.json:
			err = c.printJSON(v)
		default:
			err = printVerification(c, v, *local)
		}
		if err != nil {
			return err
		}
		var verr error
		if !v.OK {
			verr = &exitError{code: exitFail}
		}
		return thenCheckLog(verr, func() error { return c.checkLog(ctx, logCheckOptions{noState: *noState, acceptOrigin: *acceptOrigin}) })
	}
}

// thenCheckLog runs the log check after a verification that ran (passed or
// failed: a failed one still gets its log line) and returns the first
// failure; a verification that could not run is returned as it is.
func thenCheckLog(verr error, check func() error) error {
	var ee *exitError
	if verr != nil && !errors.As(verr, &ee) {
		return verr
	}
	if err := check(); err != nil && verr == nil {
		return err
	}
	return verr
}

func printVerification(c *cli, v *client.Verification, local bool) error {
	where := "by kurad"
	if local {
		where = "locally"
	}
	if v.OK {
		fmt.Fprintf(c.stdout, "OK ledger %s: %d records checked %s\n", v.LedgerID, v.RecordsChecked, where)
	} else {
		fmt.Fprintf(c.stdout, "FAILED ledger %s: %d mismatches in %d records checked %s\n", v.LedgerID, len(v.Mismatches), v.RecordsChecked, where)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  hash\t%s\n", v.Hash)
	fmt.Fprintf(tw, "  root hash\t%s\n", v.RootHash)
	if v.SignatureOK {
		fmt.Fprintf(tw, "  signature\tverified\n")
	} else {
		fmt.Fprintf(tw, "  signature\tnot verified\n")
	}
	if len(v.Redacted) > 0 {
		fmt.Fprintf(tw, "  redacted\t%s\n", strings.Join(v.Redacted, " "))
	}
	if len(v.Withheld) > 0 {
		fmt.Fprintf(tw, "  withheld\t%s\n", strings.Join(v.Withheld, " "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range v.Mismatches {
		var where strings.Builder
		if m.RecordID != "" {
			where.WriteString("record " + m.RecordID + " ")
		}
		if m.Position != nil {
			fmt.Fprintf(&where, "at %d ", *m.Position)
		}
		fmt.Fprintf(c.stdout, "  mismatch: %s%s: stored %s, computed %s\n", where.String(), m.Field, orNone(m.Stored), orNone(m.Computed))
	}
	if local && v.OK {
		// Recomputing proves consistency, not authenticity: the hash must
		// match one obtained independently.
		fmt.Fprintf(c.stdout, "compare the hash with one you trust: a consistent forgery also recomputes\n")
	}
	return nil
}

func setupDiff(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 2 {
			return usagef("diff takes two ledger ids")
		}
		a, b := trimRef(args[0], "ledger"), trimRef(args[1], "ledger")
		var raw json.RawMessage
		d, err := c.client.Diff(client.WithRawResponse(ctx, &raw), a, b)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		fmt.Fprintf(c.stdout, "%s -> %s: %d added, %d removed, %d in common\n", a, b, len(d.Added), len(d.Removed), d.Common)
		for _, id := range d.Added {
			fmt.Fprintf(c.stdout, "+ %s\n", id)
		}
		for _, id := range d.Removed {
			fmt.Fprintf(c.stdout, "- %s\n", id)
		}
		return nil
	}
}
