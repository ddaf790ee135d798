package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/kura-memory/kura/client"
)

// The memory commands name a scope first and nodes by their ref
// ("belief:b1"), exactly as the API does; kurad judges both.

// nodeFlags are the flags of a node write (memory put and memory revise).
type nodeFlags struct {
	kind, id, title, summary, lifecycle, authority *string
	owner, sourceType, payloadRef, reason          *string
	confidence                                     *float64
	targetFiles, derivedFrom                       listFlag
	meta                                           metaFlag
	stdin                                          *bool
}

func registerNodeFlags(fs *flag.FlagSet, what string) *nodeFlags {
	f := &nodeFlags{meta: metaFlag{}}
	f.kind = fs.String("kind", "", "node `kind`, e.g. belief, fact, decision")
	f.id = fs.String("id", "", "node `id` (default: a server UUIDv7)")
	f.title = fs.String("title", "", "title")
	f.summary = fs.String("summary", "", "summary (required for a new node)")
	f.lifecycle = fs.String("lifecycle", "", "lifecycle, e.g. candidate, active")
	f.authority = fs.String("authority", "", "authority, e.g. unknown, trusted, verified")
	f.confidence = fs.Float64("confidence", 0, "confidence between 0 and 1")
	fs.Var(&f.targetFiles, "target-file", "a file the node is about (repeatable; replaces the list)")
	f.owner = fs.String("owner", "", "owner identity, e.g. agent:bmo (empty clears it)")
	f.sourceType = fs.String("source-type", "", "source type, e.g. direct_experience, inference")
	f.payloadRef = fs.String("payload-ref", "", "where the node's payload lives")
	fs.Var(&f.derivedFrom, "derived-from", "`ref` the node derives from, kind:id or record:<id> (repeatable; replaces the list)")
	fs.Var(f.meta, "meta", "metadata `key=value`, a string value (repeatable)")
	f.reason = fs.String("reason", "", "why: kept in the confidence history")
	f.stdin = fs.Bool("stdin", false, "read "+what+" from stdin; the flags given fill in or override its fields")
	return f
}

// apply sets on in every field whose flag was given (an empty --owner clears
// the owner); a flag left out leaves the field as it is.
func (f *nodeFlags) apply(in *client.NodeInput, set map[string]bool) error {
	str := func(name string, v *string) *string {
		if set[name] {
			s := *v
			return &s
		}
		return nil
	}
	if set["kind"] {
		in.Kind = *f.kind
	}
	if set["id"] {
		in.ID = *f.id
	}
	for _, x := range []struct {
		name string
		src  *string
		dst  **string
	}{
		{"title", f.title, &in.Title}, {"summary", f.summary, &in.Summary}, {"lifecycle", f.lifecycle, &in.Lifecycle},
		{"authority", f.authority, &in.Authority}, {"owner", f.owner, &in.Owner}, {"source-type", f.sourceType, &in.SourceType},
		{"payload-ref", f.payloadRef, &in.PayloadRef},
	} {
		if p := str(x.name, x.src); p != nil {
			*x.dst = p
		}
	}
	if set["confidence"] {
		c := *f.confidence
		in.Confidence = &c
	}
	if len(f.targetFiles) > 0 {
		in.TargetFiles = append([]string{}, f.targetFiles...)
	}
	if len(f.derivedFrom) > 0 {
		in.DerivedFrom = append([]string{}, f.derivedFrom...)
	}
	if set["reason"] {
		in.Reason = *f.reason
	}
	if len(f.meta) == 0 {
		return nil
	}
	m := map[string]json.RawMessage{}
	if len(in.Metadata) > 0 {
		if err := json.Unmarshal(in.Metadata, &m); err != nil || m == nil {
			return usagef("--meta adds to metadata, but stdin's metadata is not a JSON object")
		}
	}
	for k, v := range f.meta {
		b, _ := json.Marshal(v) // a string always marshals
		m[k] = b
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	in.Metadata = b
	return nil
}

// readStdinJSON reads stdin whole, bounded like put's.
func readStdinJSON(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxStdin+1))
	if err != nil {
		return nil, fmt.Errorf("read stdin: %w", err)
	}
	if len(data) > maxStdin {
		return nil, usagef("stdin holds more than %d bytes", maxStdin)
	}
	return bytes.TrimSpace(data), nil
}

