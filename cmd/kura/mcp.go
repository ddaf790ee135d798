package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/kura-memory/kura/internal/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// setupMCP serves Kura's MCP tools over stdio for an agent that spawns
// its tools: every tool call is one request to kurad through the same
// client the other commands use (KURA_URL, KURA_TOKEN), so the tools
// behave as kurad's /mcp does. stdout is the protocol channel; nothing
// else is written there.
func setupMCP(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 0 {
			return usagef("mcp takes no arguments")
		}
		o := mcp.Options{Version: version}
		// The tools' schemas list the record types and node kinds as enums,
		// so they are kurad's (both are configurable). A kurad that cannot
		// be asked now still gets its tools, with those arguments free.
		ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
		info, err := c.client.Info(ictx)
		cancel()
		if err != nil {
			fmt.Fprintf(c.stderr, "kura mcp: cannot read kurad's vocabularies (%v); record types and node kinds are not listed in the tools' schemas\n", err)
		} else {
			o.RecordTypes, o.NodeKinds = info.RecordTypes, info.NodeKinds
		}
		srv := mcp.NewServer(c.client, o)
		fmt.Fprintf(c.stderr, "kura mcp: serving kurad at %s over stdio\n", c.client.BaseURL())
		err = srv.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(c.stdin), Writer: nopWriteCloser{c.data}})
		// The client closing stdin, or a signal, is how a stdio server ends.
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
			return nil
		}
		return fmt.Errorf("mcp: %w", err)
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
