package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kura"
)

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// visited returns the names of the flags set on the command line.
func visited(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// epochFlag registers --epoch and returns a function giving the epoch to
// send: nil when the flag was left out (a turn nobody claimed).
func epochFlag(fs *flag.FlagSet) func() *int64 {
	epoch := fs.Int64("epoch", 0, "the epoch of your claim (kura turn claim printed it); required once the turn is claimed")
	return func() *int64 {
		if !visited(fs)["epoch"] {
			return nil
		}
		e := *epoch
		return &e
	}
}

// defaultAuthor writes the instruction of a turn when --author is left out:
// the identity kurad gives anonymous local callers.
const defaultAuthor = "user:local"

func setupTurnOpen(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	instruction := fs.String("instruction", "", "the task: JSON, or text taken as a JSON string (a task.instruction record)")
	author := fs.String("author", defaultAuthor, "author `id` of the instruction")
	var ctxRecords listFlag
	fs.Var(&ctxRecords, "context-record", "existing record `ID` to put in the context (repeatable, in order)")
	dispatch := fs.String("dispatch", "", "publish a dispatch command to this `target` (e.g. worker)")
	deadline := fs.Int("deadline", 0, "kurad closes the turn as timeout after `SECONDS` (default: kurad's)")
	memQuery := fs.String("memory", "", "compile the session's scope into the context with this `query`")
	memBudget := fs.Int("memory-budget", 0, "byte budget of the compiled memory (with --memory)")
	idem := idempotencyFlag(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("turn open takes one session")
		}
		set := visited(fs)
		if !set["instruction"] {
			return usagef("--instruction is required")
		}
		if *deadline < 0 {
			return usagef("--deadline must not be negative")
		}
		if set["memory-budget"] && !set["memory"] {
			return usagef("--memory-budget needs --memory")
		}
		in := client.TurnOpenInput{
			Instruction:     &client.RecordInput{Type: kura.RecordTaskInstruction, AuthorID: *author, Content: asContent([]byte(*instruction))},
			Dispatch:        *dispatch,
			DeadlineSeconds: *deadline,
		}
		for _, id := range ctxRecords {
			in.Context = append(in.Context, client.RecordRef{RecordID: trimRef(id, "record")})
		}
		if set["memory"] {
			in.Memory = &client.MemoryRequest{Query: *memQuery, BudgetBytes: *memBudget}
		}
		sid, err := c.sessionID(ctx, args[0])
		if err != nil {
			return err
		}
		var raw json.RawMessage
		t, err := c.client.OpenTurn(client.WithRawResponse(idem(ctx), &raw), sid, in)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		fmt.Fprintf(c.stdout, "opened turn %s on session %s\n", t.ID, t.SessionID)
		fmt.Fprintf(c.stdout, "context ledger %s\n", t.ContextLedgerID)
		return nil
	}
}

func setupTurnAppend(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	epoch := epochFlag(fs)
	typ := fs.String("type", "", "record type, e.g. agent.thought")
	author := fs.String("author", "", "author id, e.g. agent:bmo")
	content := fs.String("content", "", "content: JSON, or text taken as a JSON string")
	meta := metaFlag{}
	fs.Var(meta, "meta", "metadata `key=value` (repeatable)")
	var recordIDs listFlag
	fs.Var(&recordIDs, "record-id", "append an existing record by `ID` (repeatable, in order)")
	stdin := fs.Bool("stdin", false, "read from stdin: the content when --type and --author are given, else a record object ({\"type\",\"content\",\"author_id\"} or {\"record_id\"}) or an array of them")
	idem := idempotencyFlag(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		set := visited(fs)
		switch {
		case len(args) == 2 && args[1] == "-":
			*stdin = true
		case len(args) != 1:
			return usagef("turn append takes one turn (records come from flags, or stdin with --stdin or -)")
		}
		turnID := trimRef(args[0], "turn")
		refs, err := appendRefs(c.stdin, set, *stdin, *typ, *author, *content, meta, recordIDs)
		if err != nil {
			return err
		}
		var raw json.RawMessage
		res, err := c.client.AppendTurn(client.WithRawResponse(idem(ctx), &raw), turnID, client.TurnAppend{Epoch: epoch(), Records: refs})
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		for _, r := range res.Records {
			fmt.Fprintf(c.stdout, "appended record %s (%s)\n", r.ID, r.Type)
		}
		fmt.Fprintf(c.stdout, "turn %s has %s in its output\n", orNone(res.TurnID), plural(len(res.OutputRecordIDs), "record"))
		return nil
	}
}

