package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kura"
)

// The kb commands name a knowledge base first and an entry by its whole
// identifier, one argument (quote it: identifiers are sentences); the scope
// is a flag, the default scope when left out.

func scopeFlag(fs *flag.FlagSet) *string {
	return fs.String("scope", "", "the `scope` inside the knowledge base (default: the default scope)")
}

// readValue returns the value of --value or --value-file (- is stdin);
// exactly one of them must be given.
func (c *cli) readValue(set map[string]bool, value, file string) (string, error) {
	switch {
	case set["value"] && set["value-file"]:
		return "", usagef("give --value or --value-file, not both")
	case set["value"]:
		return value, nil
	case !set["value-file"]:
		return "", usagef("--value or --value-file is required")
	}
	var r io.Reader = c.stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	// The limit is in characters, at most 4 bytes each: more bytes than
	// that are more characters than kurad takes, so the read stops there.
	b, err := io.ReadAll(io.LimitReader(r, 4*kura.MaxKBValue+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", file, err)
	}
	if len(b) > 4*kura.MaxKBValue {
		return "", usagef("%s holds more than %d characters, the most a value may", file, kura.MaxKBValue)
	}
	if !utf8.Valid(b) {
		return "", usagef("%s is not UTF-8 text", file)
	}
	return string(b), nil
}

func setupKBPut(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	var keys listFlag
	fs.Var(&keys, "key", "a `key` (tag) of the entry (repeatable; replaces the keys)")
	value := fs.String("value", "", "the entry's value")
	file := fs.String("value-file", "", "read the value from `file` (- for stdin)")
	scope := scopeFlag(fs)
	idem := idempotencyFlag(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 2 {
			return usagef("kb put takes a knowledge base and one identifier (quote it)")
		}
		v, err := c.readValue(visited(fs), *value, *file)
		if err != nil {
			return err
		}
		in := client.KBEntryInput{Scope: *scope, Identifier: args[1], Keys: append([]string{}, keys...), Value: v}
		var raw json.RawMessage
		e, created, err := c.client.PutKBEntry(client.WithRawResponse(idem(ctx), &raw), args[0], in)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		verb := "replaced"
		if created {
			verb = "created"
		}
		fmt.Fprintf(c.stdout, "%s %q in %s (version %d)\n", verb, e.Identifier, kbWhere(args[0], e.Scope), e.Version)
		return nil
	}
}

// kbWhere names a knowledge base and scope for humans.
func kbWhere(name, scope string) string {
	if scope == "" {
		return name
	}
	return name + "/" + scope
}

func setupKBUpdate(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	var keys listFlag
	fs.Var(&keys, "key", "a new `key` (repeatable; replaces the keys)")
	noKeys := fs.Bool("no-keys", false, "remove every key")
	value := fs.String("value", "", "the new value")
	file := fs.String("value-file", "", "read the new value from `file` (- for stdin)")
	scope := scopeFlag(fs)
	idem := idempotencyFlag(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 2 {
			return usagef("kb update takes a knowledge base and one identifier (quote it)")
		}
		set := visited(fs)
		p := client.KBPatch{Scope: *scope, Identifier: args[1]}
		if set["value"] || set["value-file"] {
			v, err := c.readValue(set, *value, *file)
			if err != nil {
				return err
			}
			p.Value = &v
		}
		switch {
		case *noKeys && len(keys) > 0:
			return usagef("--no-keys and --key do not go together")
		case *noKeys:
			p.Keys = []string{}
		case len(keys) > 0:
			p.Keys = append([]string{}, keys...)
		}
		if p.Value == nil && p.Keys == nil {
			return usagef("nothing to change: give --value, --value-file, --key or --no-keys")
		}
		var raw json.RawMessage
		e, err := c.client.UpdateKBEntry(client.WithRawResponse(idem(ctx), &raw), args[0], p)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		fmt.Fprintf(c.stdout, "updated %q in %s (version %d)\n", e.Identifier, kbWhere(args[0], e.Scope), e.Version)
		return nil
	}
}

func setupKBGet(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	scope := scopeFlag(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 2 {
			return usagef("kb get takes a knowledge base and one identifier (quote it)")
		}
		e, err := c.client.GetKBEntry(ctx, args[0], *scope, args[1])
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(e)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "identifier\t%s\n", e.Identifier)
		fmt.Fprintf(tw, "scope\t%s\n", orNone(e.Scope))
		fmt.Fprintf(tw, "keys\t%s\n", joinOrNone(e.Keys))
		fmt.Fprintf(tw, "version\t%d\n", e.Version)
		fmt.Fprintf(tw, "id\t%s\n", e.ID)
		fmt.Fprintf(tw, "created\t%s\n", e.CreatedAt)
		fmt.Fprintf(tw, "updated\t%s\n", e.UpdatedAt)
		if err := tw.Flush(); err != nil {
			return err
		}
		// The value last and whole: it may span lines.
		fmt.Fprintf(c.stdout, "\n%s\n", e.Value)
		return nil
	}
}

