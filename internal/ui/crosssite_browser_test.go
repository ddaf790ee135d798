package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/kura-memory/kura/internal/kuradtest"
)

// attackPage fires every request a web page can make its browser send to
// another origin without asking it first (no CORS preflight): forms of
// the three encodings, with no field and with a JSON-shaped one, fetch in
// no-cors mode, beacons and an image; and two that need a preflight (JSON
// fetch, DELETE), which kurad never grants. window.__done is set once the
// forms' frames loaded and the fetches settled.
const attackPage = `<!doctype html><meta charset="utf-8"><title>another site</title><body><script>
const K = %q;
const rec = JSON.stringify({type: "agent.thought", content: "sent by another site", author_id: "user:evil"});
function form(path, enctype, fields) {
  return new Promise((resolve) => {
    const name = "sink" + Math.random().toString(36).slice(2);
    const frame = document.createElement("iframe");
    frame.name = name;
    document.body.appendChild(frame);
    frame.onload = () => resolve(path);
    setTimeout(() => resolve(path), 15000);
    const f = document.createElement("form");
    f.method = "POST";
    f.action = K + path;
    f.enctype = enctype;
    f.target = name;
    for (const [k, v] of fields) {
      const i = document.createElement("input");
      i.type = "hidden";
      i.name = k;
      i.value = v;
      f.appendChild(i);
    }
    document.body.appendChild(f);
    f.submit();
  });
}
const waits = [
  form("/v1/admin/backup", "text/plain", []),
  form("/v1/admin/backup", "application/x-www-form-urlencoded", []),
  form("/v1/admin/backup", "multipart/form-data", []),
  form("/v1/records", "text/plain", [[rec.slice(0, -1) + ',"pad":"', '"}']]),
  form("/v1/admin/compact-events", "application/x-www-form-urlencoded", [["before_seq", "1000"]]),
  fetch(K + "/v1/admin/backup", {method: "POST", mode: "no-cors"}),
  fetch(K + "/v1/records", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: rec}),
  fetch(K + "/v1/admin/compact-events", {method: "POST", mode: "no-cors", body: '{"before_seq":1000}'}),
  fetch(K + "/v1/admin/backup", {method: "POST", headers: {"Content-Type": "application/json"}, body: "{}"}),
  fetch(K + "/v1/kb/k/entries?identifier=x", {method: "DELETE"}),
  new Promise((resolve) => { const i = new Image(); i.onload = i.onerror = resolve; i.src = K + "/v1/admin/backup"; }),
];
navigator.sendBeacon(K + "/v1/admin/backup");
navigator.sendBeacon(K + "/v1/records", new Blob([rec], {type: "text/plain"}));
Promise.allSettled(waits).then(() => { window.__done = true; });
</script>`

// kuradRequest is one request the attack tab sent to kurad, as the
// browser's network log has it.
type kuradRequest struct {
	method, url string
	status      int64 // 0: no answer reached the page
	done        bool
	corsBlocked bool // the browser did not send it: its preflight failed
}