// appendRefs builds the records of a turn append from the command line: one
// new record from --type/--author/--content, existing ones from --record-id,
// or stdin (the content when --type and --author are given, else a record
// object or an array of them).
func appendRefs(stdin io.Reader, set map[string]bool, fromStdin bool, typ, author, content string, meta metaFlag, recordIDs []string) ([]client.RecordRef, error) {
	if len(recordIDs) > 0 {
		if fromStdin || set["content"] || set["type"] || set["author"] || len(meta) > 0 {
			return nil, usagef("--record-id appends existing records; it does not go with --type, --author, --content, --meta or stdin")
		}
		refs := make([]client.RecordRef, len(recordIDs))
		for i, id := range recordIDs {
			refs[i] = client.RecordRef{RecordID: trimRef(id, "record")}
		}
		return refs, nil
	}
	if !fromStdin {
		switch {
		case typ == "":
			return nil, usagef("--type is required (or --record-id, or --stdin)")
		case author == "":
			return nil, usagef("--author is required")
		case !set["content"]:
			return nil, usagef("--content is required (or --stdin)")
		}
		return []client.RecordRef{{RecordInput: client.RecordInput{Type: typ, AuthorID: author, Content: asContent([]byte(content)), Metadata: meta}}}, nil
	}
	if set["content"] {
		return nil, usagef("--content and stdin are exclusive")
	}
	data, err := io.ReadAll(io.LimitReader(stdin, maxStdin+1))
	if err != nil {
		return nil, fmt.Errorf("read stdin: %w", err)
	}
	if len(data) > maxStdin {
		return nil, usagef("stdin holds more than %d bytes", maxStdin)
	}
	if typ != "" && author != "" {
		data = bytes.TrimSuffix(data, []byte("\n"))
		data = bytes.TrimSuffix(data, []byte("\r"))
		return []client.RecordRef{{RecordInput: client.RecordInput{Type: typ, AuthorID: author, Content: asContent(data), Metadata: meta}}}, nil
	}
	// Objects from stdin; the flags given fill in or override their fields
	// (not for records named by id, which cannot change).
	apply := func(r *client.RecordRef) {
		if r.RecordID != "" {
			return
		}
		if typ != "" {
			r.Type = typ
		}
		if author != "" {
			r.AuthorID = author
		}
		if len(meta) > 0 && r.Metadata == nil {
			r.Metadata = map[string]string{}
		}
		for k, v := range meta {
			r.Metadata[k] = v
		}
	}
	trimmed := bytes.TrimSpace(data)
	var refs []client.RecordRef
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := strictDecode(trimmed, &refs); err != nil {
			return nil, usagef("stdin is not a JSON array of records: %v", err)
		}
		if len(refs) == 0 {
			return nil, usagef("stdin holds an empty array: nothing to append")
		}
	} else {
		var r client.RecordRef
		if err := strictDecode(trimmed, &r); err != nil {
			return nil, usagef("stdin is not a record object {\"type\",\"content\",\"author_id\",\"metadata\"} or {\"record_id\"}: %v (with --type and --author, stdin is the content)", err)
		}
		refs = []client.RecordRef{r}
	}
	for i := range refs {
		apply(&refs[i])
	}
	return refs, nil
}

func setupTurnClose(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	epoch := epochFlag(fs)
	status := fs.String("status", "complete", "how the turn ended: complete or failed")
	idem := idempotencyFlag(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("turn close takes one turn")
		}
		if *status != "complete" && *status != "failed" {
			return usagef("--status must be complete or failed, not %q", *status)
		}
		var raw json.RawMessage
		t, err := c.client.CloseTurn(client.WithRawResponse(idem(ctx), &raw), trimRef(args[0], "turn"), client.TurnClose{Epoch: epoch(), Status: *status})
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		fmt.Fprintf(c.stdout, "closed turn %s: %s\n", t.ID, t.State)
		return printTurnDetails(c.stdout, t)
	}
}

func setupTurnShow(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("turn show takes one turn")
		}
		var raw json.RawMessage
		t, err := c.client.GetTurn(client.WithRawResponse(ctx, &raw), trimRef(args[0], "turn"))
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		fmt.Fprintf(c.stdout, "turn %s: %s\n", t.ID, t.State)
		return printTurnDetails(c.stdout, t)
	}
}

