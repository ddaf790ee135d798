package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/kura-memory/kura/client"
)

// Reconnect backoff of kura events --follow: quick enough to ride over a
// kurad restart, slow enough not to hammer one that stays down.
const (
	followMinBackoff = 250 * time.Millisecond
	followMaxBackoff = 10 * time.Second
)

func setupEvents(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	after := fs.Int64("after", 0, "only events with a seq greater than `N` (with --follow the default is the last committed one: 0 replays the log from the start)")
	limit := fs.Int("limit", 0, "at most `N` events (default: the server's, 100); with --follow, how many kurad reads at a time")
	var types listFlag
	fs.Var(&types, "type", "only events of type `T` (repeatable, or comma-separated)")
	project := fs.String("project", "", "only events of project `P`")
	followFlag := fs.Bool("follow", false, "keep printing events as they are committed, until interrupted; reconnects by itself")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 0 {
			return usagef("events takes no arguments")
		}
		if *after < 0 || *limit < 0 {
			return usagef("--after and --limit must not be negative")
		}
		q := client.EventQuery{After: *after, Limit: *limit, Project: *project}
		for _, t := range types {
			for v := range strings.SplitSeq(t, ",") {
				if v = strings.TrimSpace(v); v != "" {
					q.Types = append(q.Types, v)
				}
			}
		}
		if *followFlag {
			if !visited(fs)["after"] {
				// Following means what happens from now on, as tail -f
				// does; replaying a long history first buries it. A feed
				// page after the largest seq there can be is empty at once
				// and carries last_seq, and kurad checks the filters on
				// the way, so a bad --type fails before the notice.
				probe := q
				probe.After, probe.Limit = math.MaxInt64, 1
				p, err := c.client.Events(ctx, probe)
				if err != nil {
					return err
				}
				q.After = p.LastSeq
				// On stderr, so that stdout stays one line per event; it
				// also tells a reader from which seq nothing is missed.
				fmt.Fprintf(c.stderr, "following events after seq %d (--after 0 replays them from the start)\n", q.After)
			}
			return c.followEvents(ctx, q)
		}
		var raw json.RawMessage
		p, err := c.client.Events(client.WithRawResponse(ctx, &raw), q)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		if p.CompactedThrough > 0 {
			fmt.Fprintf(c.stderr, "events through seq %d were compacted away: %d to %d are missing\n", p.CompactedThrough, q.After+1, p.CompactedThrough)
		}
		for _, e := range p.Events {
			if _, err := io.WriteString(c.stdout, formatEvent(e)); err != nil {
				return err
			}
		}
		if p.NextAfter < p.LastSeq {
			// On stderr, so that stdout stays one line per event.
			fmt.Fprintf(c.stderr, "more events: kura events --after %d\n", p.NextAfter)
		}
		return nil
	}
}

// formatEvent is the human line of an event: seq, type, project, then its
// ids as key=value in key order. Fixed widths keep a followed stream
// aligned without buffering it.
func formatEvent(e client.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-6d %-16s %-12s", e.Seq, e.Type, e.Project)
	for _, k := range sortedKeys(e.Refs) {
		fmt.Fprintf(&b, " %s=%s", k, e.Refs[k])
	}
	b.WriteByte('\n')
	return b.String()
}

// printError marks a failure to write our own output, which no reconnect
// can cure (a closed pipe, a full disk).
type printError struct{ err error }

func (e *printError) Error() string { return e.err.Error() }
func (e *printError) Unwrap() error { return e.err }

// followEvents streams events until ctx ends. When the stream drops it
// reconnects with backoff from the last seq it printed, so a kurad restart
// loses and repeats nothing. It gives up only on answers a retry cannot
// change (a bad filter, a refused token) and on the very first connection,
// where a failure most likely means a wrong URL rather than a restart.
func (c *cli) followEvents(ctx context.Context, q client.EventQuery) error {
	backoff := followMinBackoff
	connected := false
	for {
		err := c.client.StreamEvents(ctx, q, func(e client.Event) error {
			var line string
			if c.json {
				line = string(e.Raw) + "\n"
			} else {
				line = formatEvent(e)
			}
			if _, err := io.WriteString(c.stdout, line); err != nil {
				return &printError{err}
			}
			q.After = e.Seq
			backoff = followMinBackoff
			return nil
		})
		if ctx.Err() != nil {
			return nil // interrupted: the normal way to stop following
		}
		var pe *printError
		if errors.As(err, &pe) {
			return pe.err
		}
		if errors.Is(err, client.ErrStreamEnded) {
			connected = true
		}
		if !connected || client.IsCode(err, client.EInvalid) || client.IsCode(err, client.EUnauth) || client.IsCode(err, client.EDenied) {
			return err
		}
		fmt.Fprintf(c.stderr, "kura: %v; reconnecting in %s from seq %d\n", err, backoff, q.After)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(2*backoff, followMaxBackoff)
	}
}
