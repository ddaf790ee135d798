package admission_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/admission"
)

// Fake secrets of each documented shape. None is a real credential; the
// AWS one is AWS's own documentation example.
const (
	openAIKey  = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1w"
	openAIKey2 = "sk-0123456789abcdefghij" // exactly 20 after "sk-"
	awsKey     = "AKIAIOSFODNN7EXAMPLE"
	githubPAT  = "ghp_0123456789abcdefghijklmnopqrstuvwxyz" // 36 after "ghp_"
	githubFine = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"
	gitlabPAT  = "glpat-xxxxxxxxxxxxxxxxxxxx"
	slackBot   = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	googleKey  = "AIzaSyA-0123456789abcdefghijklmnopqrstu" // 35 after "AIza"
	jwt        = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)

const pemRSA = `-----BEGIN RSA PRIVATE KEY-----
MIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF0pGQ3Gz7YzG5y9uJjA0EXAMPLE0
k8sYlq1t3P4vJ6G2EXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPL
-----END RSA PRIVATE KEY-----`

const pemEC = `-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEoAoGCCqGSM49
AwEHoUQDQgAEEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLE==
-----END EC PRIVATE KEY-----`

const pemOpenSSH = "-----BEGIN OPENSSH PRIVATE KEY-----\r\n" +
	"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\r\n" +
	"QyNTUxOQAAACBEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEAAAAA\r\n" +
	"-----END OPENSSH PRIVATE KEY-----"

const pemPKCS8 = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7EXAMPLE\n-----END PRIVATE KEY-----"

const pemEncrypted = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqEXAMPLE\n-----END ENCRYPTED PRIVATE KEY-----"

const pemPublic = `-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEXAMPLEEXAMPLEEXAMPLEEXAMPLE
EXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLE==
-----END PUBLIC KEY-----`

const pemCert = `-----BEGIN CERTIFICATE-----
MIIBszCCAVmgAwIBAgIUEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEwCgYIKoZIzj0E
-----END CERTIFICATE-----`

