package kura

import "time"

// Turn limits.
const (
	MaxTurnRecords      = 1000
	MaxDeadlineSeconds  = 7 * 24 * 3600
	MaxLeaseSeconds     = 24 * 3600
	DefaultLeaseSeconds = 60
)

// Validate checks a turn open request before anything is written, and
// gives an instruction without a type its only type, task.instruction.
func (in *TurnOpenInput) Validate() error {
	if in.Instruction == nil {
		return Invalid("instruction", "instruction is required (a task.instruction record)")
	}
	if in.Instruction.Type == "" {
		in.Instruction.Type = RecordTaskInstruction
	}
	if in.Instruction.Type != RecordTaskInstruction {
		return Invalid("instruction.type", "the instruction is a task.instruction record, not %q", in.Instruction.Type)
	}
	if in.Dispatch != "" && !ValidSlug(in.Dispatch) {
		return Invalid("dispatch", "dispatch must be a slug (the target in oclaw.v1.{project}.cmd.{target}.dispatch)")
	}
	if in.DeadlineSeconds < 0 || in.DeadlineSeconds > MaxDeadlineSeconds {
		return Invalid("deadline_seconds", "deadline_seconds must be 1..%d", MaxDeadlineSeconds)
	}
	if len(in.Context) > MaxTurnRecords {
		return Invalid("context", "at most %d context records", MaxTurnRecords)
	}
	return nil
}

// Deadline is how long the turn may stay open: the request's
// deadline_seconds, else the server's default.
func (in *TurnOpenInput) Deadline(def time.Duration) time.Duration {
	if in.DeadlineSeconds > 0 {
		return time.Duration(in.DeadlineSeconds) * time.Second
	}
	return def
}

// LeaseDuration is the lease a claim or renewal asks for in seconds: 0 is
// the default lease, anything else must lie in 1..MaxLeaseSeconds.
func LeaseDuration(seconds int) (time.Duration, error) {
	if seconds == 0 {
		seconds = DefaultLeaseSeconds
	}
	if seconds < 1 || seconds > MaxLeaseSeconds {
		return 0, Invalid("lease_seconds", "lease_seconds must be 1..%d", MaxLeaseSeconds)
	}
	return time.Duration(seconds) * time.Second, nil
}

// Validate checks how many records a turn append carries.
func (in *TurnAppend) Validate() error {
	if len(in.Records) == 0 {
		return Invalid("records", "records must hold at least one record")
	}
	if len(in.Records) > MaxTurnRecords {
		return Invalid("records", "at most %d records per append", MaxTurnRecords)
	}
	return nil
}
