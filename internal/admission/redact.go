package admission

import (
	"regexp"
	"strings"
	"unicode"
)

// Placeholder replaces whatever a pattern caught.
const Placeholder = "[REDACTED]"

// redactors are the secret-like shapes compile removes from titles and
// summaries, in the order they run (the wider ones first, so a private key
// block is one redaction, not one per line). Each is narrow on purpose:
// ordinary prose ("the token budget", "password policy") must pass
// untouched; the tests list what each catches and what it leaves.
var redactors = []struct {
	name string
	re   *regexp.Regexp
	repl string
	skip func(m string) bool // a match that is not a secret after all
	// need holds for every text the pattern can match (it names what
	// each match contains): a cheap test that spares the pattern's run
	// over most texts.
	need func(s string) bool
}{
	// PEM private keys, whole block; a block cut short (no END line) is
	// redacted to the end of the text rather than leaked.
	{"pem_private_key", regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[\s\S]*)`), Placeholder, nil, has("-----BEGIN ")},
	// URLs carrying user:password@ (database and broker connection strings).
	{"credential_url", regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]+:[^\s@/]+@[^\s"'<>]+`), Placeholder, nil, has("://")},
	// HTTP bearer tokens.
	{"bearer_token", regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9\-._~+/]{8,}=*`), "Bearer " + Placeholder, proseBearer, hasBearer},
	// key=value where the key names a secret, also as the end of a longer
	// name (DB_PASSWORD, STRIPE_API_KEY); the key stays readable. A value
	// starting with "=" is a comparison (password == x), not a secret.
	{"secret_assignment", regexp.MustCompile(`(?i)\b([A-Za-z0-9_]*?(?:password|passwd|pwd|passphrase|secret|secret[_-]?key|client[_-]?secret|api[_-]?key|token|access[_-]?token|auth[_-]?token|refresh[_-]?token|private[_-]?key))\s*=\s*("[^"]*"|'[^']*'|[^\s,;&"'=][^\s,;&"']*)`), "${1}=" + Placeholder, nil, has("=")},
	// API keys with well-known prefixes.
	{"api_key", regexp.MustCompile(`\b(sk-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}|glpat-[A-Za-z0-9_-]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})`), Placeholder, nil, has("sk-", "AKIA", "_", "glpat-", "xox", "AIza")},
	// JSON Web Tokens (three base64url parts, the first a JSON header).
	{"jwt", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), Placeholder, nil, has("eyJ")},
}

// proseBearer reports a "bearer" followed by a plain word ("bearer
// authentication"): a token has a digit or a symbol in it, or is longer
// than any word.
func proseBearer(m string) bool {
	tok := strings.TrimRight(strings.Fields(m)[1], "=")
	return len(tok) < 24 && !strings.ContainsFunc(tok, func(r rune) bool { return !unicode.IsLetter(r) })
}

// RedactorNames lists the pattern set, for documentation and tests.
func RedactorNames() []string {
	out := make([]string, len(redactors))
	for i, r := range redactors {
		out[i] = r.name
	}
	return out
}

// Redact replaces secret-like strings in s and counts them. A match that
// is already redacted ("password=[REDACTED]") is not counted again, and
// the patterns run until nothing changes: a replacement can expose a
// secret an earlier pass skipped (a key glued to another key), and
// Redact(Redact(s)) must find nothing left. Every counted replacement
// shrinks the text outside placeholders, so the loop ends.
func Redact(s string) (string, int) {
	return redact(s, true)
}

// redactPatterns runs every pattern over the text, without the cheap
// tests: what Redact must agree with.
func redactPatterns(s string) (string, int) {
	return redact(s, false)
}

// redact runs the patterns until nothing changes; with cheap, a pattern
// runs only over a text that can hold its match (need), checked again at
// every pass since a replacement changes the text.
func redact(s string, cheap bool) (string, int) {
	n := 0
	for changed := true; changed; {
		changed = false
		for _, r := range redactors {
			if cheap && !r.need(s) {
				continue
			}
			s = r.re.ReplaceAllStringFunc(s, func(m string) string {
				if r.skip != nil && r.skip(m) {
					return m
				}
				out := r.re.ReplaceAllString(m, r.repl)
				if out != m {
					n++
					changed = true
				}
				return out
			})
		}
	}
	return s, n
}

// has is a need: the text holds one of subs.
func has(subs ...string) func(string) bool {
	return func(s string) bool {
		for _, sub := range subs {
			if strings.Contains(s, sub) {
				return true
			}
		}
		return false
	}
}

// hasBearer is bearer_token's need: "bearer" in any case.
func hasBearer(s string) bool {
	for i := 0; i+6 <= len(s); i++ {
		if (s[i] == 'b' || s[i] == 'B') && strings.EqualFold(s[i:i+6], "bearer") {
			return true
		}
	}
	return false
}
