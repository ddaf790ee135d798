package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

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
		srv := mcp.NewServer(c.client, version)
		fmt.Fprintf(c.stderr, "kura mcp: serving kurad at %s over stdio\n", c.client.BaseURL())
		err := srv.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(c.stdin), Writer: nopWriteCloser{c.stdout}})
		// The client closing stdin, or a signal, is how a stdio server ends.
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
			return nil
		}
		return fmt.Errorf("mcp: %w", err)
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
