package reliability_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
)

// The at-rest attack suite (issue 20): eleven attacks on a stopped kurad's
// database file, made with SQLite as an attacker with the data directory
// (but not the signing key, kept outside it) would make them, then kurad
// restarted. Each attack must be reported, for the reason it names (the
// problem kura verify prints, the log's state /readyz reports):
//
//   - with a witness configured: by kurad itself when the log is what was
//     attacked (/readyz), and by a fresh `kura verify` that kept nothing;
//   - without a witness: by `kura verify` run by a client that kept the
//     checkpoint it verified before the attack.
//
// A control changes nothing and must verify in both modes, so that an
// attack is not "caught" by a verification that fails anyway.
//
// The real binaries run: kurad, kura verify, kura witness.

var (
	kuraOnce sync.Once
	kuraBin  string
	kuraErr  error
)

// kuraBinary builds cmd/kura once for the attack tests.
func kuraBinary(t *testing.T) string {
	t.Helper()
	kuraOnce.Do(func() { kuraBin, kuraErr = kuradtest.Build("github.com/kura-memory/kura/cmd/kura") })
	if kuraErr != nil {
		t.Fatal(kuraErr)
	}
	return kuraBin
}

// attackEnv is one kurad's history, its witness and a client's kept state.
type attackEnv struct {
	t        *testing.T
	root     string
	dataDir  string
	key      string
	witness  string // base URL
	httpAddr string // kurad's, the same across restarts: the witness follows one URL
	wproc    *exec.Cmd
	kept     string // KURA_STATE_DIR of the client that verified before
	sessions []string
	cut      int64 // log size after the second turn of session 0
	full     int64 // log size the client verified before the attack
	origin   string
	old      string
}

// kuradEnv is kurad's environment: the key outside the data directory.
func (e *attackEnv) kuradEnv(withWitness bool) []string {
	env := []string{"KURA_KEY_FILE=" + e.key, "KURA_WITNESS_POLL=1h"}
	if withWitness {
		env = append(env, "KURA_WITNESSES="+e.witness)
	}
	return env
}

func (e *attackEnv) start(withWitness bool) *proc {
	return startEnv(e.t, e.dataDir, e.kuradEnv(withWitness), e.httpAddr)
}

// startEnv starts kurad and waits until it answers /healthz: a kurad that
// caught a rollback is up but, on purpose, not ready.
func startEnv(t *testing.T, dataDir string, env []string, addr string) *proc {
	t.Helper()
	p := kuradtest.Launch(t, kuradBin, dataDir, env, "--http-addr", addr)
	p.Base = "http://" + addr
	testwait.For(t, 30*time.Second, "kurad answers /healthz", func() bool {
		code, _, err := call(context.Background(), "GET", p.Base+"/healthz", nil, nil)
		return err == nil && code == 200
	})
	return p
}

// kura runs the CLI against base with stateDir as KURA_STATE_DIR.
func (e *attackEnv) kura(base, stateDir string, args ...string) (int, string) {
	e.t.Helper()
	cmd := exec.Command(kuraBinary(e.t), args...)
	cmd.Env = append(os.Environ(), "KURA_URL="+base, "KURA_STATE_DIR="+stateDir, "KURA_TOKEN=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		e.t.Fatalf("kura %v: %v", args, err)
	}
	return 0, string(out)
}

