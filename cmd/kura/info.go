package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/kura-memory/kura/client"
)

func setupInfo(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 0 {
			return usagef("info takes no arguments")
		}
		var raw json.RawMessage
		info, err := c.client.Info(client.WithRawResponse(ctx, &raw))
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "url\t%s\n", c.client.BaseURL())
		fmt.Fprintf(tw, "version\t%s\n", info.Version)
		fmt.Fprintf(tw, "schema version\t%d\n", info.SchemaVersion)
		fmt.Fprintf(tw, "started\t%s\n", orNone(info.StartedAt))
		fmt.Fprintf(tw, "last event seq\t%d\n", info.LastEventSeq)
		fmt.Fprintf(tw, "nats\t%s\n", orNone(info.NATS.Addr))
		if o := info.Outbox; o != nil {
			fmt.Fprintf(tw, "published seq\t%d (lag %d)\n", o.PublishedSeq, o.Lag)
		}
		fmt.Fprintf(tw, "public key\t%s\n", orNone(info.PublicKey))
		if info.RedactionPurge == "pending" {
			fmt.Fprintf(tw, "redaction purge\tpending (a redacted record's content may still be in the database files)\n")
		}
		if len(info.RecordTypes) > 0 {
			fmt.Fprintf(tw, "record types\t%s\n", strings.Join(info.RecordTypes, " "))
		}
		for _, k := range sortedKeys(info.Counts) {
			fmt.Fprintf(tw, "%s\t%d\n", k, info.Counts[k])
		}
		return tw.Flush()
	}
}

// setupHealth is for scripts and container health checks: no output on
// success, the reason on failure.
func setupHealth(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	ready := fs.Bool("ready", false, "check /readyz (database, writer and NATS) instead of /healthz")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 0 {
			return usagef("health takes no arguments")
		}
		if *ready {
			return c.client.Ready(ctx)
		}
		return c.client.Health(ctx)
	}
}
