package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// integrityState is the full integrity check of a SQLite database: before
// serving (StartupCheckFull), or, by default, in the background after a
// quick check, with writes refused until it passes. quick_check sees every
// page and b-tree but not whether an index holds every row of its table;
// a UNIQUE index missing a row lets a write insert a second row with the
// same key (two records of one hash), so kurad writes only on a database
// whose indexes it has checked too.
type integrityState struct {
	info atomic.Pointer[kura.IntegrityCheckInfo]
	// gate is what writes fail with while the check runs or after it
	// failed; nil once it passed (or with the check off).
	gate atomic.Pointer[kura.Error]
	done chan struct{} // closed when the check in the background has ended
	wg   sync.WaitGroup
}

// integrityWait is how long a write waits for the full check in the
// background before it is refused: on a small database the check ends
// well within it, so clients of a kurad that just started see no 503.
const integrityWait = 2 * time.Second

// IntegrityCheck is the state of the database's check at start, for
// /v1/info; nil on PostgreSQL.
func (db *DB) IntegrityCheck() *kura.IntegrityCheckInfo {
	return db.integ.info.Load()
}

// IntegrityHealth is "" unless the full check is running or failed; then
// it says so, for /readyz. A failure also fails Ping.
func (db *DB) IntegrityHealth() string {
	i := db.integ.info.Load()
	if i == nil {
		return ""
	}
	switch i.State {
	case kura.IntegrityRunning:
		return "full integrity check running since " + i.StartedAt + "; writes wait for it"
	case kura.IntegrityFailed:
		return msgDamaged
	}
	return ""
}

// msgDamaged answers writes and /readyz once the full check failed; what is
// damaged is in kurad's log only.
const msgDamaged = "the database failed its full integrity check (kurad's log says what is damaged); kurad is stopping"

// integrityGate is the error writes fail with until the full check passed.
// While the check runs, a write waits for it up to integrityWait (or its
// ctx) first.
func (db *DB) integrityGate(ctx context.Context) error {
	e := db.integ.gate.Load()
	if e == nil {
		return nil
	}
	if done := db.integ.done; done != nil {
		t := time.NewTimer(integrityWait)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
		case <-ctx.Done():
		}
	}
	if e := db.integ.gate.Load(); e != nil {
		return e
	}
	return nil
}

// integrityDamaged is the error Ping fails with once the full check found
// the database damaged.
func (db *DB) integrityDamaged() error {
	if i := db.integ.info.Load(); i != nil && i.State == kura.IntegrityFailed {
		return &kura.Error{Code: kura.EUnavailable, Message: msgDamaged}
	}
	return nil
}

// checkAtStart runs the configured check before the store serves, on the
// writer's connection before anything else uses it (a connection of its
// own would parse the whole schema once more at every start), with a small
// cache (withSmallCache). With StartupCheckQuick it also holds writes for
// the full check startFullCheck runs once the store serves.
func (db *DB) checkAtStart(ctx context.Context) error {
	mode := db.cfg.StartupCheck
	if mode == "" {
		mode = StartupCheckQuick
	}
	started := db.now()
	switch mode {
	case StartupCheckOff:
		db.integ.info.Store(&kura.IntegrityCheckInfo{Mode: mode, State: kura.IntegrityOff})
		return nil
	case StartupCheckQuick, StartupCheckFull:
	default:
		return fmt.Errorf("open store: startup check must be quick, full or off, not %q", mode)
	}
	if err := db.withSmallCache(ctx, func() error { return startupCheck(ctx, db.wdb, mode, "open store") }); err != nil {
		return err
	}
	if mode == StartupCheckFull {
		db.integ.info.Store(&kura.IntegrityCheckInfo{Mode: mode, State: kura.IntegrityPassed,
			StartedAt: kura.FormatTime(started), FinishedAt: kura.FormatTime(db.now())})
		return nil
	}
	at := kura.FormatTime(db.now())
	db.integ.done = make(chan struct{})
	db.integ.info.Store(&kura.IntegrityCheckInfo{Mode: mode, State: kura.IntegrityRunning, StartedAt: at})
	db.integ.gate.Store(kura.Errorf(kura.EUnavailable,
		"writes wait for the database's full integrity check, running since %s; reads are served (docs/durability.md)", at).
		WithDetail("integrity_check", kura.IntegrityRunning))
	return nil
}

// startFullCheck runs the full check in the background once the store
// serves, when checkAtStart left it to run there.
func (db *DB) startFullCheck() {
	if i := db.integ.info.Load(); i == nil || i.State != kura.IntegrityRunning {
		return
	}
	db.integ.wg.Add(1)
	go db.fullCheck(db.bg)
}

// fullCheck runs PRAGMA integrity_check on a read-only connection of its
// own (the writer stays free for the store's bookkeeping, and the pages it
// reads leave with the connection), then lifts the write gate, or, on
// damage, keeps writes refused, fails Ping and tells Config.OnDamaged. A
// Close meanwhile interrupts it; that is no verdict.
func (db *DB) fullCheck(ctx context.Context) {
	defer db.integ.wg.Done()
	defer close(db.integ.done)
	if h := db.cfg.Hooks.FullCheck; h != nil {
		h(ctx)
	}
	t0 := time.Now()
	c, err := sql.Open("sqlite", "file:"+db.cfg.Path+"?mode=ro&_pragma=busy_timeout(10000)&_pragma=cache_size(-"+fmt.Sprint(checkCacheKiB)+")")
	if err == nil {
		c.SetMaxOpenConns(1)
		err = startupCheck(ctx, c, StartupCheckFull, "integrity check")
		c.Close()
	}
	if ctx.Err() != nil {
		return
	}
	prev := db.integ.info.Load()
	done := &kura.IntegrityCheckInfo{Mode: prev.Mode, State: kura.IntegrityPassed, StartedAt: prev.StartedAt, FinishedAt: kura.FormatTime(db.now())}
	if err != nil {
		done.State = kura.IntegrityFailed
		db.integ.gate.Store(&kura.Error{Code: kura.EUnavailable, Message: msgDamaged})
		db.integ.info.Store(done)
		db.log.Error("the full integrity check failed; kurad stops serving this database", "err", err, "took", time.Since(t0).Round(time.Millisecond))
		if db.cfg.OnDamaged != nil {
			db.cfg.OnDamaged(err)
		}
		return
	}
	db.integ.info.Store(done)
	db.integ.gate.Store(nil)
	db.log.Info("the full integrity check passed; writes are served", "took", time.Since(t0).Round(time.Millisecond))
}
