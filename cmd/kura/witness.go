package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/kura-memory/kura/internal/witness"
)

// logsFlag collects --log URL or --log URL=VKEY, repeatable.
type logsFlag []witness.Log

func (f *logsFlag) String() string { return "" }

func (f *logsFlag) Set(v string) error {
	// A verifier key holds '+' and base64 (maybe '=' padding) but a kurad
	// base URL has no '=', so the first one ends the URL.
	u, vkey, _ := strings.Cut(v, "=")
	u = strings.TrimRight(u, "/")
	if u == "" {
		return fmt.Errorf("empty log URL in %q", v)
	}
	*f = append(*f, witness.Log{URL: u, VKey: vkey})
	return nil
}

func setupWitness(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	state := fs.String("state", "", "state `DIR`: the witness key (witness.key, created 0600 on first start) and the last checkpoint cosigned per log")
	listen := fs.String("listen", witness.DefaultListen, "serve the cosigned checkpoints and /metrics on `ADDR`")
	var logs logsFlag
	fs.Var(&logs, "log", "follow the kurad log at `URL` (repeatable); URL=VKEY pins its /v1/info log_vkey instead of trusting the first one seen")
	token := fs.String("token", "", "bearer `TOKEN` sent to the logs, reader role (default $KURA_TOKEN); also the NATS token of a kurad with tokens")
	poll := fs.Duration("poll", witness.DefaultPoll, "poll each log every `INTERVAL`")
	natsURL := fs.String("nats", "", "also wake on kurad's checkpoint notices from the NATS server at `URL`")
	name := fs.String("name", "", "the witness key's `NAME` when it is created (default kura-witness/<hostname>)")
	return func(ctx context.Context, c *cli, args []string) error {
		// "kura witness URL..." reads as well as --log URL.
		for _, a := range args {
			if err := logs.Set(a); err != nil {
				return usagef("%v", err)
			}
		}
		if *state == "" {
			return usagef("--state is required")
		}
		if len(logs) == 0 {
			return usagef("at least one --log URL is required")
		}
		if *poll < 10*time.Millisecond {
			return usagef("--poll must be at least 10ms")
		}
		tok := *token
		if tok == "" {
			tok = os.Getenv("KURA_TOKEN")
		}
		w, err := witness.New(witness.Config{
			StateDir: *state,
			Listen:   *listen,
			Logs:     logs,
			Token:    tok,
			Poll:     *poll,
			Name:     *name,
			NATSURL:  *natsURL,
			Logger:   slog.New(slog.NewTextHandler(c.stderr, nil)).With("component", "witness"),
		})
		if err != nil {
			return usagef("%v", err)
		}
		if err := w.Open(ctx); err != nil {
			return err
		}
		defer w.Close()
		return w.Run(ctx)
	}
}
