package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"regexp"
	"strings"

	"github.com/kura-memory/kura/internal/kura"
	"golang.org/x/crypto/bcrypt"
)

// natsUserRE is the users file's rule for names (internal/bus checks it
// again when kurad reads the file; the CLI does not link the NATS server).
var natsUserRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// setupNATSUserNew prints a fresh password once and the users-file line
// holding only its bcrypt hash. Nothing is sent to kurad.
func setupNATSUserNew(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) < 1 || len(args) > 2 {
			return usagef("nats-user new takes a user name and optionally projects (a,b or *; default *)")
		}
		name, projects := args[0], "*"
		if len(args) == 2 {
			projects = args[1]
		}
		if !natsUserRE.MatchString(name) || name == "kurad-internal" {
			return usagef("%q is not a NATS user name (^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$, not kurad-internal)", name)
		}
		if projects != "*" {
			for _, p := range strings.Split(projects, ",") {
				if !kura.ValidSlug(p) {
					return usagef("%q is not a project slug; give a,b or *", p)
				}
			}
		}
		var secret [24]byte
		if _, err := rand.Read(secret[:]); err != nil {
			return err
		}
		password := base64.RawURLEncoding.EncodeToString(secret[:])
		hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
		if err != nil {
			return err
		}
		line := name + " " + string(hash) + " " + projects
		if c.json {
			b, _ := json.Marshal(map[string]string{"user": name, "password": password, "line": line})
			fmt.Fprintln(c.stdout, string(b))
			return nil
		}
		fmt.Fprintf(c.stdout, "password: %s\n", password)
		fmt.Fprintf(c.stdout, "users file line (add it to KURA_NATS_USERS_FILE and restart kurad):\n%s\n", line)
		fmt.Fprintln(c.stderr, "kura: the password is shown only now; kurad keeps only its bcrypt hash")
		return nil
	}
}
