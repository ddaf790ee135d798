package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/kura-memory/kura/client"
)

// metaFlag collects repeated --meta k=v flags.
type metaFlag map[string]string

func (m metaFlag) String() string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

func (m metaFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not key=value", s)
	}
	m[k] = v
	return nil
}

// asContent turns text given on the command line into record content: JSON
// as it is, anything else as a JSON string, so that
// `kura put --content 'hello world'` needs no quoting games.
func asContent(text []byte) json.RawMessage {
	if json.Valid(text) {
		return json.RawMessage(bytes.TrimSpace(text))
	}
	b, _ := json.Marshal(string(text)) // a string always marshals
	return b
}

// maxStdin bounds what put reads from stdin: more than the server's default
// body limit cannot be accepted anyway.
const maxStdin = 64 << 20

func setupPut(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	typ := fs.String("type", "", "record type, e.g. agent.thought")
	author := fs.String("author", "", "author id, e.g. agent:bmo")
	content := fs.String("content", "", "content: JSON, or text taken as a JSON string")
	meta := metaFlag{}
	fs.Var(meta, "meta", "metadata `key=value` (repeatable)")
	stdin := fs.Bool("stdin", false, "read from stdin: the content when --type and --author are given, else a record input object (or an array: a batch)")

	return func(ctx context.Context, c *cli, args []string) error {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		switch {
		case len(args) == 1 && args[0] == "-":
			*stdin = true
		case len(args) > 0:
			return usagef("unexpected argument %q (content goes in --content, or on stdin with --stdin or -)", args[0])
		}

		if !*stdin {
			switch {
			case *typ == "":
				return usagef("--type is required")
			case *author == "":
				return usagef("--author is required")
			case !set["content"]:
				return usagef("--content is required (or --stdin)")
			}
			in := client.RecordInput{Type: *typ, AuthorID: *author, Content: asContent([]byte(*content)), Metadata: meta}
			return c.putOne(ctx, in)
		}
		if set["content"] {
			return usagef("--content and stdin are exclusive")
		}
		data, err := io.ReadAll(io.LimitReader(c.stdin, maxStdin+1))
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		if len(data) > maxStdin {
			return usagef("stdin holds more than %d bytes", maxStdin)
		}
		if *typ != "" && *author != "" {
			// Text piped in usually ends with a newline that is not part
			// of what was meant (as in shell command substitution).
			data = bytes.TrimSuffix(data, []byte("\n"))
			data = bytes.TrimSuffix(data, []byte("\r"))
			return c.putOne(ctx, client.RecordInput{Type: *typ, AuthorID: *author, Content: asContent(data), Metadata: meta})
		}

		// A record input object, or an array of them for one batch; the
		// flags given fill in or override their fields.
		apply := func(in *client.RecordInput) {
			if *typ != "" {
				in.Type = *typ
			}
			if *author != "" {
				in.AuthorID = *author
			}
			if len(meta) > 0 && in.Metadata == nil {
				in.Metadata = map[string]string{}
			}
			for k, v := range meta {
				in.Metadata[k] = v
			}
		}
		trimmed := bytes.TrimSpace(data)
		if len(trimmed) > 0 && trimmed[0] == '[' {
			var ins []client.RecordInput
			if err := strictDecode(trimmed, &ins); err != nil {
				return usagef("stdin is not a JSON array of record inputs: %v", err)
			}
			for i := range ins {
				apply(&ins[i])
			}
			return c.putBatch(ctx, ins)
		}
		var in client.RecordInput
		if err := strictDecode(trimmed, &in); err != nil {
			return usagef("stdin is not a record input object {\"type\",\"content\",\"author_id\",\"metadata\"}: %v (with --type and --author, stdin is the content)", err)
		}
		apply(&in)
		return c.putOne(ctx, in)
	}
}

// strictDecode decodes one JSON value and rejects unknown fields: a typo in
// a field name would otherwise be dropped here before the server could
// reject it.
func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON value")
	}
	return nil
}

func (c *cli) putOne(ctx context.Context, in client.RecordInput) error {
	var raw json.RawMessage
	r, err := c.client.PutRecord(client.WithRawResponse(ctx, &raw), in)
	if err != nil {
		return err
	}
	if c.json {
		return c.printRaw(raw)
	}
	if r.Deduplicated {
		fmt.Fprintf(c.stdout, "existing record %s (deduplicated)\n", r.ID)
	} else {
		fmt.Fprintf(c.stdout, "created record %s\n", r.ID)
	}
	return nil
}

func (c *cli) putBatch(ctx context.Context, ins []client.RecordInput) error {
	var raw json.RawMessage
	recs, err := c.client.PutRecords(client.WithRawResponse(ctx, &raw), ins)
	if err != nil {
		return err
	}
	if c.json {
		return c.printRaw(raw)
	}
	for _, r := range recs {
		if r.Deduplicated {
			fmt.Fprintf(c.stdout, "existing record %s (deduplicated)\n", r.ID)
		} else {
			fmt.Fprintf(c.stdout, "created record %s\n", r.ID)
		}
	}
	return nil
}