// keyListFlag reads --any-keys/--all-keys the way the API reads any_keys
// and all_keys: given once, a comma-separated list; repeated, one key each.
type keyListFlag struct {
	vals []string
	set  bool
}

func (k *keyListFlag) String() string { return strings.Join(k.vals, ",") }

func (k *keyListFlag) Set(s string) error {
	k.vals, k.set = append(k.vals, s), true
	return nil
}

func (k *keyListFlag) keys() []string {
	if !k.set {
		return nil
	}
	if len(k.vals) == 1 {
		return strings.Split(k.vals[0], ",")
	}
	return k.vals
}

func setupKBQuery(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	ident := fs.String("identifier", "", "`words` that must all appear in the identifier")
	exact := fs.String("exact-identifier", "", "the whole identifier, exactly")
	key := fs.String("key", "", "a `key` the entry must have (any case)")
	var anyKeys, allKeys keyListFlag
	fs.Var(&anyKeys, "any-keys", "entries with at least one of these `keys` (a,b; repeat the flag for keys holding commas)")
	fs.Var(&allKeys, "all-keys", "entries with every one of these `keys` (a,b; repeat the flag for keys holding commas)")
	scope := scopeFlag(fs)
	limit := fs.Int("limit", 0, "page size `N` (default: the server's, 100)")
	cursor := fs.String("cursor", "", "continue after the page that printed this cursor")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("kb query takes one knowledge base (the conditions are flags)")
		}
		if *limit < 0 {
			return usagef("--limit must not be negative")
		}
		set := visited(fs)
		q := client.KBQuery{Scope: *scope, AnyKeys: anyKeys.keys(), AllKeys: allKeys.keys(), Limit: *limit, Cursor: *cursor}
		if set["identifier"] {
			q.Identifier = ident
		}
		if set["exact-identifier"] {
			q.ExactIdentifier = exact
		}
		if set["key"] {
			q.Key = key
		}
		var raw json.RawMessage
		p, err := c.client.QueryKB(client.WithRawResponse(ctx, &raw), args[0], q)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		for _, e := range p.Entries {
			fmt.Fprintf(tw, "%s\tv%d\t%s\t%s\n", e.Identifier, e.Version, joinOrNone(e.Keys), kbLine(e.Value, 60))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "%s\n", nouns(p.Count, "match", "matches"))
		if p.NextCursor != "" {
			fmt.Fprintf(c.stdout, "more: --cursor %s\n", p.NextCursor)
		}
		return nil
	}
}

// nouns is plural for nouns that do not just take an s.
func nouns(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// kbLine shortens s to one line of at most n characters.
func kbLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n-1]) + "…"
	}
	return orNone(s)
}

func setupKBLookup(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	scope := scopeFlag(fs)
	limit := fs.Int("limit", 0, "at most `N` entries (default: the server's, 100)")
	mode := fs.String("mode", "", "ranked (default: strict matches, then the best-ranked others) or strict")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) < 2 {
			return usagef("kb lookup takes a knowledge base and the question")
		}
		if *limit < 0 {
			return usagef("--limit must not be negative")
		}
		q := strings.Join(args[1:], " ")
		text, err := c.client.LookupKBMode(ctx, args[0], *scope, q, *mode, *limit)
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(map[string]string{"q": q, "text": text})
		}
		// Printed as a model would get it; a terminal gets its last newline.
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		_, err = io.WriteString(c.stdout, text)
		return err
	}
}