// newAttackEnv writes two sessions of three turns through a kurad followed
// by a witness, keeps a copy of the data directory from after the second
// turn, and has a client verify every session (keeping the checkpoint).
func newAttackEnv(t *testing.T) *attackEnv {
	t.Helper()
	root := t.TempDir()
	e := &attackEnv{t: t, root: root, dataDir: filepath.Join(root, "data"), key: filepath.Join(root, "kurad.key"),
		kept: filepath.Join(root, "client-state"), old: filepath.Join(root, "old-copy")}
	os.MkdirAll(e.dataDir, 0o700)
	waddr := kuradtest.FreeAddr(t)
	e.witness = "http://" + waddr
	e.httpAddr = kuradtest.FreeAddr(t)
	p := e.start(true)
	e.wproc = exec.Command(kuraBinary(t), "witness", "--state", filepath.Join(root, "witness"), "--listen", waddr,
		"--log", p.Base, "--poll", "50ms")
	wlog := &kuradtest.SyncBuffer{}
	e.wproc.Stdout, e.wproc.Stderr = wlog, wlog
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("witness log:\n%s", wlog.String())
		}
	})
	if err := e.wproc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.wproc.Process.Signal(os.Interrupt); e.wproc.Wait() })
	for s := 0; s < 2; s++ {
		var sess struct{ ID string }
		mustCall(t, "POST", p.Base+"/v1/sessions", fmt.Sprintf(`{"project":"attack","name":"s%d"}`, s), 201, &sess)
		e.sessions = append(e.sessions, sess.ID)
	}
	turn := func(sid string, n int) {
		var tr struct{ ID string }
		mustCall(t, "POST", p.Base+"/v1/sessions/"+sid+"/turns", fmt.Sprintf(`{"instruction":{"type":"task.instruction","content":"turn %d","author_id":"user:attack"}}`, n), 201, &tr)
		var recs []string
		for i := 0; i < 4; i++ {
			recs = append(recs, fmt.Sprintf(`{"type":"agent.thought","content":{"s":%q,"turn":%d,"i":%d},"author_id":"agent:attack"}`, sid, n, i))
		}
		mustCall(t, "POST", p.Base+"/v1/turns/"+tr.ID+"/records", `{"records":[`+strings.Join(recs, ",")+`]}`, 200, nil)
		mustCall(t, "POST", p.Base+"/v1/turns/"+tr.ID+"/close", `{"status":"complete"}`, 200, nil)
	}
	for n := 1; n <= 2; n++ {
		for _, sid := range e.sessions {
			turn(sid, n)
		}
	}
	e.waitWitness(p.Base)
	e.cut = e.logSize(p.Base)
	p.Stop(t)
	kuradtest.CopyDataDir(t, e.dataDir, e.old)
	p = e.start(true)
	for _, sid := range e.sessions {
		turn(sid, 3)
	}
	e.waitWitness(p.Base)
	for _, sid := range e.sessions {
		if code, out := e.kura(p.Base, e.kept, "verify", "--local", "session:"+sid); code != 0 {
			t.Fatalf("verify before the attack: %d\n%s", code, out)
		}
	}
	e.full = e.logSize(p.Base)
	var info struct {
		Origin string `json:"log_origin"`
	}
	mustCall(t, "GET", p.Base+"/v1/info", nil, 200, &info)
	e.origin = info.Origin
	p.Stop(t)
	return e
}

func (e *attackEnv) logSize(base string) int64 {
	var info struct {
		Log struct {
			Size int64 `json:"size"`
		} `json:"log"`
	}
	mustCall(e.t, "GET", base+"/v1/info", nil, 200, &info)
	return info.Log.Size
}

// waitWitness waits until the witness cosigned kurad's current tree.
func (e *attackEnv) waitWitness(base string) {
	e.t.Helper()
	want := e.logSize(base)
	var info struct {
		Origin string `json:"log_origin"`
	}
	mustCall(e.t, "GET", base+"/v1/info", nil, 200, &info)
	testwait.For(e.t, 20*time.Second, "the witness cosigns the tree of "+strconv.FormatInt(want, 10), func() bool {
		code, body, err := call(context.Background(), "GET", e.witness+"/v1/witness/checkpoint?origin="+info.Origin, nil, nil)
		if err != nil || code != 200 {
			return false
		}
		lines := strings.Split(string(body), "\n")
		return len(lines) > 1 && lines[1] == strconv.FormatInt(want, 10)
	})
}

// edit runs SQL on the stopped kurad's database, as an attacker would.
func (e *attackEnv) edit(stmts ...string) {
	e.t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(e.dataDir, "kura.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		res, err := db.Exec(s)
		if err != nil {
			e.t.Fatalf("attack %q: %v", s, err)
		}
		if n, _ := res.RowsAffected(); n == 0 && !strings.HasPrefix(s, "PRAGMA") {
			e.t.Fatalf("attack %q changed nothing", s)
		}
	}
}

