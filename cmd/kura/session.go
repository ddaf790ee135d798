package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kura"
)

// A session is named on the command line by its id, as "session:<id>" (the
// API's reference form) or as "<project>/<name>", which is looked up.

// splitSessionName returns project and name of "<project>/<name>".
func splitSessionName(arg string) (project, name string, ok bool) {
	project, name, ok = strings.Cut(arg, "/")
	if !ok || !kura.ValidSlug(project) || !kura.ValidSlug(name) {
		return "", "", false
	}
	return project, name, true
}

// sessionID turns a session argument into an id, looking "<project>/<name>"
// up; an id is taken as it is, without a request.
func (c *cli) sessionID(ctx context.Context, arg string) (string, error) {
	arg = trimRef(arg, "session")
	if project, name, ok := splitSessionName(arg); ok {
		s, err := c.client.FindSession(ctx, project, name)
		if err != nil {
			return "", err
		}
		return s.ID, nil
	}
	return arg, nil
}

// session fetches the session an argument names; raw receives the answer of
// the GET (not of the lookup by name).
func (c *cli) session(ctx context.Context, arg string, raw *json.RawMessage) (*client.Session, error) {
	id, err := c.sessionID(ctx, arg)
	if err != nil {
		return nil, err
	}
	s, err := c.client.GetSession(client.WithRawResponse(ctx, raw), id)
	if err != nil {
		return nil, c.notASession(ctx, id, err)
	}
	return s, nil
}

// notASession turns the not_found of a session id that is a ledger's into a
// usage error saying so and what to run instead: ledgers come first in the
// README, so "kura log <ledger-id>" is a newcomer's natural mistake, and a
// bare not_found leaves them thinking the ledger is gone. Any other error,
// and an id that is no ledger's either, is returned as it is.
func (c *cli) notASession(ctx context.Context, id string, err error) error {
	if !client.IsCode(err, client.ENotFound) || !kura.ValidID(id) {
		return err
	}
	if _, lerr := c.client.GetLedger(ctx, id); lerr != nil {
		return err
	}
	return usagef("%s is a ledger, not a session: run 'kura ledger %s' to see it (--records for its records), or 'kura session list' to find a session", id, id)
}

// idempotencyFlag registers --idempotency-key on a write command and returns
// a function that puts the key, if any, into a context.
func idempotencyFlag(fs *flag.FlagSet) func(context.Context) context.Context {
	key := fs.String("idempotency-key", "", "send this Idempotency-Key (at most 128 characters): running the command again with the same key returns the first answer and writes nothing")
	return func(ctx context.Context) context.Context {
		return client.WithIdempotencyKey(ctx, *key)
	}
}

func setupLog(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	limit := fs.Int("limit", 0, "show at most `N` ledgers (default: the server's, 100)")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("log takes one session")
		}
		if *limit < 0 {
			return usagef("--limit must not be negative")
		}
		id, err := c.sessionID(ctx, args[0])
		if err != nil {
			return err
		}
		var raw json.RawMessage
		ls, err := c.client.SessionLog(client.WithRawResponse(ctx, &raw), id, *limit)
		if err != nil {
			return c.notASession(ctx, id, err)
		}
		if c.json {
			return c.printRaw(raw)
		}
		return printLog(c.stdout, ls)
	}
}

// printLog prints one line a ledger, like git log --oneline: id, label,
// record count, time.
func printLog(w io.Writer, ls []client.Ledger) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range ls {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.ID, orNone(l.Label), plural(l.RecordCount, "record"), l.CreatedAt)
	}
	return tw.Flush()
}

// plural writes "1 record", "2 records".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func setupSessionNew(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	scope := fs.String("scope", "", "memory scope extracted memory goes to (default: the project)")
	from := fs.String("from-ledger", "", "fork: start the new session's head at this ledger `ID`")
	idem := idempotencyFlag(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 2 {
			return usagef("session new takes a project and a name")
		}
		in := client.SessionInput{Project: args[0], Name: args[1], Scope: *scope, FromLedgerID: trimRef(*from, "ledger")}
		var raw json.RawMessage
		s, err := c.client.CreateSession(client.WithRawResponse(idem(ctx), &raw), in)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		fmt.Fprintf(c.stdout, "created session %s (%s/%s)\n", s.ID, s.Project, s.Name)
		if s.HeadLedgerID != nil {
			fmt.Fprintf(c.stdout, "head %s\n", *s.HeadLedgerID)
		}
		return nil
	}
}