// isBatch reports whether a JSON object from stdin is a node batch
// {"nodes":[...]} rather than one node input.
func isBatch(data []byte) bool {
	var probe map[string]json.RawMessage
	if json.Unmarshal(data, &probe) != nil {
		return false
	}
	_, ok := probe["nodes"]
	return ok
}

// stdinArg reports whether args, after the fixed ones, say "read stdin"
// with a lone "-", and refuses anything else.
func stdinArg(args []string, fixed int, what string) (bool, error) {
	switch {
	case len(args) == fixed:
		return false, nil
	case len(args) == fixed+1 && args[fixed] == "-":
		return true, nil
	}
	return false, usagef("%s", what)
}

func setupMemoryPut(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	nf := registerNodeFlags(fs, `a node input object (or a batch {"nodes":[...]})`)
	idem := idempotencyFlag(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		dash, err := stdinArg(args, 1, "memory put takes one scope (the node comes from flags, or stdin with --stdin or -)")
		if err != nil {
			return err
		}
		scope := args[0]
		set := visited(fs)
		ctx = idem(ctx)
		if !*nf.stdin && !dash {
			if *nf.kind == "" {
				return usagef("--kind is required (or --stdin)")
			}
			var in client.NodeInput
			if err := nf.apply(&in, set); err != nil {
				return err
			}
			return c.putNode(ctx, scope, in)
		}
		data, err := readStdinJSON(c.stdin)
		if err != nil {
			return err
		}
		if isBatch(data) {
			if set["id"] {
				return usagef("--id names one node; it does not go with a batch")
			}
			var b struct {
				Nodes []client.NodeInput `json:"nodes"`
			}
			if err := strictDecode(data, &b); err != nil {
				return usagef(`stdin is not a node batch {"nodes":[...]}: %v`, err)
			}
			for i := range b.Nodes {
				if err := nf.apply(&b.Nodes[i], set); err != nil {
					return err
				}
			}
			return c.putNodes(ctx, scope, b.Nodes)
		}
		var in client.NodeInput
		if err := strictDecode(data, &in); err != nil {
			return usagef(`stdin is not a node input object {"kind","summary",...}: %v`, err)
		}
		if err := nf.apply(&in, set); err != nil {
			return err
		}
		return c.putNode(ctx, scope, in)
	}
}

func (c *cli) putNode(ctx context.Context, scope string, in client.NodeInput) error {
	var raw json.RawMessage
	n, created, err := c.client.PutNode(client.WithRawResponse(ctx, &raw), scope, in)
	if err != nil {
		return err
	}
	if c.json {
		return c.printRaw(raw)
	}
	if created {
		fmt.Fprintf(c.stdout, "created %s in scope %s (version 1)\n", n.Ref, n.Scope)
	} else {
		fmt.Fprintf(c.stdout, "updated %s in scope %s to version %d\n", n.Ref, n.Scope, n.Version)
	}
	return nil
}

func (c *cli) putNodes(ctx context.Context, scope string, ins []client.NodeInput) error {
	var raw json.RawMessage
	nodes, err := c.client.PutNodes(client.WithRawResponse(ctx, &raw), scope, ins)
	if err != nil {
		return err
	}
	if c.json {
		return c.printRaw(raw)
	}
	for _, n := range nodes {
		fmt.Fprintf(c.stdout, "wrote %s version %d\n", n.Ref, n.Version)
	}
	return nil
}

func setupMemoryGet(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	asOf := fs.String("as-of", "", "show the version current at this RFC 3339 `time`")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 2 {
			return usagef("memory get takes a scope and a node ref (kind:id)")
		}
		var raw json.RawMessage
		n, err := c.client.GetNode(client.WithRawResponse(ctx, &raw), args[0], args[1], *asOf)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		return printNode(c.stdout, n)
	}
}