func (e *attackEnv) one(q string, args ...any) string {
	e.t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(e.dataDir, "kura.db")+"?mode=ro")
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRow(q, args...).Scan(&v); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	return v
}

// headLedger is a session's current head ledger id.
func (e *attackEnv) headLedger(sid string) string {
	return e.one("SELECT head_ledger_id FROM sessions WHERE id = ?", sid)
}

// caught is what an attack must be reported as, in each mode.
type caught struct {
	// kurad is the log state /readyz reports with the witness: ok when
	// kurad alone cannot tell (the client's verification does).
	kurad string
	// fresh must all appear in what a fresh kura verify (no kept state)
	// prints of the two sessions, with the witness; kept in what the
	// client that kept a checkpoint prints, without it. Empty for the
	// control: then every verification must pass.
	fresh, kept []string
}

// same is a caught whose two verifications report the same reasons.
func same(kurad string, reasons ...string) caught {
	return caught{kurad: kurad, fresh: reasons, kept: reasons}
}

// rolledBack is what an older tree under the log's origin is caught as:
// kurad holds it against the witness's larger tree; the client that kept
// the checkpoint of the whole tree finds a smaller one.
func (e *attackEnv) rolledBack() caught {
	return caught{kurad: "rollback_detected",
		fresh: []string{"FAILED log " + e.origin + ": kurad reports rollback_detected"},
		kept:  []string{fmt.Sprintf("FAILED log %s: log %s: the tree has size %d, smaller than the %d verified before", e.origin, e.origin, e.cut, e.full)}}
}

// putBackOldCopy replaces the data directory with the copy taken after
// turn 2.
func (e *attackEnv) putBackOldCopy() {
	for _, f := range []string{"kura.db", "kura.db-wal", "kura.db-shm"} {
		os.Remove(filepath.Join(e.dataDir, f))
	}
	kuradtest.CopyDataDir(e.t, e.old, e.dataDir)
}