func setupKBSearch(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	scope := scopeFlag(fs)
	limit := fs.Int("limit", 0, "at most `N` entries (default: the server's, 100)")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) < 2 {
			return usagef("kb search takes a knowledge base and the question")
		}
		if *limit < 0 {
			return usagef("--limit must not be negative")
		}
		var raw json.RawMessage
		page, err := c.client.SearchKB(client.WithRawResponse(ctx, &raw), args[0], *scope, strings.Join(args[1:], " "), *limit)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		for _, h := range page.Entries {
			reasons := make([]string, len(h.Reasons))
			for i, why := range h.Reasons {
				reasons[i] = why.Code + ": " + why.Detail
			}
			fmt.Fprintf(tw, "%.4f\t%s\t%s\n", h.Score, kbLine(h.Identifier, 60), strings.Join(reasons, "; "))
		}
		return tw.Flush()
	}
}

func setupKBDelete(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	all := fs.Bool("all", false, "delete every entry of the scope (clear it)")
	scope := scopeFlag(fs)
	idem := idempotencyFlag(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		ctx = idem(ctx)
		var raw json.RawMessage
		ctx = client.WithRawResponse(ctx, &raw)
		switch {
		case *all && len(args) == 1:
			n, err := c.client.ClearKB(ctx, args[0], *scope)
			if err != nil {
				return err
			}
			if c.json {
				return c.printRaw(raw)
			}
			fmt.Fprintf(c.stdout, "cleared %s: deleted %s\n", kbWhere(args[0], *scope), nouns(n, "entry", "entries"))
			return nil
		case *all:
			return usagef("kb delete --all takes only the knowledge base")
		case len(args) != 2:
			return usagef("kb delete takes a knowledge base and one identifier (quote it), or --all")
		}
		if err := c.client.DeleteKBEntry(ctx, args[0], *scope, args[1]); err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		fmt.Fprintf(c.stdout, "deleted %q from %s\n", args[1], kbWhere(args[0], *scope))
		return nil
	}
}

func setupKBStats(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	scope := scopeFlag(fs)
	limit := fs.Int("limit", 0, "list at most `N` identifiers (default: the server's, 100)")
	cursor := fs.String("cursor", "", "continue after the page that printed this cursor")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("kb stats takes one knowledge base")
		}
		if *limit < 0 {
			return usagef("--limit must not be negative")
		}
		var raw json.RawMessage
		st, err := c.client.KBStats(client.WithRawResponse(ctx, &raw), args[0], *scope, *limit, *cursor)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		fmt.Fprintf(c.stdout, "%s: %s\n", kbWhere(args[0], *scope), nouns(st.Count, "entry", "entries"))
		for _, id := range st.Identifiers {
			fmt.Fprintf(c.stdout, "  %s\n", id)
		}
		if st.NextCursor != "" {
			fmt.Fprintf(c.stdout, "more: --cursor %s\n", st.NextCursor)
		}
		return nil
	}
}

func setupKBHistory(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	scope := scopeFlag(fs)
	limit := fs.Int("limit", 0, "at most `N` versions (default: the server's, 100)")
	cursor := fs.String("cursor", "", "continue after the page that printed this cursor")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 2 {
			return usagef("kb history takes a knowledge base and one identifier (quote it)")
		}
		if *limit < 0 {
			return usagef("--limit must not be negative")
		}
		var raw json.RawMessage
		h, err := c.client.KBHistory(client.WithRawResponse(ctx, &raw), args[0], *scope, args[1], *limit, *cursor)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		fmt.Fprintf(c.stdout, "%q in %s: %s\n", h.Identifier, kbWhere(args[0], *scope), plural(len(h.Versions), "version"))
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		for _, v := range h.Versions {
			keys, value := "-", "-"
			if v.Keys != nil {
				keys = joinOrNone(v.Keys)
			}
			if v.Value != nil {
				value = kbLine(*v.Value, 50)
			}
			fmt.Fprintf(tw, "  v%d\t%s\t%s\t%s\t%s\n", v.Version, v.Op, v.At, keys, value)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if h.NextCursor != "" {
			fmt.Fprintf(c.stdout, "more: --cursor %s\n", h.NextCursor)
		}
		return nil
	}
}
