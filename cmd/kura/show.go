package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kura"
)

// trimRef drops a "kind:" prefix from a reference such as "record:0193...",
// the form the API uses between things, so that refs can be pasted as ids.
func trimRef(s, kind string) string { return strings.TrimPrefix(s, kind+":") }

func setupShow(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("show takes one record id or hash")
		}
		id := trimRef(args[0], "record")
		var raw json.RawMessage
		rctx := client.WithRawResponse(ctx, &raw)
		var (
			r   *client.Record
			err error
		)
		// Ids are UUIDs and hashes 64 hex digits: the two cannot be
		// confused, so one command serves both.
		if kura.ValidHash(id) {
			r, err = c.client.GetRecordByHash(rctx, id)
		} else {
			r, err = c.client.GetRecord(rctx, id)
		}
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		return printRecord(c, r)
	}
}

func printRecord(c *cli, r *client.Record) error {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "record\t%s\n", r.ID)
	fmt.Fprintf(tw, "type\t%s\n", r.Type)
	fmt.Fprintf(tw, "author\t%s\n", r.AuthorID)
	fmt.Fprintf(tw, "created\t%s\n", r.CreatedAt)
	fmt.Fprintf(tw, "hash\t%s\n", r.Hash)
	fmt.Fprintf(tw, "content hash\t%s\n", r.ContentHash)
	fmt.Fprintf(tw, "seal\t%s\n", r.Seal)
	if r.Redacted {
		fmt.Fprintf(tw, "redacted\tyes\n")
	}
	if r.Withheld {
		fmt.Fprintf(tw, "withheld\tyes (memory of a scope this token does not hold)\n")
	}
	for _, k := range sortedKeys(r.Metadata) {
		fmt.Fprintf(tw, "meta %s\t%s\n", k, r.Metadata[k])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Redacted || r.Withheld {
		return nil
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, r.Content, "", "  "); err != nil {
		buf.Reset()
		buf.Write(r.Content)
	}
	_, err := fmt.Fprintf(c.stdout, "content\n%s\n", buf.Bytes())
	return err
}

// oneLine renders content compactly on one line, cut to max runes, for
// listings where a record gets one row.
func oneLine(r *client.Record, max int) string {
	if r.Redacted {
		return "[redacted]"
	}
	if r.Withheld {
		return "[withheld]"
	}
	var buf bytes.Buffer
	s := string(r.Content)
	if json.Compact(&buf, r.Content) == nil {
		s = buf.String()
	}
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	rs := []rune(s)
	return string(rs[:max]) + "…"
}
