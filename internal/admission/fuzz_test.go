package admission_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kura-memory/kura/internal/admission"
)

// FuzzRedact: Redact never panics, leaves text with nothing to redact
// alone, and is idempotent — what it returns has no secret left for a
// second pass to find (no secret "grows back" from the pieces a
// replacement leaves), so a second pass returns the same text with a count
// of 0. Every redaction leaves one placeholder.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{
		"", "plain prose", "the token budget is 500", "password policy requires 12 chars",
		"password=hunter2", `PASSWORD="two words"`, "api_key=abc", "Authorization: Bearer abc.def-123_xyz",
		"postgres://user:pw@host:5432/db", "amqp://u:p@broker", openAIKey, awsKey, githubPAT, slackBot,
		googleKey, jwt, pemRSA, pemOpenSSH, pemPublic, admission.Placeholder,
		"password=" + admission.Placeholder, "Bearer " + admission.Placeholder,
		"password=bearer abcdefgh1", "a://b:c@d e://f:g@h",
		"-----BEGIN RSA PRIVATE KEY-----\n-----BEGIN RSA PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY-----",
		"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE", awsKey + awsKey, googleKey + openAIKey2, `x://u:password="a b"@h`,
		"we use bearer authentication", "password == expected", "DB_PASSWORD=hunter2",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once, n1 := admission.Redact(s)
		if slow, ns := admission.RedactPatterns(s); slow != once || ns != n1 {
			t.Fatalf("Redact(%q) = %q, %d; without the pre-test %q, %d", s, once, n1, slow, ns)
		}
		if n1 < 0 {
			t.Fatalf("Redact(%q): negative count %d", s, n1)
		}
		if n1 == 0 && once != s {
			t.Fatalf("Redact(%q) = %q with a count of 0: changed text without counting", s, once)
		}
		if utf8.ValidString(s) && !utf8.ValidString(once) {
			t.Fatalf("Redact(%q) = %q: broke UTF-8", s, once)
		}
		// Each redaction writes one placeholder; a match may swallow
		// placeholders that were already there, never add extra ones.
		if got, max := strings.Count(once, admission.Placeholder), strings.Count(s, admission.Placeholder)+n1; got > max {
			t.Fatalf("Redact(%q) = %q, %d: %d placeholders, want at most %d", s, once, n1, got, max)
		}
		twice, n2 := admission.Redact(once)
		if twice != once || n2 != 0 {
			t.Fatalf("not idempotent:\n   input %q\n    once %q (%d)\n   twice %q (%d)", s, once, n1, twice, n2)
		}
	})
}