func setupSessionShow(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("session show takes one session")
		}
		var raw json.RawMessage
		s, err := c.session(ctx, args[0], &raw)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "session\t%s\n", s.ID)
		fmt.Fprintf(tw, "project\t%s\n", s.Project)
		fmt.Fprintf(tw, "name\t%s\n", s.Name)
		fmt.Fprintf(tw, "scope\t%s\n", s.Scope)
		fmt.Fprintf(tw, "head\t%s\n", orNone(deref(s.HeadLedgerID)))
		fmt.Fprintf(tw, "head hash\t%s\n", orNone(deref(s.HeadHash)))
		if s.OpenTurnID != nil {
			fmt.Fprintf(tw, "open turn\t%s\n", *s.OpenTurnID)
		}
		fmt.Fprintf(tw, "created\t%s\n", s.CreatedAt)
		if s.UpdatedAt != "" {
			fmt.Fprintf(tw, "updated\t%s\n", s.UpdatedAt)
		}
		return tw.Flush()
	}
}

func setupSessionList(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	project := fs.String("project", "", "only sessions of this project")
	limit := fs.Int("limit", 0, "page size `N` (default: the server's, 100)")
	cursor := fs.String("cursor", "", "continue after the page that printed this cursor")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 0 {
			return usagef("session list takes no arguments (filter with --project)")
		}
		if *limit < 0 {
			return usagef("--limit must not be negative")
		}
		var raw json.RawMessage
		p, err := c.client.ListSessions(client.WithRawResponse(ctx, &raw), client.SessionListOptions{Project: *project, Limit: *limit, Cursor: *cursor})
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		for _, s := range p.Sessions {
			fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\n", s.ID, s.Project, s.Name, orNone(deref(s.HeadLedgerID)), s.CreatedAt)
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

func setupSessionReflog(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("session reflog takes one session")
		}
		id, err := c.sessionID(ctx, args[0])
		if err != nil {
			return err
		}
		var raw json.RawMessage
		entries, err := c.client.Reflog(client.WithRawResponse(ctx, &raw), id)
		if err != nil {
			return c.notASession(ctx, id, err)
		}
		if c.json {
			return c.printRaw(raw)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		for _, e := range entries {
			fmt.Fprintf(tw, "%d\t%s -> %s\t%s\t%s\n", e.Seq, orNone(deref(e.From)), e.To, orNone(e.Reason), e.At)
		}
		return tw.Flush()
	}
}

// verifyTarget decides whether verify's argument is a session or a ledger:
// an explicit "session:" or "ledger:" prefix decides, "<project>/<name>" is
// a session, anything else is asked of kurad, session first.
func (c *cli) verifyTarget(ctx context.Context, arg string) (kind, id string, err error) {
	switch {
	case strings.HasPrefix(arg, "session:"):
		id, err = c.sessionID(ctx, arg)
		return "session", id, err
	case strings.HasPrefix(arg, "ledger:"):
		return "ledger", trimRef(arg, "ledger"), nil
	}
	if _, _, ok := splitSessionName(arg); ok {
		id, err = c.sessionID(ctx, arg)
		return "session", id, err
	}
	_, err = c.client.GetSession(ctx, arg)
	if err == nil {
		return "session", arg, nil
	}
	if !client.IsCode(err, client.ENotFound) {
		return "", "", err
	}
	_, err = c.client.GetLedger(ctx, arg)
	if err == nil {
		return "ledger", arg, nil
	}
	if client.IsCode(err, client.ENotFound) {
		return "", "", (&client.Error{Code: client.ENotFound, Message: fmt.Sprintf("no session or ledger %s", arg)}).WithDetail("id", arg)
	}
	return "", "", err
}

// verifySession verifies a session by kurad or, with local, here.
func (c *cli) verifySession(ctx context.Context, id, expectHeadHash string, local bool) error {
	var (
		raw json.RawMessage
		v   *client.SessionVerification
		err error
	)
	if local {
		v, err = c.verifySessionLocally(ctx, id, expectHeadHash)
	} else {
		v, err = c.client.VerifySession(client.WithRawResponse(ctx, &raw), id, expectHeadHash)
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
		err = printSessionVerification(c.stdout, v, local)
	}
	if err != nil {
		return err
	}
	if !v.OK {
		return &exitError{code: exitFail}
	}
	return nil
}

// verifySessionLocally does here what GET /v1/sessions/{id}/verify does in
// kurad: every ledger of the first-parent chain from the head and every
// record in them is recomputed (client.VerifyLedgerLocally, signatures
// against /v1/info's key), and so is every head move's signature in the
// reflog.
func (c *cli) verifySessionLocally(ctx context.Context, id, expectHeadHash string) (*client.SessionVerification, error) {
	info, err := c.client.Info(ctx)
	if err != nil {
		return nil, err
	}
	s, err := c.client.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	v := &client.SessionVerification{SessionID: s.ID, HeadLedgerID: s.HeadLedgerID, HeadHash: s.HeadHash, Problems: []client.SessionIssue{}}
	problem := func(ledgerID, field, format string, args ...any) {
		v.Problems = append(v.Problems, client.SessionIssue{LedgerID: ledgerID, Field: field, Detail: fmt.Sprintf(format, args...)})
	}
	found := false
	seen := map[string]bool{}
	for lid := deref(s.HeadLedgerID); lid != ""; {
		if seen[lid] {
			problem(lid, "parent_ids", "the first-parent chain loops back to ledger %s", lid)
			break
		}
		seen[lid] = true
		l, err := c.client.GetLedger(ctx, lid)
		if err != nil {
			return nil, err
		}
		lv, err := c.client.VerifyLedgerLocally(ctx, lid, info.PublicKey)
		if err != nil {
			return nil, err
		}
		v.LedgersChecked++
		v.RecordsChecked += lv.RecordsChecked
		v.Ledgers = append(v.Ledgers, lv)
		for _, m := range lv.Mismatches {
			where := ""
			if m.RecordID != "" {
				where = "record " + m.RecordID + ": "
			}
			problem(lid, m.Field, "%sstored %s, computed %s", where, orNone(m.Stored), orNone(m.Computed))
		}
		if lid == deref(s.HeadLedgerID) && s.HeadHash != nil && *s.HeadHash != l.Hash {
			problem(lid, "head_hash", "the session says head hash %s, the head ledger's hash is %s", *s.HeadHash, l.Hash)
		}
		if expectHeadHash != "" && l.Hash == expectHeadHash {
			found = true
		}
		lid = ""
		if len(l.ParentIDs) > 0 {
			lid = l.ParentIDs[0]
		}
	}

	entries, err := c.client.Reflog(ctx, id)
	if err != nil {
		return nil, err
	}
	for i := range entries {
		e := &entries[i]
		if info.PublicKey == "" {
			break
		}
		if err := client.VerifyHeadSignature(s.ID, e, info.PublicKey); err != nil {
			problem(e.To, "reflog", "head move %d: %v", e.Seq, err)
		}
	}
	if n := len(entries); n > 0 && s.HeadLedgerID != nil {
		if last := entries[n-1]; last.To != *s.HeadLedgerID || (s.HeadHash != nil && last.HeadHash != *s.HeadHash) {
			problem(last.To, "reflog", "the last head move (%d) is to ledger %s, hash %s; the session's head is %s, hash %s", last.Seq, last.To, last.HeadHash, *s.HeadLedgerID, orNone(deref(s.HeadHash)))
		}
	} else if n == 0 && s.HeadLedgerID != nil {
		problem(*s.HeadLedgerID, "reflog", "the session has a head but no head move in its reflog")
	}

	if err := c.checkHeadInLog(ctx, s, v, problem); err != nil {
		return nil, err
	}
	if expectHeadHash != "" {
		v.ExpectHeadHash = expectHeadHash
		v.ExpectHeadHashFound = &found
		if !found {
			problem("", "expect_head_hash", "the first-parent chain from the head does not hold ledger hash %s (cut off or rewritten)", expectHeadHash)
		}
	}
	v.OK = len(v.Problems) == 0
	return v, nil
}

// checkHeadInLog proves here, in kurad's signed checkpoint, the log's
// newest head move of the session (GET /v1/log/inclusion?session_id=) and
// checks that it names the session's head: a history cut short
// consistently (ledgers, reflog and head rewound together) verifies
// otherwise. Which leaf is the newest is kurad's word; the leaf and its
// place in the log are checked.
func (c *cli) checkHeadInLog(ctx context.Context, s *client.Session, v *client.SessionVerification, problem func(ledgerID, field, format string, args ...any)) error {
	info, err := c.client.LogInfo(ctx)
	if err != nil {
		return err
	}
	if info.Origin == "" || (info.Log != nil && info.Log.State == client.LogStateOff) {
		v.LogHead = &client.LogHeadCheck{Reason: "kurad keeps no log"}
		return nil
	}
	cp, err := c.currentCheckpoint(ctx)
	if err != nil {
		// The log check after the verification says why, and fails.
		v.LogHead = &client.LogHeadCheck{Reason: "kurad's checkpoint did not verify: " + err.Error()}
		return nil
	}
	p, err := c.client.LogInclusionBySession(ctx, s.ID, cp.Size)
	var ke *client.Error
	if errors.As(err, &ke) && ke.Code == client.ENotFound {
		v.LogHead = &client.LogHeadCheck{Reason: "the feed holds no head move of this session (none, or compacted away)"}
		if s.HeadLedgerID != nil {
			v.LogHead.Reason += "; kurad's own verify says whether events are missing"
		}
		return nil
	}
	if err != nil {
		return err
	}
	h, leaf, err := checkSessionHeadLeaf(p.Leaf, p.LeafHash, s.ID, p.Seq)
	if err != nil {
		problem("", "log_head", "the log's head move %d of the session: %v", p.Seq, err)
		return nil
	}
	if err := client.CheckInclusion(cp, p.Seq, h, p.Proof); err != nil {
		problem("", "log_head", "the log's head move %d of the session is not proved in the checkpoint: %v", p.Seq, err)
		return nil
	}
	v.LogHead = &client.LogHeadCheck{Checked: true, Seq: p.Seq, LedgerID: leaf.Refs["ledger_id"], HeadHash: leaf.Digest}
	if leaf.Refs["ledger_id"] == deref(s.HeadLedgerID) && leaf.Digest == deref(s.HeadHash) {
		return nil
	}
	// The head may have moved since it was read: the leaf then names the
	// head the session has now.
	if now, err := c.client.GetSession(ctx, s.ID); err == nil && leaf.Refs["ledger_id"] == deref(now.HeadLedgerID) && leaf.Digest == deref(now.HeadHash) {
		return nil
	}
	problem(deref(s.HeadLedgerID), "log_head", "the log's newest head move of this session (seq %d, proved in the checkpoint of size %d) is to ledger %s, hash %s; the session's head is %s, hash %s: history was cut short or rewritten",
		p.Seq, cp.Size, orNone(leaf.Refs["ledger_id"]), orNone(leaf.Digest), orNone(deref(s.HeadLedgerID)), orNone(deref(s.HeadHash)))
	return nil
}

func printSessionVerification(w io.Writer, v *client.SessionVerification, local bool) error {
	where := "by kurad"
	if local {
		where = "locally"
	}
	status := "OK"
	if !v.OK {
		status = "FAILED"
	}
	fmt.Fprintf(w, "%s session %s: %s, %s checked %s\n", status, v.SessionID, plural(v.LedgersChecked, "ledger"), plural(v.RecordsChecked, "record"), where)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  head\t%s\n", orNone(deref(v.HeadLedgerID)))
	fmt.Fprintf(tw, "  head hash\t%s\n", orNone(deref(v.HeadHash)))
	if lh := v.LogHead; lh != nil {
		switch {
		case !lh.Checked:
			fmt.Fprintf(tw, "  log head\tnot checked: %s\n", lh.Reason)
		case lh.Seq == 0:
			fmt.Fprintf(tw, "  log head\tno head move in the log\n")
		default:
			fmt.Fprintf(tw, "  log head\t%s at seq %d\n", lh.LedgerID, lh.Seq)
		}
	}
	if v.ExpectHeadHash != "" {
		state := "not checked"
		if v.ExpectHeadHashFound != nil {
			state = "NOT FOUND on the chain"
			if *v.ExpectHeadHashFound {
				state = "found on the chain"
			}
		}
		fmt.Fprintf(tw, "  expected hash\t%s %s\n", v.ExpectHeadHash, state)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range v.Problems {
		where := ""
		if p.LedgerID != "" {
			where = "ledger " + p.LedgerID + " "
		}
		fmt.Fprintf(w, "  problem: %s%s: %s\n", where, p.Field, p.Detail)
	}
	if local && v.OK {
		fmt.Fprintf(w, "compare the head hash with one you trust: a consistent forgery also recomputes\n")
	}
	return nil
}
