// Package kura holds Kura's domain nouns (records, ledgers, events), their
// validation rules and the Error type every other package speaks. It imports
// only the standard library so that the store, the API, the client and the
// pure domain packages can all share it.
package kura

import (
	"fmt"
	"regexp"
	"time"
)

// TimeFormat is how every timestamp is written, in the API and inside hashes:
// RFC 3339 in UTC with exactly nine fractional digits.
const TimeFormat = "2006-01-02T15:04:05.000000000Z"

// FormatTime renders t in TimeFormat (UTC).
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// ParseTime accepts any RFC 3339 time (with or without fractions) and
// returns it in UTC. Times whose UTC year leaves 0000..9999 are refused:
// TimeFormat could not write them, and stored times compare as text.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, err
	}
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return time.Time{}, fmt.Errorf("time %q is outside years 0000..9999 in UTC", s)
	}
	return t, nil
}

var (
	authorRE = regexp.MustCompile(`^(user|agent|tool|sys):[A-Za-z0-9._-]{1,64}$`)
	slugRE   = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	uuidRE   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	hashRE   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// ValidAuthorID reports whether s is an author id such as "agent:bmo".
func ValidAuthorID(s string) bool { return authorRE.MatchString(s) }

// authorIDForm explains an author id to someone who has not met one; the
// pattern alone reads as noise to a newcomer.
const authorIDForm = "kind:name with kind user, agent, tool or sys (e.g. agent:bmo)"

// CheckAuthorID returns nil when s is an author id, else an invalid_argument
// naming field that says first whether the id is missing or malformed, then
// what one looks like. who says what the id stands for ("who wrote the
// record").
func CheckAuthorID(field, s, who string) error {
	switch {
	case s == "":
		return Invalid(field, "author_id is required: %s, as %s", who, authorIDForm)
	case !ValidAuthorID(s):
		return Invalid(field, "author_id must be %s, matching ^(user|agent|tool|sys):[A-Za-z0-9._-]{1,64}$", authorIDForm)
	}
	return nil
}

// ValidSlug reports whether s is a project, name or scope slug.
func ValidSlug(s string) bool { return slugRE.MatchString(s) }

// ValidID reports whether s is a UUID in lowercase canonical form, the only
// form Kura hands out and accepts.
func ValidID(s string) bool { return uuidRE.MatchString(s) }

// ValidHash reports whether s is a lowercase hex SHA-256 digest.
func ValidHash(s string) bool { return hashRE.MatchString(s) }
