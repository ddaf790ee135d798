package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kura"
)

// traceTextRunes bounds the text on one line of a trace, so each item stays
// one terminal line however long its title or record is.
const traceTextRunes = 72

func setupTrace(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	direction := fs.String("direction", client.DirectionBoth, "`direction` to follow: backward (sources), forward (derived) or both")
	depth := fs.Int("depth", kura.DefaultTraceDepth, "how many levels to follow, `N` from 1 to 10")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 2 {
			return usagef("trace takes a scope and a ref (kind:id or record:<id>)")
		}
		// Zero would be left out of the query and read as the default, so
		// it is refused here rather than silently traced at depth 3.
		if *depth < 1 {
			return usagef("--depth must be from 1 to %d", kura.MaxTraceDepth)
		}
		ref := args[1]
		if kura.ValidID(ref) {
			ref = "record:" + ref // a bare record id, as kura show takes it
		}
		var raw json.RawMessage
		t, err := c.client.Trace(client.WithRawResponse(ctx, &raw), args[0], ref, client.TraceOptions{Direction: *direction, Depth: *depth})
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		return printTrace(c.stdout, t)
	}
}

// printTrace draws the trace as a tree:
//
//	belief:abc [consolidation, 2026-01-15]
//	  "API endpoints should be RESTful"
//	├─ episode:def [promote, 2026-01-10] Implemented REST API for users
//	│  └─ record:0193… [agent.thought, 2026-01-10] Finished implementing…
//	└─ episode:ghi [promote, 2026-01-12] Refactored payments to REST
//	   └─ record:0193… (shared)
//	derived:
//	└─ note:xyz [inference, 2026-01-20] REST API design decision
//
// Sources hang under the memory itself, derivations under "derived:". A
// node met again through another path is "(shared)" and not repeated; "…"
// marks lineage cut by --depth.
func printTrace(w io.Writer, t *client.Trace) error {
	bw := bufio.NewWriter(w)
	if n := t.Memory.Node; n != nil {
		fmt.Fprintf(bw, "%s [%s, %s]\n", n.Ref, n.SourceType, day(n.CreatedAt))
		text := n.Title
		if text == "" {
			text = n.Summary
		}
		if text = clip(text); text != "" {
			fmt.Fprintf(bw, "  \"%s\"\n", text)
		}
	} else if r := t.Memory.Record; r != nil {
		fmt.Fprintf(bw, "%s [%s, %s]\n", r.Ref, r.Type, day(r.CreatedAt))
		if text := clip(r.Label()); text != "" {
			fmt.Fprintf(bw, "  \"%s\"\n", text)
		}
	}
	if b := t.Backward; b != nil {
		if len(b.Sources) == 0 {
			fmt.Fprintln(bw, "(no sources)")
		}
		printLineage(bw, b.Sources, "", false)
	}
	if f := t.Forward; f != nil {
		fmt.Fprintln(bw, "derived:")
		if len(f.Derived) == 0 {
			fmt.Fprintln(bw, "(nothing derived)")
		}
		printLineage(bw, f.Derived, "", true)
	}
	if t.Truncated {
		fmt.Fprintf(bw, "… truncated: there is more lineage than shown (depth %d)\n", t.Depth)
	}
	return bw.Flush()
}

// printLineage draws items one a line under prefix, with box-drawing
// branches, and their sources (or derivations) below each.
func printLineage(w io.Writer, items []client.Lineage, prefix string, forward bool) {
	for i := range items {
		it := &items[i]
		branch, indent := "├─ ", "│  "
		if i == len(items)-1 {
			branch, indent = "└─ ", "   "
		}
		fmt.Fprintf(w, "%s%s%s\n", prefix, branch, lineageLine(it))
		if it.Truncated {
			fmt.Fprintf(w, "%s%s└─ …\n", prefix, indent)
		}
		kids := it.Sources
		if forward {
			kids = it.Derived
		}
		printLineage(w, kids, prefix+indent, forward)
	}
}

// lineageLine is one item: ref, then how and when it came to be (a
// record's type stands in for a source type: every record is a raw
// capture), then its text.
func lineageLine(it *client.Lineage) string {
	if it.Shared {
		return it.Ref + " (shared)"
	}
	how := it.SourceType
	if it.IsRecord() {
		how = it.Type
	}
	s := fmt.Sprintf("%s [%s, %s]", it.Ref, how, day(it.CreatedAt))
	if it.Redacted {
		return s + " [redacted]"
	}
	if it.Withheld {
		return s + " [withheld]"
	}
	if text := clip(it.Label()); text != "" {
		s += " " + text
	}
	return s
}

// day is the date part of an RFC 3339 time.
func day(t string) string {
	if len(t) >= len("2006-01-02") {
		return t[:len("2006-01-02")]
	}
	return t
}

// clip puts text on one line (runs of white space become one space) and
// cuts it to traceTextRunes runes, marking the cut with "…".
func clip(text string) string {
	s := strings.Join(strings.Fields(text), " ")
	rs := []rune(s)
	if len(rs) <= traceTextRunes {
		return s
	}
	return strings.TrimRight(string(rs[:traceTextRunes]), " ") + "…"
}
