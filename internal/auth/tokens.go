package auth

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
)

// A tokens file holds one token a line:
//
//	<hex SHA-256 of the token> <identity> <role> <scopes> <projects>
//
// scopes and projects are comma-separated names or the single wildcard *;
// # starts a comment. Only hashes are stored, so the file reveals no token.

// Entry is one line of a tokens file.
type Entry struct {
	Hash      [sha256.Size]byte
	Principal Principal
	Line      int
}

var (
	identityRE = regexp.MustCompile(`^(user|agent|tool|sys):[A-Za-z0-9._-]{1,64}$`)
	nameRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
)

// maxTokenLine bounds a line, so a stray binary file is refused rather
// than read into memory whole.
const maxTokenLine = 64 << 10

// ParseTokens reads a tokens file strictly: every problem is reported
// with its line number, and a file with any bad line yields no entries.
func ParseTokens(r io.Reader) ([]Entry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxTokenLine)
	var out []Entry
	seenHash := map[[sha256.Size]byte]int{}
	seenID := map[string]int{}
	n := 0
	for sc.Scan() {
		n++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		e, err := parseLine(fields)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		e.Line = n
		if prev, ok := seenHash[e.Hash]; ok {
			return nil, fmt.Errorf("line %d: the same token hash is on line %d", n, prev)
		}
		if prev, ok := seenID[e.Principal.Identity]; ok {
			// Two tokens of one identity are allowed (rotation), but only
			// with the same rights: otherwise who may do what depends on
			// which token the caller happened to present.
			p := out[indexOfLine(out, prev)].Principal
			if p.Role != e.Principal.Role || !sameList(p.Scopes, e.Principal.Scopes) || !sameList(p.Projects, e.Principal.Projects) {
				return nil, fmt.Errorf("line %d: identity %s is on line %d with other rights; give every token of an identity the same role, scopes and projects", n, e.Principal.Identity, prev)
			}
		} else {
			seenID[e.Principal.Identity] = n
		}
		seenHash[e.Hash] = n
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", n+1, err)
	}
	return out, nil
}

func indexOfLine(es []Entry, line int) int {
	for i, e := range es {
		if e.Line == line {
			return i
		}
	}
	return 0
}

func sameList(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func parseLine(f []string) (Entry, error) {
	var e Entry
	if len(f) != 5 {
		return e, fmt.Errorf("want 5 fields (<sha256 hex> <identity> <role> <scopes> <projects>), got %d", len(f))
	}
	h, err := hex.DecodeString(f[0])
	if err != nil || len(h) != sha256.Size || strings.ToLower(f[0]) != f[0] {
		return e, fmt.Errorf("%q is not a lowercase hex SHA-256 (64 hex digits); `kura token new` prints one", abbrev(f[0]))
	}
	copy(e.Hash[:], h)
	if !identityRE.MatchString(f[1]) {
		return e, fmt.Errorf("identity %q must match ^(user|agent|tool):[A-Za-z0-9._-]{1,64}$", abbrev(f[1]))
	}
	if strings.HasPrefix(f[1], "sys:") {
		return e, fmt.Errorf("identity %s: sys: identities belong to kurad itself and cannot hold a token", f[1])
	}
	role, ok := ParseRole(f[2])
	if !ok {
		return e, fmt.Errorf("role %q is not reader, writer or admin", abbrev(f[2]))
	}
	scopes, err := parseList("scopes", f[3])
	if err != nil {
		return e, err
	}
	projects, err := parseList("projects", f[4])
	if err != nil {
		return e, err
	}
	e.Principal = Principal{Identity: f[1], Role: role, Scopes: scopes, Projects: projects}
	return e, nil
}

func parseList(what, s string) ([]string, error) {
	if s == All {
		return []string{All}, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, n := range strings.Split(s, ",") {
		if n == All {
			return nil, fmt.Errorf("%s: * stands alone, not in a list", what)
		}
		if !nameRE.MatchString(n) {
			return nil, fmt.Errorf("%s: %q is not a name (^[a-z0-9][a-z0-9_-]{0,63}$) or *", what, abbrev(n))
		}
		if seen[n] {
			return nil, fmt.Errorf("%s: %s is listed twice", what, n)
		}
		seen[n] = true
		out = append(out, n)
	}
	return out, nil
}

func abbrev(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// LoadTokensFile reads and parses a tokens file.
func LoadTokensFile(path string) ([]Entry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	es, err := ParseTokens(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	return es, nil
}

// Table is the live set of tokens. Lookups read one immutable snapshot;
// Replace swaps in a new one at once, so a reload never leaves a request
// seeing half of each file, and a revoked token stops working for the very
// next request. Requests that outlive their check (event streams, long
// polls) wait on Changed and look their token up again.
type Table struct {
	cur atomic.Pointer[snapshot]
}

type snapshot struct {
	entries []Entry
	changed chan struct{} // closed when a newer snapshot replaces this one
}

// NewTable returns a table holding es.
func NewTable(es []Entry) *Table {
	t := &Table{}
	t.Replace(es)
	return t
}

// Replace swaps the table's entries and wakes every waiter on Changed.
func (t *Table) Replace(es []Entry) {
	next := &snapshot{entries: append([]Entry(nil), es...), changed: make(chan struct{})}
	if old := t.cur.Swap(next); old != nil {
		close(old.changed)
	}
}

// Changed returns a channel closed at the next Replace; nil (never ready)
// for a nil table.
func (t *Table) Changed() <-chan struct{} {
	if t == nil {
		return nil
	}
	if s := t.cur.Load(); s != nil {
		return s.changed
	}
	return nil
}

// Len is the number of tokens.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	if s := t.cur.Load(); s != nil {
		return len(s.entries)
	}
	return 0
}

// Lookup returns the principal of a presented bearer token. The token is
// hashed and compared against every stored hash in constant time, and the
// loop does not stop at a match, so timing tells nothing about which
// stored hash, if any, shares a prefix with it.
func (t *Table) Lookup(token string) (Principal, bool) {
	if t == nil || token == "" {
		return Principal{}, false
	}
	s := t.cur.Load()
	if s == nil {
		return Principal{}, false
	}
	sum := sha256.Sum256([]byte(token))
	found := -1
	for i := range s.entries {
		if subtle.ConstantTimeCompare(sum[:], s.entries[i].Hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Principal{}, false
	}
	return s.entries[found].Principal, true
}

// HashToken is the hex SHA-256 of a token, as the tokens file holds it.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// ValidIdentity reports whether s may hold a token: an author id that is
// not one of kurad's own sys: identities.
func ValidIdentity(s string) bool {
	return identityRE.MatchString(s) && !strings.HasPrefix(s, "sys:")
}

// ParseList reads a comma-separated scope or project list, or *.
func ParseList(what, s string) ([]string, error) { return parseList(what, s) }

// FormatLine renders a tokens file line.
func FormatLine(hash string, p Principal) string {
	return fmt.Sprintf("%s %s %s %s %s", hash, p.Identity, p.Role, strings.Join(p.Scopes, ","), strings.Join(p.Projects, ","))
}