// TestRedact_Catches lists what each documented pattern removes, with the
// exact output and count.
func TestRedact_Catches(t *testing.T) {
	t.Parallel()
	const R = admission.Placeholder
	for _, tt := range []struct {
		name, in, want string
		count          int
	}{
		// api_key
		{"api_key/OpenAI", "use " + openAIKey + " for the model", "use " + R + " for the model", 1},
		{"api_key/OpenAIMinimal", openAIKey2, R, 1},
		{"api_key/AWS", "aws_access_key_id: " + awsKey, "aws_access_key_id: " + R, 1},
		{"api_key/GitHub", "token " + githubPAT + ".", "token " + R + ".", 1},
		{"api_key/GitHubOther", "gho_0123456789abcdefghijklmnopqrstuvwxyz and ghs_0123456789abcdefghijklmnopqrstuvwxyz",
			R + " and " + R, 2},
		{"api_key/GitHubFineGrained", "(" + githubFine + ")", "(" + R + ")", 1},
		{"api_key/GitLab", gitlabPAT, R, 1},
		{"api_key/Slack", "slack: " + slackBot, "slack: " + R, 1},
		{"api_key/SlackUser", "xoxp-1234567890-abcdef", R, 1},
		{"api_key/Google", "maps key " + googleKey + " in prod", "maps key " + R + " in prod", 1},
		{"api_key/InQuotes", `{"key":"` + openAIKey + `"}`, `{"key":"` + R + `"}`, 1},

		// jwt
		{"jwt/Bare", "session " + jwt + " expired", "session " + R + " expired", 1},

		// bearer_token: the scheme stays readable.
		{"bearer_token/Header", "Authorization: Bearer abc.def-123_xyz", "Authorization: Bearer " + R, 1},
		{"bearer_token/Lowercase", "authorization: bearer abcdefgh12345678==", "authorization: Bearer " + R, 1},
		{"bearer_token/OpaqueEightChars", "Bearer a1b2c3d4", "Bearer " + R, 1},
		{"bearer_token/LongLettersOnly", "Bearer AbCdEfGhIjKlMnOpQrStUvWxYz", "Bearer " + R, 1},
		// A JWT after Bearer is one redaction, not two.
		{"bearer_token/JWT", "Authorization: Bearer " + jwt, "Authorization: Bearer " + R, 1},

		// pem_private_key: a whole block, across lines, is one redaction.
		{"pem_private_key/RSA", "key:\n" + pemRSA + "\nend", "key:\n" + R + "\nend", 1},
		{"pem_private_key/EC", pemEC, R, 1},
		{"pem_private_key/OpenSSHCRLF", "id_ed25519 = \r\n" + pemOpenSSH + "\r\n", "id_ed25519 = \r\n" + R + "\r\n", 1},
		{"pem_private_key/PKCS8", pemPKCS8, R, 1},
		{"pem_private_key/Encrypted", pemEncrypted, R, 1},
		{"pem_private_key/TwoBlocks", pemRSA + "\n\n" + pemEC, R + "\n\n" + R, 2},
		{"pem_private_key/NextToPublic", pemPublic + "\n" + pemEC, pemPublic + "\n" + R, 1},
		// A block cut short (no END line) still holds key material.
		{"pem_private_key/Unterminated", "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0Z3V\nk8sYlq1t3P4v",
			"key:\n" + R, 1},

		// secret_assignment: the key name stays readable.
		{"secret_assignment/Password", "password=hunter2", "password=" + R, 1},
		{"secret_assignment/QuotedWithSpaces", `PASSWORD="two words"`, "PASSWORD=" + R, 1},
		{"secret_assignment/SingleQuoted", `passwd='p@ss w0rd' next`, "passwd=" + R + " next", 1},
		// Environment-variable style: the secret word ends a longer name.
		{"secret_assignment/EnvVarPassword", "DB_PASSWORD=hunter2", "DB_PASSWORD=" + R, 1},
		{"secret_assignment/EnvVarAPIKey", "export STRIPE_API_KEY=rk_live_abc123", "export STRIPE_API_KEY=" + R, 1},
		{"secret_assignment/EnvVarQuoted", `POSTGRES_PASSWORD='p@ss w0rd'`, "POSTGRES_PASSWORD=" + R, 1},
		{"secret_assignment/APIKey", "api_key=abc123XYZ", "api_key=" + R, 1},
		{"secret_assignment/APIKeyDash", "API-KEY = abc123XYZ", "API-KEY=" + R, 1},
		{"secret_assignment/APIKeyJoined", "apikey=abc123", "apikey=" + R, 1},
		{"secret_assignment/Secret", "client_secret=s3cr3t&grant_type=x", "client_secret=" + R + "&grant_type=x", 1},
		{"secret_assignment/AccessToken", "?access_token=tok123;", "?access_token=" + R + ";", 1},
		{"secret_assignment/AuthToken", "AUTH_TOKEN=zzz", "AUTH_TOKEN=" + R, 1},
		{"secret_assignment/Passphrase", "passphrase=correct-horse", "passphrase=" + R, 1},
		{"secret_assignment/PrivateKey", "private_key=abcd", "private_key=" + R, 1},
		{"secret_assignment/Pwd", "pwd=x", "pwd=" + R, 1},
		{"secret_assignment/Token", "token=abc123", "token=" + R, 1},
		{"secret_assignment/RefreshToken", "refresh-token = 'r1'", "refresh-token=" + R, 1},
		{"secret_assignment/SecretKey", "SECRET_KEY=django-insecure-x", "SECRET_KEY=" + R, 1},
		{"secret_assignment/ClientSecret", "client-secret=abc", "client-secret=" + R, 1},
		{"secret_assignment/Several", "user=bob password=a, secret=b; note=c",
			"user=bob password=" + R + ", secret=" + R + "; note=c", 2},
		// A key after the assignment is taken with it: one redaction.
		{"secret_assignment/WithAPIKeyValue", "api_key=" + openAIKey, "api_key=" + R, 1},

		// credential_url
		{"credential_url/Postgres", "postgres://user:pw@host:5432/db", R, 1},
		{"credential_url/AMQP", "amqp://u:p@broker", R, 1},
		{"credential_url/InProse", "connect to mysql://root:toor@10.0.0.5:3306/app?tls=true now",
			"connect to " + R + " now", 1},
		{"credential_url/Quoted", `dsn: "mongodb+srv://admin:pa55@cluster0.example.net/db"`, `dsn: "` + R + `"`, 1},
		{"credential_url/Redis", "redis://:hunter2@cache:6379/0", "redis://:hunter2@cache:6379/0", 0}, // no user: see TestRedact_Leaves
		{"credential_url/HTTPS", "https://deploy:t0ken@example.com/repo.git", R, 1},

		// Several kinds at once.
		{"Mixed", "password=a " + awsKey + " Bearer abc123defgh postgres://u:p@h/db",
			"password=" + R + " " + R + " Bearer " + R + " " + R, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, n := admission.Redact(tt.in)
			if got != tt.want || n != tt.count {
				t.Fatalf("Redact(%q):\n got %q, %d\nwant %q, %d", tt.in, got, n, tt.want, tt.count)
			}
		})
	}
}