// attacks are the eleven at-rest attacks, each an edit of the stopped data
// directory that says how it must be caught, and a control that edits
// nothing and must verify in both modes.
var attacks = []struct {
	name string
	do   func(e *attackEnv) caught
}{
	{"no attack", func(e *attackEnv) caught { return caught{kurad: "ok"} }},
	{"content tamper", func(e *attackEnv) caught {
		l := e.headLedger(e.sessions[0])
		r := e.one(`SELECT record_id FROM ledger_records WHERE ledger_id = ? AND pos = 1`, l)
		e.edit(`UPDATE records SET content = '{"forged":true}' WHERE id = '` + r + `'`)
		return same("ok", "problem: ledger "+l+" content_hash: record "+r)
	}},
	{"metadata tamper", func(e *attackEnv) caught {
		l := e.headLedger(e.sessions[0])
		r := e.one(`SELECT record_id FROM ledger_records WHERE ledger_id = ? AND pos = 1`, l)
		e.edit(`UPDATE records SET metadata = '{"project_id":"elsewhere"}' WHERE id = '` + r + `'`)
		return same("ok", "problem: ledger "+l+" seal: record "+r)
	}},
	{"tail truncation", func(e *attackEnv) caught {
		l := e.headLedger(e.sessions[0])
		e.edit(`DELETE FROM ledger_records WHERE ledger_id = '` + l + `' AND pos = (SELECT max(pos) FROM ledger_records WHERE ledger_id = '` + l + `')`)
		return same("ok", "problem: ledger "+l+" record_count: stored 5, computed 4")
	}},
	{"middle deletion", func(e *attackEnv) caught {
		l := e.headLedger(e.sessions[0])
		e.edit(`DELETE FROM ledger_records WHERE ledger_id = '`+l+`' AND pos = 1`,
			`UPDATE ledger_records SET pos = pos - 1 WHERE ledger_id = '`+l+`' AND pos > 1`)
		return same("ok", "problem: ledger "+l+" record_count: stored 5, computed 4")
	}},
	{"reorder", func(e *attackEnv) caught {
		l := e.headLedger(e.sessions[0])
		a := e.one(`SELECT record_id FROM ledger_records WHERE ledger_id = ? AND pos = 1`, l)
		b := e.one(`SELECT record_id FROM ledger_records WHERE ledger_id = ? AND pos = 2`, l)
		e.edit(`UPDATE ledger_records SET record_id = CASE pos WHEN 1 THEN '` + b + `' ELSE '` + a + `' END WHERE ledger_id = '` + l + `' AND pos IN (1, 2)`)
		return same("ok", "problem: ledger "+l+" root_hash: stored ")
	}},
	{"forged insertion", func(e *attackEnv) caught {
		// A record of another ledger slipped into this one, at the end,
		// with the leaf column it would have.
		l := e.headLedger(e.sessions[0])
		other := e.headLedger(e.sessions[1])
		e.edit(`INSERT INTO ledger_records(ledger_id, pos, record_id, leaf)
			SELECT '` + l + `', (SELECT max(pos) + 1 FROM ledger_records WHERE ledger_id = '` + l + `'), record_id, leaf
			FROM ledger_records WHERE ledger_id = '` + other + `' AND pos = 1`)
		return same("ok", "problem: ledger "+l+" record_ids: stored 6 ids, computed 5 records")
	}},
	{"cross-context replay", func(e *attackEnv) caught {
		// Session 0's head pointed at session 1's genuinely signed ledger.
		l, other := e.headLedger(e.sessions[0]), e.headLedger(e.sessions[1])
		e.edit(`UPDATE sessions SET head_ledger_id = '` + other + `' WHERE id = '` + e.sessions[0] + `'`)
		return same("ok", "reflog: the last head move (6) is to ledger "+l+", hash ", "the session's head is "+other+", hash ")
	}},
	{"rollback replay", func(e *attackEnv) caught {
		// The head put back to an older, genuinely signed head of its own.
		l := e.headLedger(e.sessions[0])
		old := e.one(`SELECT to_ledger_id FROM session_reflog WHERE session_id = ? ORDER BY seq LIMIT 1`, e.sessions[0])
		e.edit(`UPDATE sessions SET head_ledger_id = '` + old + `' WHERE id = '` + e.sessions[0] + `'`)
		return same("ok", "reflog: the last head move (6) is to ledger "+l+", hash ", "the session's head is "+old+", hash ")
	}},
	{"snapshot rollback", func(e *attackEnv) caught {
		// The whole data directory put back as it was after turn 2.
		e.putBackOldCopy()
		return e.rolledBack()
	}},
	{"consistent truncation", func(e *attackEnv) caught {
		// The third turns cut off every table that names them, the log
		// cut back to the tree before them: what is left is a consistent,
		// genuinely signed, shorter history.
		cut := strconv.FormatInt(e.cut, 10)
		stmts := []string{}
		for _, sid := range e.sessions {
			stmts = append(stmts,
				`DELETE FROM session_reflog WHERE session_id = '`+sid+`' AND seq = (SELECT max(seq) FROM session_reflog WHERE session_id = '`+sid+`')`,
				`UPDATE sessions SET head_ledger_id = (SELECT to_ledger_id FROM session_reflog WHERE session_id = '`+sid+`' ORDER BY seq DESC LIMIT 1), turn_count = turn_count - 1 WHERE id = '`+sid+`'`,
				`DELETE FROM turn_output WHERE turn_id = (SELECT id FROM turns WHERE session_id = '`+sid+`' AND number = 3)`,
				`DELETE FROM turns WHERE session_id = '`+sid+`' AND number = 3`)
		}
		stmts = append(stmts,
			`DELETE FROM events WHERE seq > `+cut,
			`DELETE FROM log_hashes WHERE leaf >= `+cut)
		e.edit(stmts...)
		return e.rolledBack()
	}},
	{"renamed origin", func(e *attackEnv) caught {
		// The old copy put back under another log origin: to a client it
		// is a log never seen before, unless it remembers which origin
		// kurad's key signed; kurad's witness holds a checkpoint of the
		// real origin signed by kurad's key, which this database does
		// not know.
		e.putBackOldCopy()
		const renamed = "kura/0123456789abcdef"
		e.edit(`UPDATE meta SET value = '` + renamed + `' WHERE key = 'log_origin'`)
		return caught{kurad: "rollback_detected",
			fresh: []string{"FAILED log " + renamed + ": kurad reports rollback_detected"},
			kept: []string{"FAILED log " + renamed + ": log " + renamed + ": signed by the key that last verified log " + e.origin + " here",
				"--accept-origin " + renamed}}
	}},
}

