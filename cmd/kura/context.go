package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/kura-memory/kura/client"
)

// contextFlags are the flags preview and compile share: the fields of a
// compile request.
type contextFlags struct {
	query        *string
	budget       *int
	asOf         *string
	kinds        listFlag
	maxPerBucket optInt
	maxTrace     optInt
	targetFiles  listFlag
	noRedact     *bool
}

func registerContextFlags(fs *flag.FlagSet) *contextFlags {
	f := &contextFlags{}
	f.query = fs.String("query", "", "order each bucket by relevance to these `words` (search score first)")
	f.budget = fs.Int("budget", 0, "keep items while their JSON fits in `BYTES` (use_now first), at most 16777216; 0: the default, 1 MiB")
	f.asOf = fs.String("as-of", "", "read memory as it was at this RFC 3339 `time` (default: now)")
	fs.Var(&f.kinds, "kind", "only nodes of this `kind` (repeatable)")
	fs.Var(&f.maxPerBucket, "max-per-bucket", "keep the first `N` items of each bucket, at most 100000; 0 keeps none (default: 1000)")
	fs.Var(&f.maxTrace, "max-trace", "list the first `N` nodes of the order in the trace, at most 100000; 0 lists none (default: 100000)")
	fs.Var(&f.targetFiles, "target-file", "a `file` the work touches: nodes that name it say so in the trace (repeatable)")
	f.noRedact = fs.Bool("no-redact", false, "leave secret-like strings in titles and summaries (redacted by default)")
	return f
}

func (f *contextFlags) request() client.ContextRequest {
	req := client.ContextRequest{Query: *f.query, Kinds: f.kinds, TargetFiles: f.targetFiles,
		MaxPerBucket: f.maxPerBucket.v, MaxTrace: f.maxTrace.v, BudgetBytes: *f.budget, AsOf: *f.asOf}
	if *f.noRedact {
		no := false
		req.Redact = &no
	}
	return req
}

func setupContextPreview(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	f := registerContextFlags(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("context preview takes one scope")
		}
		var raw json.RawMessage
		b, err := c.client.PreviewContext(client.WithRawResponse(ctx, &raw), args[0], f.request())
		if err != nil {
			return err
		}
		return c.printBundle(b, raw)
	}
}

func setupContextCompile(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	f := registerContextFlags(fs)
	idem := idempotencyFlag(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("context compile takes one scope")
		}
		var raw json.RawMessage
		b, err := c.client.CompileContext(client.WithRawResponse(idem(ctx), &raw), args[0], f.request())
		if err != nil {
			return err
		}
		return c.printBundle(b, raw)
	}
}

// printBundle checks the digest of the answer as it came, then prints it.
// A bundle whose digest does not match its buckets is not printed at all:
// it is the receipt of what an agent is given, and one that does not hold
// together must not reach a script reading stdout as if it did.
func (c *cli) printBundle(b *client.Bundle, raw json.RawMessage) error {
	// The raw answer is hashed rather than b re-encoded, so that item
	// fields a newer kurad adds cannot make a sound bundle look forged.
	if err := client.VerifyBundleJSON(raw); err != nil {
		return fmt.Errorf("the answer does not match its own digest; do not use it: %w", err)
	}
	if c.json {
		return c.printRaw(raw)
	}
	return writeBundle(c.stdout, b)
}

// bucketHeadings are the buckets in the order a reader acts on them, the
// order budgets spend bytes in.
var bucketHeadings = []struct{ name, heading string }{
	{client.BucketUseNow, "USE NOW"},
	{client.BucketInspectBeforeUse, "INSPECT BEFORE USE"},
	{client.BucketRehydrate, "REHYDRATE"},
	{client.BucketDoNotUse, "DO NOT USE"},
}

func bucketItems(b *client.Buckets, name string) []client.BundleItem {
	switch name {
	case client.BucketUseNow:
		return b.UseNow
	case client.BucketInspectBeforeUse:
		return b.InspectBeforeUse
	case client.BucketRehydrate:
		return b.Rehydrate
	default:
		return b.DoNotUse
	}
}

// maxBundleText bounds a title or summary on its line; --json has them whole.
const maxBundleText = 200

// bundleText folds whitespace (a redacted key block spans lines) and cuts s
// to max runes.
func bundleText(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max-1]) + "…"
	}
	return s
}

