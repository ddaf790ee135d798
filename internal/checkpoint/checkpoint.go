// Package checkpoint signs kurad's log checkpoints (C2SP tlog-checkpoint
// notes, signed with golang.org/x/mod/sumdb/note), publishes them after
// commits, and compares the log with what its witnesses cosigned: a witness
// holding a larger tree, or one this log does not extend, means the data
// directory was rolled back or forked, and writes stop until a person
// decides (shared/API.md, "Log, checkpoints and witnesses").
package checkpoint

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/kura-memory/kura/internal/kura"
)

// Log is what the checkpointer needs from the store.
type Log interface {
	Log() kura.LogHead
	// LogCaughtUp is Log once this instance knows every leaf any instance
	// sharing its database committed (on one SQLite file: Log): a
	// witness following another instance may hold a larger tree than this
	// one has read yet, which is no rollback.
	LogCaughtUp(ctx context.Context) (kura.LogHead, error)
	LogOrigin() string
	LogTreeHash(ctx context.Context, size int64) (tlog.Hash, error)
	LogAcknowledged(ctx context.Context, origin string, size int64, root string) (bool, error)
	AcknowledgeLog(ctx context.Context, ack kura.LogAcknowledgement) (string, error)
	RefuseWrites(err *kura.Error)
	AllowWrites()
}

// ed25519Signer is a note.Signer for an Ed25519 key under a key name. note
// exposes signers only through its private-key string format; building
// one from the key kurad already holds keeps that string out of memory and
// logs.
type ed25519Signer struct {
	name string
	hash uint32
	key  ed25519.PrivateKey
}

func (s *ed25519Signer) Name() string                    { return s.name }
func (s *ed25519Signer) KeyHash() uint32                 { return s.hash }
func (s *ed25519Signer) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.key, msg), nil }

// VerifierKey is the note verifier key of pub for a log named origin: what
// /v1/info serves as log_vkey.
func VerifierKey(origin string, pub ed25519.PublicKey) (string, error) {
	return note.NewEd25519VerifierKey(origin, pub)
}

// NewSigner returns a note signer of key named origin.
func NewSigner(origin string, key ed25519.PrivateKey) (note.Signer, error) {
	vkey, err := VerifierKey(origin, key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, fmt.Errorf("log key for %q: %w", origin, err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("log key for %q: %w", origin, err)
	}
	return &ed25519Signer{name: origin, hash: v.KeyHash(), key: key}, nil
}

// Body is the checkpoint text of a tree (C2SP tlog-checkpoint): origin,
// size, base64 root, each on its own line.
func Body(origin string, size int64, root tlog.Hash) string {
	return origin + "\n" + strconv.FormatInt(size, 10) + "\n" + base64.StdEncoding.EncodeToString(root[:]) + "\n"
}

// Config sets up a Checkpointer.
type Config struct {
	Log Log
	// Key signs checkpoints; PreviousKey, during a key rotation, signs them
	// too, so whoever trusts only the old key sees the new one vouched for.
	Key         ed25519.PrivateKey
	PreviousKey ed25519.PrivateKey
	// RetiredKeys are older public keys: a witness's checkpoint signed by
	// one of them is still this kurad's.
	RetiredKeys []ed25519.PublicKey
	// Publish sends a checkpoint's NATS payload (Payload); nil: not
	// published.
	Publish func(payload []byte) error
	// Interval is the least time between two published checkpoints
	// (coalescing); 0: 250 ms.
	Interval time.Duration
	// Witnesses are witness base URLs; Poll how often they are asked.
	Witnesses []string
	Poll      time.Duration
	// Client fetches from witnesses; nil: a client with a 5 s timeout.
	Client Doer
	Logger *slog.Logger
}

// signed is a checkpoint signed for one tree.
type signed struct {
	origin string
	head   kura.LogHead
	note   []byte // body and kurad's signature lines
}

// Payload is what a checkpoint's NATS message carries: JSON like every
// other doorbell payload (a subscriber to oclaw.v1.> can read them all
// alike), with the signed note whole, so a subscriber verifies it without
// asking kurad. It has no seq: a checkpoint is not an event.
type Payload struct {
	Type       string `json:"type"` // kura.CheckpointType
	Origin     string `json:"origin"`
	Size       int64  `json:"size"`
	Root       string `json:"root"` // base64
	Checkpoint string `json:"checkpoint"`
}

func (s *signed) payload() []byte {
	b, _ := json.Marshal(Payload{Type: kura.CheckpointType, Origin: s.origin, Size: s.head.Size,
		Root: base64.StdEncoding.EncodeToString(s.head.Root[:]), Checkpoint: string(s.note)})
	return b
}

// Checkpointer signs, caches and publishes checkpoints, and watches the
// witnesses.
type Checkpointer struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	signers map[string][]note.Signer // by origin
	latest  *signed
	// witnessed is, per witness URL, the newest tree it cosigned that the
	// log is consistent with (witnesses.go).
	witnessed map[string]witnessed

	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	started bool

	watch watchState // witnesses.go
}

