package kura_test

import (
	"errors"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// invalidField is the field of an invalid error, "" for nil, and fails
// the test for any other error.
func invalidField(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var ke *kura.Error
	if !errors.As(err, &ke) || ke.Code != kura.EInvalid {
		t.Fatalf("got %v, want an invalid error", err)
	}
	f, _ := ke.Details["field"].(string)
	return f
}

func TestTurnOpenInput_Validate(t *testing.T) {
	instr := func(typ string) *kura.RecordInput { return &kura.RecordInput{Type: typ} }
	tests := []struct {
		name      string
		in        kura.TurnOpenInput
		wantField string
		wantType  string
	}{
		{"Good", kura.TurnOpenInput{Instruction: instr("task.instruction"), Dispatch: "worker-1", DeadlineSeconds: 60}, "", "task.instruction"},
		{"TypeDefaulted", kura.TurnOpenInput{Instruction: instr("")}, "", "task.instruction"},
		{"NoInstruction", kura.TurnOpenInput{}, "instruction", ""},
		{"WrongType", kura.TurnOpenInput{Instruction: instr("note")}, "instruction.type", "note"},
		{"BadDispatch", kura.TurnOpenInput{Instruction: instr(""), Dispatch: "Not A Slug"}, "dispatch", "task.instruction"},
		{"NegativeDeadline", kura.TurnOpenInput{Instruction: instr(""), DeadlineSeconds: -1}, "deadline_seconds", "task.instruction"},
		{"MaxDeadline", kura.TurnOpenInput{Instruction: instr(""), DeadlineSeconds: kura.MaxDeadlineSeconds}, "", "task.instruction"},
		{"DeadlineTooLong", kura.TurnOpenInput{Instruction: instr(""), DeadlineSeconds: kura.MaxDeadlineSeconds + 1}, "deadline_seconds", "task.instruction"},
		{"MaxContext", kura.TurnOpenInput{Instruction: instr(""), Context: make([]kura.RecordRef, kura.MaxTurnRecords)}, "", "task.instruction"},
		{"ContextTooLong", kura.TurnOpenInput{Instruction: instr(""), Context: make([]kura.RecordRef, kura.MaxTurnRecords+1)}, "context", "task.instruction"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := invalidField(t, tt.in.Validate()); got != tt.wantField {
				t.Errorf("got field %q, want %q", got, tt.wantField)
			}
			if tt.in.Instruction != nil && tt.in.Instruction.Type != tt.wantType {
				t.Errorf("got type %q, want %q", tt.in.Instruction.Type, tt.wantType)
			}
		})
	}
}

func TestTurnOpenInput_Deadline(t *testing.T) {
	tests := []struct {
		seconds int
		want    time.Duration
	}{
		{0, time.Hour}, {30, 30 * time.Second},
	}
	for _, tt := range tests {
		in := kura.TurnOpenInput{DeadlineSeconds: tt.seconds}
		if got := in.Deadline(time.Hour); got != tt.want {
			t.Errorf("Deadline with %d s = %v, want %v", tt.seconds, got, tt.want)
		}
	}
}

func TestLeaseDuration(t *testing.T) {
	tests := []struct {
		seconds   int
		want      time.Duration
		wantField string
	}{
		{0, time.Duration(kura.DefaultLeaseSeconds) * time.Second, ""},
		{1, time.Second, ""},
		{kura.MaxLeaseSeconds, time.Duration(kura.MaxLeaseSeconds) * time.Second, ""},
		{kura.MaxLeaseSeconds + 1, 0, "lease_seconds"},
		{-1, 0, "lease_seconds"},
	}
	for _, tt := range tests {
		got, err := kura.LeaseDuration(tt.seconds)
		if f := invalidField(t, err); f != tt.wantField || got != tt.want {
			t.Errorf("LeaseDuration(%d) = %v, %q, want %v, %q", tt.seconds, got, f, tt.want, tt.wantField)
		}
	}
}

func TestTurnAppend_Validate(t *testing.T) {
	tests := []struct {
		n         int
		wantField string
	}{
		{0, "records"}, {1, ""}, {kura.MaxTurnRecords, ""}, {kura.MaxTurnRecords + 1, "records"},
	}
	for _, tt := range tests {
		in := kura.TurnAppend{Records: make([]kura.RecordRef, tt.n)}
		if got := invalidField(t, in.Validate()); got != tt.wantField {
			t.Errorf("%d records: got field %q, want %q", tt.n, got, tt.wantField)
		}
	}
}