// conf writes a confidence as it was sent: 0.5, not 0.500000.
func conf(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func joinOrNone(s []string) string { return orNone(strings.Join(s, ", ")) }

func printNode(w io.Writer, n *client.Node) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "ref\t%s\n", n.Ref)
	fmt.Fprintf(tw, "scope\t%s\n", n.Scope)
	fmt.Fprintf(tw, "version\t%d\n", n.Version)
	fmt.Fprintf(tw, "title\t%s\n", orNone(n.Title))
	fmt.Fprintf(tw, "summary\t%s\n", orNone(n.Summary))
	fmt.Fprintf(tw, "lifecycle\t%s\n", n.Lifecycle)
	fmt.Fprintf(tw, "authority\t%s\n", n.Authority)
	fmt.Fprintf(tw, "confidence\t%s\n", conf(n.Confidence))
	fmt.Fprintf(tw, "source type\t%s\n", n.SourceType)
	fmt.Fprintf(tw, "owner\t%s\n", orNone(deref(n.Owner)))
	fmt.Fprintf(tw, "target files\t%s\n", joinOrNone(n.TargetFiles))
	fmt.Fprintf(tw, "derived from\t%s\n", joinOrNone(n.DerivedFrom))
	fmt.Fprintf(tw, "payload ref\t%s\n", orNone(deref(n.PayloadRef)))
	if m := bytes.TrimSpace(n.Metadata); len(m) > 0 && string(m) != "{}" {
		fmt.Fprintf(tw, "metadata\t%s\n", m)
	}
	fmt.Fprintf(tw, "created\t%s\n", n.CreatedAt)
	fmt.Fprintf(tw, "updated\t%s\n", n.UpdatedAt)
	if n.WrittenBy != "" {
		fmt.Fprintf(tw, "written by\t%s\n", n.WrittenBy)
	}
	return tw.Flush()
}

// label names a node in one line: its title, else the start of its summary.
func label(n *client.Node) string {
	if n == nil {
		return "-"
	}
	s := n.Title
	if s == "" {
		s = strings.Join(strings.Fields(n.Summary), " ")
	}
	const maxLabel = 60
	if utf8.RuneCountInString(s) > maxLabel {
		s = string([]rune(s)[:maxLabel-1]) + "…"
	}
	return orNone(s)
}

func setupMemoryList(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	kind := fs.String("kind", "", "only nodes of this kind")
	lifecycle := fs.String("lifecycle", "", "only nodes in this lifecycle")
	authority := fs.String("authority", "", "only nodes with this authority")
	owner := fs.String("owner", "", "only nodes of this owner")
	minConf := fs.Float64("min-confidence", 0, "only nodes at least this confident")
	since := fs.String("updated-since", "", "only nodes updated at or after this RFC 3339 `time`")
	limit := fs.Int("limit", 0, "page size `N` (default: the server's, 100)")
	cursor := fs.String("cursor", "", "continue after the page that printed this cursor")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("memory list takes one scope (filter with flags)")
		}
		if *limit < 0 {
			return usagef("--limit must not be negative")
		}
		opts := client.NodeListOptions{Kind: *kind, Lifecycle: *lifecycle, Authority: *authority, Owner: *owner,
			UpdatedSince: *since, Limit: *limit, Cursor: *cursor}
		if visited(fs)["min-confidence"] {
			opts.MinConfidence = minConf
		}
		var raw json.RawMessage
		p, err := c.client.ListNodes(client.WithRawResponse(ctx, &raw), args[0], opts)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		for i := range p.Nodes {
			n := &p.Nodes[i]
			fmt.Fprintf(tw, "%s\tv%d\t%s\t%s\t%s\t%s\n", n.Ref, n.Version, n.Lifecycle, n.Authority, conf(n.Confidence), label(n))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if p.NextCursor != "" {
			fmt.Fprintf(c.stdout, "more: --cursor %s\n", p.NextCursor)
		}
		return nil
	}
}