func printTurnDetails(w io.Writer, t *client.Turn) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  session\t%s\n", t.SessionID)
	if t.Number > 0 {
		fmt.Fprintf(tw, "  number\t%d\n", t.Number)
	}
	fmt.Fprintf(tw, "  context ledger\t%s\n", orNone(t.ContextLedgerID))
	if t.ContextBundleID != nil {
		fmt.Fprintf(tw, "  context bundle\t%s\n", *t.ContextBundleID)
	}
	fmt.Fprintf(tw, "  output ledger\t%s\n", orNone(deref(t.OutputLedgerID)))
	if t.HeadHash != nil {
		fmt.Fprintf(tw, "  head hash\t%s\n", *t.HeadHash)
	}
	fmt.Fprintf(tw, "  output records\t%d\n", len(t.OutputRecordIDs))
	if t.Worker != nil {
		fmt.Fprintf(tw, "  worker\t%s (epoch %d, lease until %s)\n", *t.Worker, t.Epoch, orNone(deref(t.LeaseExpiresAt)))
	}
	if t.Dispatch != nil {
		fmt.Fprintf(tw, "  dispatch\t%s\n", *t.Dispatch)
	}
	fmt.Fprintf(tw, "  opened\t%s\n", t.OpenedAt)
	if t.DeadlineAt != "" {
		fmt.Fprintf(tw, "  deadline\t%s\n", t.DeadlineAt)
	}
	if t.ClosedAt != nil {
		fmt.Fprintf(tw, "  closed\t%s\n", *t.ClosedAt)
	}
	if len(t.Extracted) > 0 {
		fmt.Fprintf(tw, "  extracted\t%s\n", strings.Join(t.Extracted, " "))
	}
	if sk := t.ExtractionSkipped; sk != nil {
		fmt.Fprintf(tw, "  not extracted\t%s (%s)\n", strings.Join(sk.Records, " "), sk.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, id := range t.OutputRecordIDs {
		fmt.Fprintf(w, "    %d  %s\n", i, id)
	}
	return nil
}

func setupTurnClaim(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	worker := fs.String("worker", "", "worker `id` claiming the turn, e.g. agent:hashi (default: the caller's own identity; only an admin may name another)")
	lease := fs.Int("lease", 0, "lease length in `SECONDS` (default: kurad's)")
	idem := idempotencyFlag(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("turn claim takes one turn")
		}
		if *lease < 0 {
			return usagef("--lease must not be negative")
		}
		var raw json.RawMessage
		l, err := c.client.ClaimTurn(client.WithRawResponse(idem(ctx), &raw), trimRef(args[0], "turn"), client.TurnClaim{Worker: *worker, LeaseSeconds: *lease})
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		fmt.Fprintf(c.stdout, "claimed turn %s for %s: epoch %d, lease until %s\n", orNone(l.TurnID), orNone(l.Worker), l.Epoch, l.LeaseExpiresAt)
		return nil
	}
}

func setupTurnRenew(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	epoch := epochFlag(fs)
	lease := fs.Int("lease", 0, "new lease length in `SECONDS` (default: kurad's)")
	idem := idempotencyFlag(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("turn renew takes one turn")
		}
		e := epoch()
		if e == nil {
			return usagef("--epoch is required")
		}
		if *lease < 0 {
			return usagef("--lease must not be negative")
		}
		var raw json.RawMessage
		l, err := c.client.RenewTurn(client.WithRawResponse(idem(ctx), &raw), trimRef(args[0], "turn"), client.TurnRenew{Epoch: *e, LeaseSeconds: *lease})
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		fmt.Fprintf(c.stdout, "renewed turn %s: epoch %d, lease until %s\n", orNone(l.TurnID), l.Epoch, l.LeaseExpiresAt)
		return nil
	}
}

func setupTurnList(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	session := fs.String("session", "", "only turns of this session")
	state := fs.String("state", "", "only turns in this state: open, complete, failed or timeout")
	limit := fs.Int("limit", 0, "page size `N` (default: the server's, 100)")
	cursor := fs.String("cursor", "", "continue after the page that printed this cursor")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 0 {
			return usagef("turn list takes no arguments (filter with --session and --state)")
		}
		if *limit < 0 {
			return usagef("--limit must not be negative")
		}
		opts := client.TurnListOptions{State: *state, Limit: *limit, Cursor: *cursor}
		if *session != "" {
			sid, err := c.sessionID(ctx, *session)
			if err != nil {
				return err
			}
			opts.SessionID = sid
		}
		var raw json.RawMessage
		p, err := c.client.ListTurns(client.WithRawResponse(ctx, &raw), opts)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		// Listed turns come without their output record ids (kurad loads
		// them for GET /v1/turns/{id} only): the output ledger is shown.
		for _, t := range p.Turns {
			fmt.Fprintf(tw, "%s\t%s\t%s\toutput %s\t%s\n", t.ID, t.State, t.SessionID, orNone(deref(t.OutputLedgerID)), t.OpenedAt)
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
