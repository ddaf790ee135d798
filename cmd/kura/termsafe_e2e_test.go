package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// TestE2E_StoredEscapesNotPrinted (issue 38): text anyone may store in
// kurad — record metadata, node titles and summaries, knowledge-base
// values, identifiers echoed in an error — holds terminal escape sequences:
// clear the screen, set the clipboard (OSC 52), a hidden link (OSC 8), a
// C1 CSI, a lone CR that overwrites a line, a bidi override. show, memory
// get, trace, kb lookup and an error on stderr print each as an escape, not
// as the bytes; --json prints JSON that decodes to exactly what is stored.
func TestE2E_StoredEscapesNotPrinted(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	ctx := t.Context()
	c := client.New(url)
	const (
		clear   = "\x1b[2J\x1b[H"
		osc52   = "\x1b]52;c;ZXZpbA==\x07"
		osc8    = "\x1b]8;;http://evil.example\x1b\\trusted\x1b]8;;\x1b\\"
		csi     = "\u009b31m"
		spoof   = "FAILED\rOK    "
		reverse = "\u202egnp.exe"
	)
	hostile := clear + osc52 + osc8 + csi + spoof + reverse
	rec, err := c.PutRecord(ctx, client.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo",
		Content: json.RawMessage(`"plain"`), Metadata: map[string]string{"note": hostile}})
	if err != nil {
		t.Fatal(err)
	}
	title, summary := "\x1b[31mtrusted"+osc52, "ok"+spoof+csi+reverse
	if _, _, err := c.PutNode(ctx, "hashi", client.NodeInput{Kind: "fact", ID: "x", Title: &title, Summary: &summary,
		DerivedFrom: []string{"record:" + rec.ID}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.PutKBEntry(ctx, "kb", client.KBEntryInput{Identifier: "pool address", Value: "0x12 " + hostile + "\r\nnext line"}); err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{
		{"show", rec.ID},
		{"memory", "get", "hashi", "fact:x"},
		{"trace", "hashi", "fact:x"},
		{"kb", "lookup", "kb", "pool", "address"},
		{"kb", "get", "kb", "gone" + clear + osc52}, // 404: kurad's message quotes it
	} {
		out, errOut, _ := runKura(t, url, nil, args...)
		for stream, s := range map[string]string{"stdout": out, "stderr": errOut} {
			if bad, ok := terminalSafe(s); !ok {
				t.Errorf("kura %s: %s holds %q:\n%s", strings.Join(args, " "), stream, bad, s)
			}
		}
		if both := out + errOut; !strings.Contains(both, `\x1b`) {
			t.Errorf("kura %s: the escape is not shown as \\x1b:\n%s", strings.Join(args, " "), both)
		}
	}
	// CRLF text keeps its line ends.
	if out, _, _ := runKura(t, url, nil, "kb", "lookup", "kb", "pool", "address"); !strings.Contains(out, "\r\nnext line") {
		t.Errorf("kb lookup lost the CRLF:\n%q", out)
	}

	// --json: terminal-safe, and the same strings once decoded.
	out, _, code := runKura(t, url, nil, "show", rec.ID, "--json")
	if bad, ok := terminalSafe(out); code != exitOK || !ok {
		t.Fatalf("kura show --json: exit %d, holds %q:\n%s", code, bad, out)
	}
	var got client.Record
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Metadata["note"] != hostile {
		t.Errorf("kura show --json: %v, metadata note %q, want %q", err, got.Metadata["note"], hostile)
	}
	out, _, _ = runKura(t, url, nil, "memory", "get", "hashi", "fact:x", "--json")
	var node client.Node
	if bad, ok := terminalSafe(out); !ok {
		t.Errorf("kura memory get --json holds %q:\n%s", bad, out)
	}
	if err := json.Unmarshal([]byte(out), &node); err != nil || node.Title != title || node.Summary != summary {
		t.Errorf("kura memory get --json: %v, title %q summary %q, want %q %q", err, node.Title, node.Summary, title, summary)
	}
}