func setupMemoryHistory(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 2 {
			return usagef("memory history takes a scope and a node ref (kind:id)")
		}
		var raw json.RawMessage
		h, err := c.client.NodeHistory(client.WithRawResponse(ctx, &raw), args[0], args[1])
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		fmt.Fprintf(c.stdout, "%s: %s\n", h.Ref, plural(len(h.Versions), "version"))
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		for i := range h.Versions {
			v := &h.Versions[i]
			fmt.Fprintf(tw, "  v%d\t%s\t%s\t%s\t%s\t%s\n", v.Version, v.UpdatedAt, v.Lifecycle, v.Authority, conf(v.Confidence), label(v))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(c.stdout, "confidence:")
		for _, ch := range h.ConfidenceHistory {
			old := "-"
			if ch.Old != nil {
				old = conf(*ch.Old)
			}
			fmt.Fprintf(tw, "  v%d\t%s\t%s -> %s\t%s\n", ch.Version, ch.At, old, conf(ch.New), orNone(ch.Reason))
		}
		return tw.Flush()
	}
}

func setupMemoryTransition(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	reason := fs.String("reason", "", "why the node moves (required)")
	authority := fs.String("authority", "", "also set the authority, e.g. trusted")
	idem := idempotencyFlag(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 3 {
			return usagef("memory transition takes a scope, a node ref and a lifecycle")
		}
		if strings.TrimSpace(*reason) == "" {
			return usagef("--reason is required")
		}
		t := client.Transition{Lifecycle: args[2], Reason: *reason}
		if visited(fs)["authority"] {
			t.Authority = authority
		}
		var raw json.RawMessage
		n, err := c.client.TransitionNode(client.WithRawResponse(idem(ctx), &raw), args[0], args[1], t)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		fmt.Fprintf(c.stdout, "%s is now %s, authority %s (version %d)\n", n.Ref, n.Lifecycle, n.Authority, n.Version)
		return nil
	}
}

func setupMemoryRevise(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	nf := registerNodeFlags(fs, "the new node's input object")
	idem := idempotencyFlag(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		dash, err := stdinArg(args, 2, "memory revise takes a scope and the ref of the node to revise (the new fields come from flags, or stdin with --stdin or -)")
		if err != nil {
			return err
		}
		var in client.NodeInput
		if *nf.stdin || dash {
			data, err := readStdinJSON(c.stdin)
			if err != nil {
				return err
			}
			if err := strictDecode(data, &in); err != nil {
				return usagef(`stdin is not a node input object {"summary",...}: %v`, err)
			}
		}
		if err := nf.apply(&in, visited(fs)); err != nil {
			return err
		}
		var raw json.RawMessage
		rev, err := c.client.ReviseNode(client.WithRawResponse(idem(ctx), &raw), args[0], args[1], in)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		if rev.Node != nil && rev.Superseded != nil {
			fmt.Fprintf(c.stdout, "revised %s into %s (version %d)\n", rev.Superseded.Ref, rev.Node.Ref, rev.Node.Version)
			fmt.Fprintf(c.stdout, "%s is now %s (version %d)\n", rev.Superseded.Ref, rev.Superseded.Lifecycle, rev.Superseded.Version)
		}
		if r := rev.Relation; r != nil {
			fmt.Fprintf(c.stdout, "relation %s: %s %s %s\n", r.ID, r.From, r.Kind, r.To)
		}
		return nil
	}
}

func setupMemoryRelate(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	id := fs.String("id", "", "relation `id` (default: a server UUIDv7)")
	confidence := fs.Float64("confidence", 0, "confidence between 0 and 1 (default: kurad's, 0.7)")
	var reasons listFlag
	fs.Var(&reasons, "reason", "why the relation holds (repeatable)")
	idem := idempotencyFlag(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 4 {
			return usagef("memory relate takes a scope, a from ref, a relation kind and a to ref")
		}
		in := client.RelationInput{ID: *id, From: args[1], Kind: args[2], To: args[3], Reasons: reasons}
		if visited(fs)["confidence"] {
			in.Confidence = confidence
		}
		var raw json.RawMessage
		r, err := c.client.CreateRelation(client.WithRawResponse(idem(ctx), &raw), args[0], in)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		fmt.Fprintf(c.stdout, "created relation %s: %s %s %s (confidence %s)\n", r.ID, r.From, r.Kind, r.To, conf(r.Confidence))
		return nil
	}
}

