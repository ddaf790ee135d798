package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// Leases and deadlines are read from the store's clock: moving it past them
// has the effect waiting would have, without the wait.
func TestTurn_LeaseAndDeadlineFollowTheClock(t *testing.T) {
	t.Parallel()
	db, clk := mustOpenClocked(t)
	ctx := context.Background()
	s, err := db.CreateSession(ctx, &kura.SessionInput{Project: "hashi", Name: "clock"})
	if err != nil {
		t.Fatal(err)
	}
	instr := kura.RecordInput{Type: "task.instruction", AuthorID: "user:oles", Content: json.RawMessage(`"take an hour"`)}
	turn, err := db.OpenTurn(ctx, s.ID, &kura.TurnOpenInput{Instruction: &instr, DeadlineSeconds: 3600}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	claim := func(worker string) (*kura.Lease, error) {
		return db.ClaimTurn(ctx, turn.ID, &kura.TurnClaim{Worker: worker, LeaseSeconds: 60})
	}
	a, err := claim("agent:a")
	if err != nil || a.Epoch != 1 {
		t.Fatalf("first claim: got %+v, %v; want epoch 1", a, err)
	}

	t.Run("LeaseHoldsUntilItsEnd", func(t *testing.T) {
		clk.advance(59 * time.Second)
		if _, err := claim("agent:b"); !kura.IsCode(err, kura.EConflict) {
			t.Fatalf("claim 59 s into a 60 s lease: got %v, want %s", err, kura.EConflict)
		}
	})
	t.Run("ExpiredLeaseIsTakenOver", func(t *testing.T) {
		clk.advance(2 * time.Second)
		b, err := claim("agent:b")
		if err != nil || b.Epoch != 2 || b.Worker != "agent:b" {
			t.Fatalf("claim after the lease ran out: got %+v, %v; want agent:b at epoch 2", b, err)
		}
		_, err = db.RenewTurn(ctx, turn.ID, &kura.TurnRenew{Epoch: a.Epoch, LeaseSeconds: 60, Writer: kura.Writer{Identity: "agent:a"}})
		if !kura.IsCode(err, kura.EDenied) {
			t.Fatalf("renew by the worker whose lease ran out: got %v, want %s (the turn is agent:b's now)", err, kura.EDenied)
		}
	})
	t.Run("DeadlineClosesAsTimeout", func(t *testing.T) {
		if n, err := db.CloseExpiredTurns(ctx); err != nil || n != 0 {
			t.Fatalf("before the deadline: closed %d, %v; want 0", n, err)
		}
		clk.advance(time.Hour)
		if n, err := db.CloseExpiredTurns(ctx); err != nil || n != 1 {
			t.Fatalf("after the deadline: closed %d, %v; want 1", n, err)
		}
		got, err := db.GetTurn(ctx, turn.ID)
		if err != nil || got.State != kura.TurnTimeout {
			t.Fatalf("got %+v, %v; want state %s", got, err, kura.TurnTimeout)
		}
	})
}