// TestBrowser_CrossSiteWritesRefused (M3): a page of another origin (a
// second listener on 127.0.0.1, another port) fires at a tokenless kurad
// everything a browser sends without a preflight. kurad must refuse each
// request and change nothing: no backup, no record, no event, no compaction.
// Before the fix, a body-less POST /v1/admin/backup was served: each form,
// no-cors fetch and beacon without a body made a full copy of the
// database. Then, from kurad's own origin (the console's), the same
// writes with the JSON type are served.
func TestBrowser_CrossSiteWritesRefused(t *testing.T) {
	t.Parallel()
	bctx := needBrowser(t)
	d := kuradtest.StartMain(t, kuradtest.Options{})
	base := d.BaseURL()
	kurad, _ := url.Parse(base)
	before := infoState(t, base)

	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, attackPage, base)
	}))
	t.Cleanup(site.Close)
	if strings.TrimPrefix(site.URL, "http://") == kurad.Host {
		t.Fatal("the page's origin is kurad's")
	}

	tab, cancelTab := chromedp.NewContext(bctx)
	defer cancelTab()
	ctx, cancel := context.WithTimeout(tab, 90*time.Second)
	defer cancel()
	if err := chromedp.Do(tab); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	reqs := map[network.RequestID]*kuradRequest{}
	chromedp.Listen(tab, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			if u, err := url.Parse(e.Request.URL); err == nil && u.Host == kurad.Host {
				reqs[e.RequestID] = &kuradRequest{method: e.Request.Method, url: e.Request.URL}
			}
		case *network.EventResponseReceived:
			if r := reqs[e.RequestID]; r != nil && e.Response != nil {
				r.status = e.Response.Status
			}
		case *network.EventLoadingFinished:
			if r := reqs[e.RequestID]; r != nil {
				r.done = true
			}
		case *network.EventLoadingFailed:
			if r := reqs[e.RequestID]; r != nil {
				r.done = true
				r.corsBlocked = e.CorsErrorStatus != nil
			}
		}
	})
	if _, err := chromedp.Call(tab, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(site.URL)); err != nil {
		t.Fatal(err)
	}
	// Wait for the page's promises, then for the browser to have every
	// request it sent kurad answered: the beacons have no promise.
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](`window.__done === true`, chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		t.Fatalf("the attack page did not finish: %v", err)
	}
	const wantPosts = 10 // 5 forms, 3 no-cors fetches, 2 beacons
	settled := func() (posts int, open []string) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range reqs {
			if r.method == http.MethodPost && r.status != 0 {
				posts++
			}
			if !r.done {
				open = append(open, r.method+" "+r.url)
			}
		}
		return posts, open
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		posts, open := settled()
		if posts >= wantPosts && len(open) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the browser sent kurad %d POSTs (want %d); still open: %v", posts, wantPosts, open)
		}
		time.Sleep(50 * time.Millisecond) // polling the browser's log, not waiting for kurad
	}

	// Each write the browser sent was refused by kurad; the two that
	// needed a preflight were never sent, since kurad grants none.
	mu.Lock()
	for _, r := range reqs {
		switch {
		case r.method == http.MethodGet:
		case r.method == http.MethodOptions && r.status < 400:
			t.Errorf("preflight %s: kurad answered %d, want a refusal", r.url, r.status)
		case r.method == http.MethodOptions:
		case r.status == 0 && !r.corsBlocked:
			t.Errorf("%s %s: no answer, and not stopped by the browser's preflight", r.method, r.url)
		case r.status != 0 && r.status != http.StatusForbidden:
			t.Errorf("%s %s: kurad answered %d, want 403", r.method, r.url, r.status)
		}
	}
	mu.Unlock()
	if after := infoState(t, base); after != before {
		t.Errorf("the page changed kurad: %s -> %s", before, after)
	}
	if got := backupCount(t, d); got != 0 {
		t.Errorf("the page made %d backups, want none", got)
	}

	// From kurad's own origin, the console's requests are served.
	p := openConsole(t, base, "/")
	status := func(js string) int {
		t.Helper()
		v, err := chromedp.Run(p.ctx, chromedp.Evaluate[int](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	if got := status(`fetch("/v1/admin/backup", {method: "POST", headers: {"Content-Type": "application/json"}}).then((r) => r.status)`); got != 200 {
		t.Errorf("a backup from kurad's own origin: %d, want 200", got)
	}
	if got := status(`fetch("/v1/records", {method: "POST", headers: {"Content-Type": "application/json"}, body: ` +
		`JSON.stringify({type: "agent.thought", content: "from the console", author_id: "user:local"})}).then((r) => r.status)`); got != 201 {
		t.Errorf("a record from kurad's own origin: %d, want 201", got)
	}
	if got := backupCount(t, d); got != 1 {
		t.Errorf("%d backups after the console asked for one", got)
	}
}

// infoState is what any write changes: the event log, the counts and the
// compaction mark.
func infoState(t *testing.T, base string) string {
	t.Helper()
	m := call(t, http.MethodGet, base, "/v1/info", "", "", 200)
	b, _ := json.Marshal([]any{m["last_event_seq"], m["counts"], m["compacted_through"]})
	return string(b)
}

func backupCount(t *testing.T, d *kuradtest.Daemon) int {
	t.Helper()
	ents, err := os.ReadDir(d.Config.BackupPath())
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(ents)
}
