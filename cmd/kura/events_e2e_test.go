package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
)

// putRecords writes n records of project through the client and returns
// their ids in order.
func putRecords(t *testing.T, c *client.Client, project string, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		r, err := c.PutRecord(t.Context(), client.RecordInput{Type: "agent.thought", AuthorID: "agent:ev",
			Content:  json.RawMessage(strconv.Quote(fmt.Sprint(time.Now().UnixNano()))),
			Metadata: map[string]string{"project_id": project}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

func TestE2E_Events(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	c := client.New(url)
	alpha := putRecords(t, c, "alpha", 3)
	putRecords(t, c, "beta", 2)

	t.Run("JSON", func(t *testing.T) {
		var page struct {
			Events []struct {
				Seq      int64  `json:"seq"`
				Type     string `json:"type"`
				Project  string `json:"project"`
				RecordID string `json:"record_id"`
			} `json:"events"`
			NextAfter int64 `json:"next_after"`
			LastSeq   int64 `json:"last_seq"`
		}
		kuraJSON(t, url, "", &page, "events", "--project", "alpha", "--type=record.written", "--limit", "2", "--after", "0")
		if len(page.Events) != 2 || page.Events[0].RecordID != alpha[0] || page.Events[1].RecordID != alpha[1] || page.NextAfter != page.Events[1].Seq || page.LastSeq != 5 {
			t.Errorf("got %+v, want the first two alpha records and next_after at the second", page)
		}
	})

	t.Run("Human", func(t *testing.T) {
		out, errOut, code := runKura(t, url, nil, "events", "--after", "1", "--type", "ledger.written,record.written", "--limit", "2")
		if code != exitOK {
			t.Fatalf("got exit %d, stderr %q", code, errOut)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 2 || !strings.HasPrefix(errOut, "more events: kura events --after 3") {
			t.Fatalf("got %q, stderr %q, want two lines and a hint to continue after 3", out, errOut)
		}
		if f := strings.Fields(lines[0]); len(f) != 4 || f[0] != "2" || f[1] != "record.written" || f[2] != "alpha" || f[3] != "record_id="+alpha[1] {
			t.Errorf("got %q, want seq type project record_id=...", lines[0])
		}
	})

	for name, args := range map[string][]string{
		"BadType":    {"events", "--type", "no.such"},
		"BadProject": {"events", "--project", "Not A Slug", "--follow"},
	} {
		t.Run(name, func(t *testing.T) {
			_, errOut, code := runKura(t, url, nil, args...)
			if code != exitFail || !strings.HasPrefix(errOut, "kura: invalid_argument: ") {
				t.Errorf("got exit %d, stderr %q, want 1 and the server's invalid_argument", code, errOut)
			}
		})
	}
	t.Run("Usage", func(t *testing.T) {
		_, _, code := runKura(t, url, nil, "events", "extra")
		if code != exitUsage {
			t.Errorf("got exit %d, want %d", code, exitUsage)
		}
	})
}

// follower runs kura events --follow in-process until stop is called.
type follower struct {
	out, errOut kuradtest.SyncBuffer
	cancel      context.CancelFunc
	done        chan int
}

func startFollow(url string, args ...string) *follower {
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{cancel: cancel, done: make(chan int, 1)}
	env := func(k string) string {
		if k == "KURA_URL" {
			return url
		}
		return ""
	}
	go func() {
		f.done <- run(ctx, append([]string{"events", "--follow"}, args...), strings.NewReader(""), &f.out, &f.errOut, env)
	}()
	return f
}

// waitLines waits until the follower has printed n lines and returns them.
func (f *follower) waitLines(t *testing.T, n int) []string {
	t.Helper()
	var lines []string
	var out string
	ok := testwait.Until(10*time.Second, func() bool {
		out = f.out.String()
		lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if out != "" && len(lines) >= n {
			return true
		}
		select {
		case code := <-f.done:
			t.Fatalf("kura events --follow ended with %d; stdout %q, stderr %q", code, out, f.errOut.String())
		default:
		}
		return false
	})
	if !ok {
		t.Fatalf("got %q, want %d lines; stderr %q", out, n, f.errOut.String())
	}
	return lines
}

func (f *follower) stop(t *testing.T) {
	t.Helper()
	f.cancel()
	select {
	case code := <-f.done:
		if code != exitOK {
			t.Errorf("got exit %d after interrupt, stderr %q, want 0", code, f.errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("kura events --follow did not stop")
	}
}

// recordIDs decodes --json lines and checks they are record.written events
// in strictly increasing seq order.
func recordIDs(t *testing.T, lines []string) []string {
	t.Helper()
	var ids []string
	var last int64
	for _, l := range lines {
		var e client.Event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if e.Seq <= last || e.Type != "record.written" {
			t.Fatalf("got %q after seq %d, want record.written events in seq order", l, last)
		}
		last = e.Seq
		ids = append(ids, e.Refs["record_id"])
	}
	return ids
}

func TestE2E_EventsFollow(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	c := client.New(url)
	want := putRecords(t, c, "alpha", 2)
	putRecords(t, c, "beta", 1)

	f := startFollow(url, "--json", "--project", "alpha", "--after", "0")
	recordIDs(t, f.waitLines(t, 2))
	want = append(want, putRecords(t, c, "alpha", 2)...)
	putRecords(t, c, "beta", 1)
	lines := f.waitLines(t, 4)
	f.stop(t)
	if got := recordIDs(t, strings.Split(strings.TrimSuffix(f.out.String(), "\n"), "\n")); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if len(lines) != 4 {
		t.Errorf("got %d lines, want 4", len(lines))
	}

	t.Run("Human", func(t *testing.T) {
		f := startFollow(url, "--type", "record.written", "--after", "4")
		lines := f.waitLines(t, 1)
		f.stop(t)
		if fs := strings.Fields(lines[0]); len(fs) != 4 || fs[0] != "5" || fs[1] != "record.written" {
			t.Errorf("got %q, want event 5 first", f.out.String())
		}
	})

	t.Run("NoServer", func(t *testing.T) {
		// The first connection failing is a wrong URL until proven
		// otherwise: fail rather than retry for ever.
		f := startFollow(deadURL(t))
		select {
		case code := <-f.done:
			if code != exitFail {
				t.Errorf("got exit %d, want %d", code, exitFail)
			}
		case <-time.After(10 * time.Second):
			f.cancel()
			t.Fatal("kura events --follow kept retrying a URL it never reached")
		}
	})
}

// TestE2E_EventsFollowRestart restarts kurad under a follower, on the same
// address and data: the follower reconnects from the last seq it printed,
// so the records written while it was cut off come out once, in order.
func TestE2E_EventsFollowRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sameData := func(cfg *daemon.Config) { cfg.DataDir, cfg.KeyFile = dir, dir+"/kurad.key" }
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: sameData})
	addr := d.HTTPAddr()
	c := client.New(d.BaseURL())
	want := putRecords(t, c, "default", 2)

	f := startFollow(d.BaseURL(), "--json", "--type", "record.written", "--after", "0")
	f.waitLines(t, 2)
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	kuradtest.StartMain(t, kuradtest.Options{Configure: func(cfg *daemon.Config) { sameData(cfg); cfg.HTTPAddr = addr }})
	want = append(want, putRecords(t, c, "default", 2)...)
	lines := f.waitLines(t, 4)
	f.stop(t)
	if got := recordIDs(t, lines); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if !strings.Contains(f.errOut.String(), "reconnecting in") {
		t.Errorf("got stderr %q, want the reconnect reported", f.errOut.String())
	}
}