// TestRedact_Leaves lists ordinary text, and near misses of every
// pattern, that must come back byte for byte with a count of 0.
func TestRedact_Leaves(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"",
		"the token budget is 500",
		"password policy requires 12 chars",
		"rotate the password every 90 days; the secret is in the vault",
		"use Bearer auth",
		"Bearer",
		"the api key lives in KURA_TOKEN",
		"https://example.com/path",
		"https://example.com:8443/path?q=1",
		"http://[::1]:7700/v1/info",
		"user@example.com",
		"mailto:user@example.com",
		"git@github.com:org/repo.git",
		"ssh://git@github.com/org/repo.git",
		"redis://:hunter2@cache:6379/0", // a password with no user is not a credential URL here
		"sk-short",
		"task-1234567890abcdefghijklmnop", // "sk-" inside a word
		"AKIA1234",
		"ghp_short",
		"xoxb-short",
		"AIzaShort",
		"eyJhbGciOiJIUzI1NiJ9", // one JWT part alone
		"key = value",
		"password: hunter2", // documented scope is key=value
		"passwordless login",
		"password == expected",
		pemPublic,
		pemCert,
		"we use bearer authentication for the API",
		"Bearer tokens expire after an hour",
		"max_tokens=500",
		"token_budget = 500",
		"-----BEGIN PRIVATE KEY",
		"0193a4b2-7c3d-7e8f-9a0b-1c2d3e4f5a6b",
		"record:0193a4b2-7c3d-7e8f-9a0b-1c2d3e4f5a6b",
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"ed25519:" + strings.Repeat("ab", 32),
		"api/users.go: func handleTokenRefresh(w http.ResponseWriter)",
		"日本語のテキスト — ünïcode prose",
		admission.Placeholder,
	} {
		got, n := admission.Redact(s)
		if got != s || n != 0 {
			t.Errorf("Redact(%q): got %q, %d; want it untouched, 0", s, got, n)
		}
	}
}

// TestRedact_Idempotent: text that was redacted once has nothing left to
// redact: a second pass changes nothing and counts nothing.
func TestRedact_Idempotent(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"password=hunter2",
		`PASSWORD="two words"`,
		"api_key=" + openAIKey,
		"Authorization: Bearer abc.def-123_xyz",
		"postgres://user:pw@host:5432/db",
		pemRSA,
		openAIKey + " " + awsKey + " " + jwt,
		// Keys glued to each other: a fixed-length key leaves the next
		// one after a "]" where a word boundary now starts it.
		awsKey + awsKey,
		googleKey + openAIKey2,
		// A quoted assignment inside a URL's password slot: once the
		// quotes are gone the URL is a credential URL.
		`x://u:password="a b"@h`,
	} {
		once, n1 := admission.Redact(s)
		twice, n2 := admission.Redact(once)
		if n1 == 0 || twice != once || n2 != 0 {
			t.Errorf("Redact(%q) = %q, %d; again = %q, %d; want the same text and 0 the second time", s, once, n1, twice, n2)
		}
	}
}

// TestRedactorNames pins the documented pattern set: adding or removing a
// pattern must update this list, the docs and the tests above.
func TestRedactorNames(t *testing.T) {
	t.Parallel()
	want := []string{"pem_private_key", "credential_url", "bearer_token", "secret_assignment", "api_key", "jwt"}
	if got := admission.RedactorNames(); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// A fresh copy each call: callers cannot change the set.
	names := admission.RedactorNames()
	names[0] = "changed"
	if got := admission.RedactorNames(); got[0] != want[0] {
		t.Fatalf("RedactorNames shares its slice: got %q after a caller's write", got[0])
	}
	if admission.Placeholder != "[REDACTED]" {
		t.Fatalf("Placeholder: got %q, want [REDACTED]", admission.Placeholder)
	}
}