// New returns a Checkpointer; Start runs its background work.
func New(cfg Config) *Checkpointer {
	if cfg.Interval <= 0 {
		cfg.Interval = 250 * time.Millisecond
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Client == nil {
		cfg.Client = defaultClient()
	}
	c := &Checkpointer{cfg: cfg, log: cfg.Logger, signers: map[string][]note.Signer{}, witnessed: map[string]witnessed{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	c.watch.init(cfg.Witnesses)
	return c
}

// signersFor returns the signers of origin, made once per origin.
func (c *Checkpointer) signersFor(origin string) ([]note.Signer, error) {
	if s, ok := c.signers[origin]; ok {
		return s, nil
	}
	var out []note.Signer
	for _, k := range []ed25519.PrivateKey{c.cfg.Key, c.cfg.PreviousKey} {
		if k == nil {
			continue
		}
		s, err := NewSigner(origin, k)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	c.signers[origin] = out
	return out, nil
}

// VerifierKey is the note verifier key of the current origin and key.
func (c *Checkpointer) VerifierKey() string {
	v, _ := VerifierKey(c.cfg.Log.LogOrigin(), c.cfg.Key.Public().(ed25519.PublicKey))
	return v
}

// verifiers are every key this kurad signs or signed with, for origin.
func (c *Checkpointer) verifiers(origin string) note.Verifiers {
	var vs []note.Verifier
	pubs := []ed25519.PublicKey{c.cfg.Key.Public().(ed25519.PublicKey)}
	if c.cfg.PreviousKey != nil {
		pubs = append(pubs, c.cfg.PreviousKey.Public().(ed25519.PublicKey))
	}
	pubs = append(pubs, c.cfg.RetiredKeys...)
	for _, p := range pubs {
		vkey, err := VerifierKey(origin, p)
		if err != nil {
			continue
		}
		if v, err := note.NewVerifier(vkey); err == nil {
			vs = append(vs, v)
		}
	}
	return note.VerifierList(vs...)
}

// sign returns the checkpoint of the log's current tree, signing it when
// the tree moved since the last one.
func (c *Checkpointer) sign() (*signed, error) {
	head, origin := c.cfg.Log.Log(), c.cfg.Log.LogOrigin()
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.latest; l != nil && l.head == head && l.origin == origin {
		return l, nil
	}
	signers, err := c.signersFor(origin)
	if err != nil {
		return nil, err
	}
	msg, err := note.Sign(&note.Note{Text: Body(origin, head.Size, tlog.Hash(head.Root))}, signers...)
	if err != nil {
		return nil, fmt.Errorf("sign checkpoint: %w", err)
	}
	c.latest = &signed{origin: origin, head: head, note: msg}
	return c.latest, nil
}

// Checkpoint returns the signed checkpoint of the current tree, followed
// by the cosignature lines of every witness that cosigned exactly it.
func (c *Checkpointer) Checkpoint() ([]byte, error) {
	s, err := c.sign()
	if err != nil {
		return nil, err
	}
	return c.withCosignatures(s), nil
}

// Notify is the store's commit hook: a commit moved the tree.
func (c *Checkpointer) Notify() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Start publishes checkpoints after commits, at most one per Interval, and
// checks the witnesses at once and then every Poll.
func (c *Checkpointer) Start(ctx context.Context) {
	if len(c.cfg.Witnesses) > 0 {
		c.CheckWitnesses(ctx)
	}
	c.started = true
	go c.run()
}

func (c *Checkpointer) run() {
	defer close(c.done)
	var poll <-chan time.Time
	if len(c.cfg.Witnesses) > 0 {
		t := time.NewTicker(c.cfg.Poll)
		defer t.Stop()
		poll = t.C
	}
	var published kura.LogHead
	var origin string
	for {
		select {
		case <-c.stop:
			return
		case <-poll:
			ctx, cancel := context.WithTimeout(context.Background(), max(c.cfg.Poll, checkBudget))
			c.CheckWitnesses(ctx)
			cancel()
		case <-c.wake:
			s, err := c.sign()
			if err != nil {
				c.log.Error("sign checkpoint", "err", err)
				continue
			}
			if c.cfg.Publish != nil && (s.head != published || s.origin != origin) {
				if err := c.cfg.Publish(s.payload()); err != nil {
					c.log.Warn("publish checkpoint", "err", err, "size", s.head.Size)
				} else {
					published, origin = s.head, s.origin
				}
			}
			// Coalesce: commits during the pause are one checkpoint.
			select {
			case <-time.After(c.cfg.Interval):
			case <-c.stop:
				return
			}
		}
	}
}

// Close stops the background work.
func (c *Checkpointer) Close() {
	c.once.Do(func() {
		close(c.stop)
		if c.started {
			<-c.done
		}
	})
}