func setupMemoryRelations(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	ref := fs.String("ref", "", "only relations with this node at either end")
	kind := fs.String("kind", "", "only relations of this kind, e.g. supersedes")
	limit := fs.Int("limit", 0, "page size `N` (default: the server's, 100)")
	cursor := fs.String("cursor", "", "continue after the page that printed this cursor")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("memory relations takes one scope (filter with --ref and --kind)")
		}
		if *limit < 0 {
			return usagef("--limit must not be negative")
		}
		var raw json.RawMessage
		p, err := c.client.ListRelations(client.WithRawResponse(ctx, &raw), args[0],
			client.RelationListOptions{Ref: *ref, Kind: *kind, Limit: *limit, Cursor: *cursor})
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		for _, r := range p.Relations {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.From, r.Kind, r.To, conf(r.Confidence), joinOrNone(r.Reasons))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if p.NextCursor != "" {
			fmt.Fprintf(c.stdout, "more: --cursor %s\n", p.NextCursor)
		}
		return nil
	}
}

func setupMemoryFeedback(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	author := fs.String("author", "", "author `id` of the feedback, e.g. agent:bmo (required)")
	note := fs.String("note", "", "what happened")
	idem := idempotencyFlag(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 3 {
			return usagef("memory feedback takes a scope, a node ref and an outcome (positive, negative or neutral)")
		}
		if *author == "" {
			return usagef("--author is required")
		}
		var raw json.RawMessage
		fb, err := c.client.CreateFeedback(client.WithRawResponse(idem(ctx), &raw), args[0],
			client.FeedbackInput{Ref: args[1], Outcome: args[2], Note: *note, AuthorID: *author})
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		fmt.Fprintf(c.stdout, "recorded %s feedback %s on %s\n", fb.Outcome, fb.ID, fb.Ref)
		return nil
	}
}

func setupMemorySearch(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	kind := fs.String("kind", "", "only nodes of this kind")
	lifecycle := fs.String("lifecycle", "", "only nodes in this lifecycle")
	authority := fs.String("authority", "", "only nodes with this authority")
	targetFile := fs.String("target-file", "", "only nodes about this `file`")
	owner := fs.String("owner", "", "only nodes of this owner")
	minConf := fs.Float64("min-confidence", 0, "only nodes at least this confident")
	limit := fs.Int("limit", 0, "at most `N` results (default: the server's, 100)")
	mode := fs.String("mode", "", "lexical (by words), semantic (by meaning) or hybrid (both; kurad's default with an embedder)")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) < 1 {
			return usagef("memory search takes a scope, then the query words")
		}
		if *limit < 0 {
			return usagef("--limit must not be negative")
		}
		q := client.SearchQuery{Q: strings.Join(args[1:], " "), Kind: *kind, Lifecycle: *lifecycle, Authority: *authority,
			TargetFile: *targetFile, Owner: *owner, Limit: *limit, Mode: *mode}
		if visited(fs)["min-confidence"] {
			q.MinConfidence = minConf
		}
		var raw json.RawMessage
		ans, err := c.client.SearchMemory(client.WithRawResponse(ctx, &raw), args[0], q)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		for _, w := range ans.Warnings {
			fmt.Fprintln(c.stderr, "warning:", w)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		for _, r := range ans.Results {
			reasons := make([]string, len(r.Reasons))
			for i, why := range r.Reasons {
				reasons[i] = why.Code + ": " + why.Detail
			}
			fmt.Fprintf(tw, "%7.4f\t%s\t%s\t%s\n", r.Score, r.Ref, label(r.Node), strings.Join(reasons, "; "))
		}
		return tw.Flush()
	}
}
