package witness

import (
	"context"
	"fmt"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/nats-io/nats.go"
)

// watchNATS wakes every follower when kurad announces a checkpoint, so the
// witness cosigns within moments of a commit instead of a poll later. The
// notice only wakes: the checkpoint is still fetched and judged over HTTP,
// so a lost or forged message changes nothing but timing. Without a NATS
// URL it does nothing. stop is always safe to call.
func (w *Witness) watchNATS(ctx context.Context, wakes []chan struct{}) (stop func(), err error) {
	if w.cfg.NATSURL == "" {
		return func() {}, nil
	}
	opts := []nats.Option{nats.Name("kura-witness " + w.name), nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1)}
	if w.cfg.Token != "" {
		// A kurad with tokens takes NATS clients by the same tokens
		// (credentials in the URL, a NATS user's, come first).
		opts = append(opts, nats.Token(w.cfg.Token))
	}
	nc, err := nats.Connect(w.cfg.NATSURL, opts...)
	if err != nil {
		return func() {}, fmt.Errorf("connect nats: %w", err)
	}
	_, err = nc.Subscribe(kura.CheckpointSubject, func(*nats.Msg) {
		for _, c := range wakes {
			select {
			case c <- struct{}{}:
			default: // a wake is already pending
			}
		}
	})
	if err != nil {
		nc.Close()
		return func() {}, fmt.Errorf("subscribe %s: %w", kura.CheckpointSubject, err)
	}
	// The subscription reaches the server before the first poll, so no
	// notice between them is lost (a lost one costs a poll interval only).
	fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := nc.FlushWithContext(fctx); err != nil {
		w.log.Warn("nats not reached yet; it keeps retrying, polling meanwhile", "nats", w.cfg.NATSURL, "err", err)
	}
	return nc.Close, nil
}