// logState is what /readyz says of the log (its checks.log), and the
// whole answer.
func logState(t *testing.T, base string) (string, string) {
	code, body, err := call(context.Background(), "GET", base+"/readyz", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ready struct {
		Checks map[string]string `json:"checks"`
		Error  struct {
			Details struct {
				Checks map[string]string `json:"checks"`
			} `json:"details"`
		} `json:"error"`
	}
	json.Unmarshal(body, &ready)
	st := ready.Checks["log"]
	if code != 200 {
		st = ready.Error.Details.Checks["log"]
	}
	return st, fmt.Sprintf("%d %s", code, body)
}

// verifyAll runs kura verify on every session with stateDir as its kept
// state; it returns whether every one passed, and all they printed.
func (e *attackEnv) verifyAll(base, stateDir string) (bool, string) {
	ok := true
	var outs []string
	for _, sid := range e.sessions {
		code, out := e.kura(base, stateDir, "verify", "--local", "session:"+sid)
		outs = append(outs, out)
		ok = ok && code == 0
	}
	return ok, strings.Join(outs, "\n")
}

// checkCaught fails unless the verifications failed printing every reason
// of want, or, for the control (no reason), all passed saying okLine.
func checkCaught(t *testing.T, mode string, passed bool, out string, want []string, okLine string) {
	t.Helper()
	if len(want) == 0 {
		if !passed || !strings.Contains(out, okLine) {
			t.Errorf("%s: nothing was attacked, yet kura verify did not pass saying %q:\n%s", mode, okLine, out)
		}
		return
	}
	if passed {
		t.Errorf("%s: kura verify passed, want it to fail:\n%s", mode, out)
	}
	for _, r := range want {
		if !strings.Contains(out, r) {
			t.Errorf("%s: kura verify does not say %q:\n%s", mode, r, out)
		}
	}
}

func TestAttacks_AtRest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kura and runs thirty-six kurads")
	}
	t.Parallel()
	kuraBinary(t)
	for _, a := range attacks {
		t.Run(strings.ReplaceAll(a.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			e := newAttackEnv(t)
			want := a.do(e)

			// With the witness: kurad itself, and a fresh client.
			p := e.start(true)
			if st, ready := logState(t, p.Base); st != want.kurad {
				t.Errorf("with a witness: /readyz says the log is %q, want %q: %s", st, want.kurad, ready)
			}
			fresh := filepath.Join(e.root, "fresh-"+strconv.FormatInt(time.Now().UnixNano(), 36))
			passed, out := e.verifyAll(p.Base, fresh)
			checkCaught(t, "with a witness, a fresh client", passed, out, want.fresh, "pinned on first use")
			p.Stop(t)

			// Without the witness kurad cannot tell: the client that kept
			// its checkpoint.
			p = e.start(false)
			if st, ready := logState(t, p.Base); st != "ok" {
				t.Errorf("without a witness: /readyz says the log is %q, want ok: %s", st, ready)
			}
			passed, out = e.verifyAll(p.Base, e.kept)
			checkCaught(t, "without a witness, the client that kept a checkpoint", passed, out, want.kept,
				fmt.Sprintf("is consistent with the one of size %d kept in %s", e.full, e.kept))
			p.Stop(t)
		})
	}
}
