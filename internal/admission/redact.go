package admission

import "regexp"

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
}{
	// PEM private keys, whole block.
	{"pem_private_key", regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----`), Placeholder},
	// URLs carrying user:password@ (database and broker connection strings).
	{"credential_url", regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]+:[^\s@/]+@[^\s"'<>]+`), Placeholder},
	// HTTP bearer tokens.
	{"bearer_token", regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9\-._~+/]{8,}=*`), "Bearer " + Placeholder},
	// key=value where the key names a secret; the key stays readable.
	{"secret_assignment", regexp.MustCompile(`(?i)\b(password|passwd|pwd|passphrase|secret|secret[_-]?key|client[_-]?secret|api[_-]?key|token|access[_-]?token|auth[_-]?token|refresh[_-]?token|private[_-]?key)\s*=\s*("[^"]*"|'[^']*'|[^\s,;&"']+)`), "${1}=" + Placeholder},
	// API keys with well-known prefixes.
	{"api_key", regexp.MustCompile(`\b(sk-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}|glpat-[A-Za-z0-9_-]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})`), Placeholder},
	// JSON Web Tokens (three base64url parts, the first a JSON header).
	{"jwt", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), Placeholder},
}

// RedactorNames lists the pattern set, for documentation and tests.
func RedactorNames() []string {
	out := make([]string, len(redactors))
	for i, r := range redactors {
		out[i] = r.name
	}
	return out
}

// Redact replaces secret-like strings in s and counts them.
func Redact(s string) (string, int) {
	n := 0
	for _, r := range redactors {
		s = r.re.ReplaceAllStringFunc(s, func(m string) string {
			n++
			return r.re.ReplaceAllString(m, r.repl)
		})
	}
	return s, n
}
