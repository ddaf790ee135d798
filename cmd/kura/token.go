package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/kura-memory/kura/internal/auth"
)

// newToken is 32 random bytes, base64url; the kura_ prefix lets secret
// scanners and people recognise one.
func newToken() string {
	var b [32]byte
	rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "kura_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// setupTokenNew prints a fresh token once, with the tokens file line that
// holds only its SHA-256. It talks to no server: kurad learns the token
// when the line is added and kurad gets SIGHUP.
func setupTokenNew(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	identity := fs.String("identity", "agent:agent", "identity the token acts as (user:, agent: or tool:)")
	role := fs.String("role", "writer", "reader, writer or admin")
	scopes := fs.String("scopes", "*", "comma-separated scopes, or *")
	projects := fs.String("projects", "*", "comma-separated projects, or *")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 0 {
			return usagef("token new takes no arguments")
		}
		if !auth.ValidIdentity(*identity) {
			return usagef("--identity %q must match ^(user|agent|tool):[A-Za-z0-9._-]{1,64}$ (sys: is kurad's own)", *identity)
		}
		r, ok := auth.ParseRole(*role)
		if !ok {
			return usagef("--role %q is not reader, writer or admin", *role)
		}
		sc, err := auth.ParseList("scopes", *scopes)
		if err != nil {
			return usagef("--%v", err)
		}
		pr, err := auth.ParseList("projects", *projects)
		if err != nil {
			return usagef("--%v", err)
		}
		tok := newToken()
		hash := auth.HashToken(tok)
		line := auth.FormatLine(hash, auth.Principal{Identity: *identity, Role: r, Scopes: sc, Projects: pr})
		if c.json {
			b, _ := json.MarshalIndent(map[string]string{"token": tok, "sha256": hash, "line": line}, "", "  ")
			fmt.Fprintf(c.stdout, "%s\n", b)
			return nil
		}
		fmt.Fprintf(c.stdout, "%s\n", tok)
		fmt.Fprintf(c.stdout, "# The token above is shown once; kurad keeps only its SHA-256.\n")
		fmt.Fprintf(c.stdout, "# Add this line to the tokens file (--tokens-file), then send kurad SIGHUP:\n%s\n", line)
		return nil
	}
}
