package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kura"
)

func setupRedact(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	reason := fs.String("reason", "", "why the content is dropped (required; kept for good in the audit trail)")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("redact takes one record id")
		}
		// Checked here too, so that a mistyped command costs no request.
		if err := (&kura.RedactInput{Reason: *reason}).Validate(); err != nil {
			return usagef("--reason: %s", err.(*kura.Error).Message)
		}
		var raw json.RawMessage
		res, err := c.client.RedactRecord(client.WithRawResponse(ctx, &raw), trimRef(args[0], "record"), *reason)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		rd := res.Redaction
		if res.AlreadyRedacted {
			fmt.Fprintf(c.stdout, "record %s was already redacted; nothing changed\n", rd.RecordID)
		} else {
			fmt.Fprintf(c.stdout, "redacted record %s: its content is gone for good; its hashes stay, so every ledger holding it still verifies\n", rd.RecordID)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  by\t%s\n", orNone(rd.By))
		fmt.Fprintf(tw, "  reason\t%s\n", orNone(rd.Reason))
		fmt.Fprintf(tw, "  at\t%s\n", orNone(rd.At))
		fmt.Fprintf(tw, "  content_hash\t%s\n", res.Record.ContentHash)
		if res.Purge != "" {
			fmt.Fprintf(tw, "  purge\t%s\n", res.Purge)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if res.Purge == "pending" {
			fmt.Fprintln(c.stdout, "a reader still holds an older snapshot, so the content may remain in the database files a while; kurad keeps purging it (kura info shows redaction_purge)")
		}
		return nil
	}
}
