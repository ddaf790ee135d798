package api_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// TestAuth_DeduplicationRevealsNothingAcrossProjects: records deduplicate
// by type, content and author, so a write under another author of content
// guessed right would answer 200 with the existing record's id, confirming
// a record the caller cannot read (or, in a turn, pulling it into the
// caller's project). A token limited to projects may write records only
// under its own identity, whatever its role: every write under another
// author is refused the same way, whether such a record exists or not,
// and changes nothing. Under its own identity it deduplicates onto its own
// records, which it reads; an unlimited admin writes under any author as
// before.
func TestAuth_DeduplicationRevealsNothingAcrossProjects(t *testing.T) {
	t.Parallel()
	const (
		root   = tRoot // authEnv.state reads with it
		adminA = "tok-dedup-admin-alpha"
		writeA = "tok-dedup-writer-alpha"
		writeB = "tok-dedup-writer-beta"
	)
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	lines := auth.HashToken(root) + " user:root admin * *\n" +
		auth.HashToken(adminA) + " user:ada admin alpha alpha\n" +
		auth.HashToken(writeA) + " agent:a writer alpha alpha\n" +
		auth.HashToken(writeB) + " agent:b writer beta beta\n"
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) {
		c.TokensFile = file
		c.RateLimit = 0
	}})
	e := &authEnv{t: t, base: d.BaseURL(), dir: dir, d: d}

	// Project beta's record, which alpha's tokens cannot read.
	secret := `{"type":"task.instruction","content":"beta's plan","author_id":"agent:b","metadata":{"project_id":"beta"}}`
	id := e.must(writeB, "POST", "/v1/records", secret)["id"].(string)
	if code, _ := e.do(adminA, "GET", "/v1/records/"+id, ""); code != 404 {
		t.Fatalf("alpha's admin reads beta's record: %d, want 404", code)
	}
	sidA := e.must(root, "POST", "/v1/sessions", `{"project":"alpha","name":"a"}`)["id"].(string)
	tidA := e.must(writeA, "POST", "/v1/sessions/"+sidA+"/turns", `{"instruction":{"content":"go","author_id":"agent:a"}}`)["id"].(string)

	guesses := map[string]string{"right": "beta's plan", "wrong": "beta's other plan"}
	answers := map[string][]byte{}
	for name, content := range guesses {
		rec := `{"type":"task.instruction","content":"` + content + `","author_id":"agent:b"}`
		for _, w := range []struct{ method, path, body string }{
			{"POST", "/v1/records", rec},
			{"POST", "/v1/records/batch", `{"records":[` + rec + `]}`},
			{"POST", "/v1/turns/" + tidA + "/records", `{"records":[` + rec + `]}`},
			{"POST", "/v1/sessions/" + sidA + "/turns", `{"instruction":` + rec + `}`},
		} {
			before := e.state()
			code, body := e.do(adminA, w.method, w.path, w.body)
			if code != 403 || !bytes.Contains(body, []byte(`"permission_denied"`)) {
				t.Errorf("%s guess, %s %s as alpha's admin under agent:b: %d %s, want 403", name, w.method, w.path, code, body)
			}
			if after := e.state(); after != before {
				t.Errorf("%s guess, %s %s was refused but changed the database: %s -> %s", name, w.method, w.path, before, after)
			}
			answers[w.path] = append(answers[w.path], append(body, '|')...)
		}
	}
	// A refusal reads the same whether the guess was right or not.
	for path, both := range answers {
		halves := bytes.Split(bytes.TrimSuffix(both, []byte("|")), []byte("|"))
		if len(halves) != 2 || !bytes.Equal(halves[0], halves[1]) {
			t.Errorf("%s: the answers to a right and a wrong guess differ: %s", path, both)
		}
	}

	// Under its own identity, alpha's admin and writer deduplicate onto
	// records they wrote and read them.
	for _, w := range []struct{ tok, author string }{{adminA, "user:ada"}, {writeA, "agent:a"}} {
		rec := `{"type":"agent.thought","content":"mine","author_id":"` + w.author + `"}`
		first := e.must(w.tok, "POST", "/v1/records", rec)
		again := e.must(w.tok, "POST", "/v1/records", rec)
		if again["id"] != first["id"] || again["deduplicated"] != true {
			t.Errorf("%s writing its record twice: %v then %v, want the same record deduplicated", w.author, first, again)
		}
		if code, body := e.do(w.tok, "GET", "/v1/records/"+first["id"].(string), ""); code != 200 {
			t.Errorf("%s reading its deduplicated record: %d %s", w.author, code, body)
		}
	}
	// An admin of every project writes under any author, as before.
	if got := e.must(root, "POST", "/v1/records", secret); got["id"] != id || got["deduplicated"] != true {
		t.Errorf("root writing beta's record: %v, want it deduplicated onto %s", got, id)
	}
}
