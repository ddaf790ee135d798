package kura

// LogHead is the Merkle log's tree as of a commit: its size and root hash.
type LogHead struct {
	Size int64
	Root [32]byte
}

// LogAcknowledgement is an admin's acknowledgement of a rollback or fork a
// witness reported: the witnessed checkpoint no longer counts against the
// database, and the acknowledgement is itself a leaf of the log.
type LogAcknowledgement struct {
	Origin  string `json:"origin"` // the witnessed checkpoint's
	Size    int64  `json:"size"`
	Root    string `json:"root"` // base64, as in the checkpoint
	Witness string `json:"witness"`
	Reason  string `json:"reason"`
	By      string `json:"by"`
}

// Log states (/v1/info log.state, /readyz checks.log).
const (
	LogOK          = "ok"
	LogUnwitnessed = "unwitnessed"
	LogRollback    = "rollback_detected"
	LogFork        = "fork_detected"
	LogOff         = "off"
)

// LogStatus is /v1/info's log object.
type LogStatus struct {
	State     string          `json:"state"`
	Size      int64           `json:"size"`
	Witnesses []WitnessStatus `json:"witnesses"`
	// Detected names what a witness holds that this log contradicts.
	Detected []LogConflict `json:"detected,omitempty"`
}

// WitnessStatus is what /v1/info says about one witness.
type WitnessStatus struct {
	URL string `json:"url"`
	// Size is the tree size the witness cosigned for this log's origin.
	Size int64 `json:"size"`
	// State: ok, unchecked, unreachable, no_checkpoint, rollback_detected,
	// fork_detected.
	State     string `json:"state"`
	CheckedAt string `json:"checked_at,omitempty"`
	Error     string `json:"error,omitempty"`
}

// LogConflict is a witnessed checkpoint the log contradicts.
type LogConflict struct {
	Witness string `json:"witness"`
	Origin  string `json:"origin"`
	Size    int64  `json:"size"`
	Root    string `json:"root"` // base64
	State   string `json:"state"`
	Reason  string `json:"reason"`
}

// CosignedCheckpoint is one tree of the log's current origin that
// witnesses cosigned, as GET /v1/log/cosigned serves it: the checkpoint
// note signed by kurad followed by the cosignature lines of every witness
// that cosigned exactly this tree.
type CosignedCheckpoint struct {
	Size       int64    `json:"size"`
	Root       string   `json:"root"` // base64
	Witnesses  []string `json:"witnesses"`
	Checkpoint string   `json:"checkpoint"`
}

// LogAcknowledged is the answer of POST /v1/admin/log/acknowledge.
type LogAcknowledged struct {
	Origin       string        `json:"origin"` // the origin the log continues under
	Acknowledged []LogConflict `json:"acknowledged"`
}

// LogLeaf is one leaf as GET /v1/log/leaves serves it. Data is nil when the
// event was compacted away or the caller may not read it.
type LogLeaf struct {
	Index int64
	Hash  [32]byte
	Data  []byte
}
