package reliability_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
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
// restarted. Each must be reported
//
//   - with a witness configured: by kurad itself (/readyz, /v1/info) or by
//     a fresh `kura verify` that kept nothing;
//   - without a witness: by `kura verify` run by a client that kept the
//     checkpoint it verified before the attack.
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
	kuraOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kura-attacks")
		if err != nil {
			kuraErr = err
			return
		}
		kuraBin = filepath.Join(dir, "kura")
		out, err := exec.Command("go", "build", "-o", kuraBin, "github.com/kura-memory/kura/cmd/kura").CombinedOutput()
		if err != nil {
			kuraErr = fmt.Errorf("build kura: %v\n%s", err, out)
		}
	})
	if kuraErr != nil {
		t.Fatal(kuraErr)
	}
	return kuraBin
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
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
	waddr := freePort(t)
	e.witness = "http://" + waddr
	e.httpAddr = freePort(t)
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

// attacks are the eleven at-rest attacks, each an edit of the stopped data
// directory.
var attacks = []struct {
	name string
	do   func(e *attackEnv)
}{
	{"content tamper", func(e *attackEnv) {
		l := e.headLedger(e.sessions[0])
		e.edit(`UPDATE records SET content = '{"forged":true}' WHERE id = (SELECT record_id FROM ledger_records WHERE ledger_id = '` + l + `' AND pos = 1)`)
	}},
	{"metadata tamper", func(e *attackEnv) {
		l := e.headLedger(e.sessions[0])
		e.edit(`UPDATE records SET metadata = '{"project_id":"elsewhere"}' WHERE id = (SELECT record_id FROM ledger_records WHERE ledger_id = '` + l + `' AND pos = 1)`)
	}},
	{"tail truncation", func(e *attackEnv) {
		l := e.headLedger(e.sessions[0])
		e.edit(`DELETE FROM ledger_records WHERE ledger_id = '` + l + `' AND pos = (SELECT max(pos) FROM ledger_records WHERE ledger_id = '` + l + `')`)
	}},
	{"middle deletion", func(e *attackEnv) {
		l := e.headLedger(e.sessions[0])
		e.edit(`DELETE FROM ledger_records WHERE ledger_id = '`+l+`' AND pos = 1`,
			`UPDATE ledger_records SET pos = pos - 1 WHERE ledger_id = '`+l+`' AND pos > 1`)
	}},
	{"reorder", func(e *attackEnv) {
		l := e.headLedger(e.sessions[0])
		a := e.one(`SELECT record_id FROM ledger_records WHERE ledger_id = ? AND pos = 1`, l)
		b := e.one(`SELECT record_id FROM ledger_records WHERE ledger_id = ? AND pos = 2`, l)
		e.edit(`UPDATE ledger_records SET record_id = CASE pos WHEN 1 THEN '` + b + `' ELSE '` + a + `' END WHERE ledger_id = '` + l + `' AND pos IN (1, 2)`)
	}},
	{"forged insertion", func(e *attackEnv) {
		// A record of another ledger slipped into this one, at the end,
		// with the leaf column it would have.
		l := e.headLedger(e.sessions[0])
		other := e.headLedger(e.sessions[1])
		e.edit(`INSERT INTO ledger_records(ledger_id, pos, record_id, leaf)
			SELECT '` + l + `', (SELECT max(pos) + 1 FROM ledger_records WHERE ledger_id = '` + l + `'), record_id, leaf
			FROM ledger_records WHERE ledger_id = '` + other + `' AND pos = 1`)
	}},
	{"cross-context replay", func(e *attackEnv) {
		// Session 0's head pointed at session 1's genuinely signed ledger.
		e.edit(`UPDATE sessions SET head_ledger_id = '` + e.headLedger(e.sessions[1]) + `' WHERE id = '` + e.sessions[0] + `'`)
	}},
	{"rollback replay", func(e *attackEnv) {
		// The head put back to an older, genuinely signed head of its own.
		old := e.one(`SELECT to_ledger_id FROM session_reflog WHERE session_id = ? ORDER BY seq LIMIT 1`, e.sessions[0])
		e.edit(`UPDATE sessions SET head_ledger_id = '` + old + `' WHERE id = '` + e.sessions[0] + `'`)
	}},
	{"snapshot rollback", func(e *attackEnv) {
		// The whole data directory put back as it was after turn 2.
		for _, f := range []string{"kura.db", "kura.db-wal", "kura.db-shm"} {
			os.Remove(filepath.Join(e.dataDir, f))
		}
		kuradtest.CopyDataDir(e.t, e.old, e.dataDir)
	}},
	{"consistent truncation", func(e *attackEnv) {
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
	}},
	{"renamed origin", func(e *attackEnv) {
		// The old copy put back under another log origin: to a client it
		// is a log never seen before, unless it remembers which origin
		// kurad's key signed.
		for _, f := range []string{"kura.db", "kura.db-wal", "kura.db-shm"} {
			os.Remove(filepath.Join(e.dataDir, f))
		}
		kuradtest.CopyDataDir(e.t, e.old, e.dataDir)
		e.edit(`UPDATE meta SET value = 'kura/0123456789abcdef' WHERE key = 'log_origin'`)
	}},
}

// caughtByKurad says whether kurad itself reports a rolled-back or forked
// log.
func caughtByKurad(t *testing.T, base string) (bool, string) {
	code, body, err := call(context.Background(), "GET", base+"/readyz", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return code == 503 && (strings.Contains(string(body), "rollback_detected") || strings.Contains(string(body), "fork_detected")), string(body)
}

func TestAttacks_AtRest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kura and runs twenty kurads")
	}
	t.Parallel()
	kuraBinary(t)
	for _, a := range attacks {
		t.Run(strings.ReplaceAll(a.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			e := newAttackEnv(t)
			a.do(e)

			// With the witness: kurad itself, or a fresh client.
			p := e.start(true)
			byKurad, ready := caughtByKurad(t, p.Base)
			fresh := filepath.Join(e.root, "fresh-"+strconv.FormatInt(time.Now().UnixNano(), 36))
			verifyFailed := false
			var outs []string
			for _, sid := range e.sessions {
				code, out := e.kura(p.Base, fresh, "verify", "--local", "session:"+sid)
				outs = append(outs, out)
				verifyFailed = verifyFailed || code != 0
			}
			if !byKurad && !verifyFailed {
				t.Errorf("with a witness, nobody reported the attack: readyz %s\nverify:\n%s", ready, strings.Join(outs, "\n"))
			}
			t.Logf("with a witness: kurad reports it %v, a fresh kura verify fails %v", byKurad, verifyFailed)
			p.Stop(t)

			// Without the witness: the client that kept its checkpoint.
			p = e.start(false)
			keptFailed := false
			outs = outs[:0]
			for _, sid := range e.sessions {
				code, out := e.kura(p.Base, e.kept, "verify", "--local", "session:"+sid)
				outs = append(outs, out)
				keptFailed = keptFailed || code != 0
			}
			if !keptFailed {
				t.Errorf("without a witness, the client that kept a checkpoint did not report the attack:\n%s", strings.Join(outs, "\n"))
			}
			p.Stop(t)
		})
	}
}