// maxOmittedRefs bounds the refs listed under a bucket that lost items.
const maxOmittedRefs = 10

// writeBundle prints the four buckets, each item with the reason that put it
// there, then what identifies the bundle.
func writeBundle(w io.Writer, b *client.Bundle) error {
	trace := make(map[string]*client.TraceEntry, len(b.Trace))
	for i := range b.Trace {
		trace[b.Trace[i].Ref] = &b.Trace[i]
	}
	for _, bh := range bucketHeadings {
		items := bucketItems(&b.Buckets, bh.name)
		omitted := b.Omitted[bh.name]
		if omitted > 0 {
			fmt.Fprintf(w, "%s (%d, +%d omitted)\n", bh.heading, len(items), omitted)
		} else {
			fmt.Fprintf(w, "%s (%d)\n", bh.heading, len(items))
		}
		shown := make(map[string]bool, len(items))
		for i := range items {
			it := &items[i]
			shown[it.Ref] = true
			writeBundleItem(w, it, trace[it.Ref])
		}
		if omitted > 0 {
			// The trace lists every node (unless max_trace cut it short),
			// so the omitted ones can be named.
			var refs []string
			for i := range b.Trace {
				if te := &b.Trace[i]; te.Bucket == bh.name && !shown[te.Ref] {
					refs = append(refs, te.Ref)
				}
			}
			if len(refs) > maxOmittedRefs {
				refs = append(refs[:maxOmittedRefs], fmt.Sprintf("and %d more", len(refs)-maxOmittedRefs))
			}
			if len(refs) > 0 {
				fmt.Fprintf(w, "  omitted: %s\n", strings.Join(refs, ", "))
			}
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "digest\t%s (verified locally)\n", b.Digest)
	if b.BundleID != "" {
		fmt.Fprintf(tw, "bundle\t%s\n", b.BundleID)
	} else {
		fmt.Fprintf(tw, "bundle\t- (preview: nothing stored)\n")
	}
	fmt.Fprintf(tw, "scope\t%s\n", b.Scope)
	fmt.Fprintf(tw, "as of\t%s\n", b.AsOf)
	fmt.Fprintf(tw, "bytes\t%d\n", b.Bytes)
	fmt.Fprintf(tw, "redactions\t%d\n", b.Redactions)
	for _, warn := range b.Warnings {
		fmt.Fprintf(tw, "warning\t%s\n", warn)
	}
	return tw.Flush()
}

func writeBundleItem(w io.Writer, it *client.BundleItem, te *client.TraceEntry) {
	title, summary := bundleText(it.Title, maxBundleText), bundleText(it.Summary, maxBundleText)
	text := title
	switch {
	case title != "" && summary != "":
		text = title + " — " + summary
	case title == "":
		text = orNone(summary)
	}
	fmt.Fprintf(w, "  %s  %s (%s, %s/%s)\n", it.Ref, text, strconv.FormatFloat(it.Confidence, 'f', -1, 64), it.Lifecycle, it.Authority)
	if it.PayloadRef != nil {
		fmt.Fprintf(w, "    payload: %s\n", *it.PayloadRef)
	}
	if te == nil {
		// Every node is in the trace; a bundle without its entry was cut
		// by hand, and saying so beats printing nothing.
		fmt.Fprintf(w, "    reason: - (not in the trace)\n")
		return
	}
	line := "    reason: " + te.Reason
	if te.Detail != "" {
		line += " — " + te.Detail
	}
	if te.RelationID != "" {
		line += " [relation " + te.RelationID + "]"
	}
	fmt.Fprintln(w, line)
	if te.Score == nil && len(te.Why) == 0 {
		return
	}
	var why []string
	if te.Score != nil {
		why = append(why, "score "+strconv.FormatFloat(*te.Score, 'f', -1, 64))
	}
	for _, r := range te.Why {
		if r.Detail != "" {
			why = append(why, r.Code+" ("+r.Detail+")")
		} else {
			why = append(why, r.Code)
		}
	}
	fmt.Fprintf(w, "    why: %s\n", strings.Join(why, ", "))
}

// optInt is an integer flag that tells "not given" (nil) from 0.
type optInt struct{ v *int }

func (o *optInt) String() string {
	if o.v == nil {
		return ""
	}
	return strconv.Itoa(*o.v)
}

func (o *optInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("not an integer")
	}
	o.v = &n
	return nil
}
