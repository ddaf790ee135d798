package bus

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"golang.org/x/crypto/bcrypt"
)

// SubjectRoot is the prefix of every subject kurad publishes
// (kura.SubjectRoot says why it reads so).
const SubjectRoot = kura.SubjectRoot

// internalUser is the name of kurad's own in-process connection; the users
// file may not claim it.
const internalUser = "kurad-internal"

// User is one NATS identity from the users file: a name with a bcrypt
// password hash, or an nkey public key. Projects nil means every project.
type User struct {
	Name         string   // empty for an nkey user
	PasswordHash string   // bcrypt; empty for an nkey user
	Nkey         string   // public user nkey (U…); empty for a password user
	Projects     []string // nil: all projects ("*")
	Line         int      // where it was defined, for messages
}

// Identity is how the user is named in logs.
func (u User) Identity() string {
	if u.Nkey != "" {
		return u.Nkey
	}
	return u.Name
}

var natsUserRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidUserName reports whether s may name a password user: short, and
// free of the characters a nats:// URL or a subject would choke on.
func ValidUserName(s string) bool { return natsUserRE.MatchString(s) && s != internalUser }

// LoadUsers reads a users file (see ParseUsers).
func LoadUsers(path string) ([]User, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("nats users file: %w", err)
	}
	defer f.Close()
	us, err := ParseUsers(f)
	if err != nil {
		return nil, fmt.Errorf("nats users file %s: %w", path, err)
	}
	return us, nil
}

// ParseUsers reads the NATS users format, one identity a line:
//
//	<user> <bcrypt hash> <projects>
//	<nkey> - <projects>
//
// projects is a comma-separated list of project slugs or "*"; "#" starts a
// comment line. Plain-text passwords are refused: only a bcrypt hash
// ($2a$/$2b$/$2y$) is stored, so the file is no secret by itself.
func ParseUsers(r io.Reader) ([]User, error) {
	var out []User
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		f := strings.Fields(t)
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: want `<user> <bcrypt-hash> <projects>` or `<nkey> - <projects>`, got %d fields", line, len(f))
		}
		u := User{Line: line}
		switch {
		case f[1] == "-":
			if !nkeys.IsValidPublicUserKey(f[0]) {
				return nil, fmt.Errorf("line %d: %q is not a public user nkey (U…, never the seed S…)", line, f[0])
			}
			u.Nkey = f[0]
		case nkeys.IsValidPublicUserKey(f[0]):
			return nil, fmt.Errorf("line %d: an nkey user takes - in place of a password hash", line)
		case !ValidUserName(f[0]):
			return nil, fmt.Errorf("line %d: %q is not a user name (^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$, not %s)", line, f[0], internalUser)
		default:
			if _, err := bcrypt.Cost([]byte(f[1])); err != nil || !strings.HasPrefix(f[1], "$2") {
				return nil, fmt.Errorf("line %d: user %s: the password must be a bcrypt hash ($2a$/$2b$/$2y$…; `kura nats-user new` prints one), not plain text", line, f[0])
			}
			u.Name, u.PasswordHash = f[0], f[1]
		}
		if prev, ok := seen[u.Identity()]; ok {
			return nil, fmt.Errorf("line %d: %s is already defined on line %d", line, u.Identity(), prev)
		}
		seen[u.Identity()] = line
		ps, err := parseProjects(f[2])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		u.Projects = ps
		out = append(out, u)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	return out, nil
}

// parseProjects reads "*" (nil: all) or a comma-separated list of slugs.
func parseProjects(s string) ([]string, error) {
	if s == "*" {
		return nil, nil
	}
	var ps []string
	for _, p := range strings.Split(s, ",") {
		if !kura.ValidSlug(p) {
			return nil, fmt.Errorf("projects: %q is not a project slug (^[a-z0-9][a-z0-9_-]{0,63}$) or *", p)
		}
		if !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	return ps, nil
}

// Subjects are the subjects u may subscribe to: its projects' trees. Slugs
// hold no dots or wildcards, so a project cannot reach beyond its own tree.
func (u User) Subjects() []string {
	if u.Projects == nil {
		return []string{SubjectRoot + ".>"}
	}
	out := make([]string, len(u.Projects))
	for i, p := range u.Projects {
		out[i] = SubjectRoot + "." + p + ".>"
	}
	return out
}

// Permissions are what the server enforces for u: subscribe (plain or in a
// queue group) on its projects' subjects, and publish nothing. The doorbell
// is one-way: clients answer through the HTTP API, so a client that could
// publish could only forge doorbells for others.
func (u User) Permissions() *server.Permissions {
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Deny: []string{">"}},
		Subscribe: &server.SubjectPermission{Allow: u.Subjects()},
	}
}

// serverUsers turns the users into the server's own types, plus kurad's
// in-process publisher with full rights and a password that lives only in
// this process's memory.
func serverUsers(us []User, internalPassword string) ([]*server.User, []*server.NkeyUser) {
	users := []*server.User{{
		Username: internalUser,
		Password: internalPassword,
		// Only the in-process connection may use it, even if the
		// password were to leak.
		AllowedConnectionTypes: map[string]struct{}{"IN_PROCESS": {}},
	}}
	var nks []*server.NkeyUser
	tcpOnly := map[string]struct{}{"STANDARD": {}}
	for _, u := range us {
		if u.Nkey != "" {
			nks = append(nks, &server.NkeyUser{Nkey: u.Nkey, Permissions: u.Permissions(), AllowedConnectionTypes: tcpOnly})
			continue
		}
		users = append(users, &server.User{Username: u.Name, Password: u.PasswordHash, Permissions: u.Permissions(), AllowedConnectionTypes: tcpOnly})
	}
	return users, nks
}
