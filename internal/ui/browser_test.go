package ui_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The console's tests drive a real headless Chromium (Debian's chromium,
// which .ci/run installs) through chromedp. One browser serves the whole
// package; every test gets its own tab and its own kurad. Without a
// Chromium they skip, saying so; KURA_REQUIRE_CHROMIUM=1 (make test sets it)
// makes that a failure, as KURA_REQUIRE_POSTGRES does for PostgreSQL.

var (
	browserOnce   sync.Once
	browserCtx    context.Context
	browserCancel context.CancelFunc
	browserErr    error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if browserCancel != nil {
		browserCancel()
	}
	os.Exit(code)
}

// chromium finds the browser: KURA_CHROMIUM, else the usual names.
func chromium() string {
	if p := os.Getenv("KURA_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func startBrowser() (context.Context, error) {
	browserOnce.Do(func() {
		path := chromium()
		if path == "" {
			browserErr = fmt.Errorf("no chromium found")
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.WindowSize(1280, 900),
			chromedp.Flag("disable-gpu", true),
			chromedp.Flag("disable-dev-shm-usage", true),
		)
		if os.Geteuid() == 0 {
			// Chromium refuses to run as root with its sandbox; CI
			// containers often are root.
			opts = append(opts, chromedp.NoSandbox)
		}
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelCtx := chromedp.NewContext(alloc)
		// Start the browser now, so a broken install fails here, once.
		if err := chromedp.Do(ctx); err != nil {
			cancelCtx()
			cancelAlloc()
			browserErr = err
			return
		}
		browserCtx = ctx
		browserCancel = func() { cancelCtx(); cancelAlloc() }
	})
	return browserCtx, browserErr
}

// page is one tab on the console of the kurad at base. It records what the
// page does wrong: an uncaught exception, a console error (a Content-
// Security-Policy violation is one), or a request to another origin. Each
// fails the test when it ends.
type page struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu        sync.Mutex
	problems  []string
	responses []response
}

// response is one answer the page got: its URL and status.
type response struct {
	url    string
	status int64
}

// needBrowser returns the shared browser. Without one the test skips, or
// fails under KURA_REQUIRE_CHROMIUM=1.
func needBrowser(t *testing.T) context.Context {
	t.Helper()
	bctx, err := startBrowser()
	if err != nil {
		if os.Getenv("KURA_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("no headless Chromium (%v), and KURA_REQUIRE_CHROMIUM=1: install Debian's chromium or set KURA_CHROMIUM", err)
		}
		t.Skipf("no headless Chromium (%v): install Debian's chromium (.ci/run does) or set KURA_CHROMIUM; KURA_REQUIRE_CHROMIUM=1 makes this a failure", err)
	}
	return bctx
}

// openConsole opens a tab at base + "/ui/#" + route.
func openConsole(t *testing.T, base, route string) *page {
	t.Helper()
	p := openTab(t, base)
	p.navigate(route)
	return p
}

// openTab opens an empty tab that records the problems of the pages it
// loads from base (the page's origin).
func openTab(t *testing.T, base string) *page {
	t.Helper()
	bctx := needBrowser(t)
	tab, cancelTab := chromedp.NewContext(bctx)
	ctx, cancel := context.WithTimeout(tab, 90*time.Second)
	p := &page{t: t, ctx: ctx, base: base}
	t.Cleanup(func() {
		cancel()
		cancelTab()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, pr := range p.problems {
			t.Errorf("console page: %s", pr)
		}
	})
	origin, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	// The tab exists once a first (empty) run has made it; the listener and
	// the domains it needs go in before the page loads.
	if err := chromedp.Do(tab); err != nil {
		t.Fatal(err)
	}
	err = chromedp.Listen(tab, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			p.problem("uncaught exception: %s", exceptionText(e.ExceptionDetails))
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				p.problem("console.error: %s", argsText(e.Args))
			}
		case *cdplog.EventEntryAdded:
			// The browser's own reports: a Content-Security-Policy
			// violation, a failed load.
			if e.Entry != nil && e.Entry.Level == cdplog.EntryLevelError {
				p.problem("browser log (%s): %s", e.Entry.Source, e.Entry.Text)
			}
		case *network.EventResponseReceived:
			if e.Response != nil {
				p.mu.Lock()
				p.responses = append(p.responses, response{e.Response.URL, e.Response.Status})
				p.mu.Unlock()
			}
		case *network.EventRequestWillBeSent:
			u, err := url.Parse(e.Request.URL)
			if err == nil && (u.Scheme == "data" || u.Scheme == "blob") {
				return
			}
			if err != nil || u.Host != origin.Host {
				p.problem("request leaves the page's origin: %s", e.Request.URL)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, enable := range []func() error{
		func() error { _, err := chromedp.Call(tab, network.Enable, network.EnableParams{}); return err },
		func() error { _, err := chromedp.Call(tab, runtime.Enable, cdp.Empty{}); return err },
		func() error { _, err := chromedp.Call(tab, cdplog.Enable, cdp.Empty{}); return err },
	} {
		if err := enable(); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func (p *page) problem(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.problems = append(p.problems, fmt.Sprintf(format, args...))
}

// allow drops recorded problems containing s (a test that provokes an
// error on purpose, as a refused token does).
func (p *page) allow(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := p.problems[:0]
	for _, pr := range p.problems {
		if !strings.Contains(pr, s) {
			kept = append(kept, pr)
		}
	}
	p.problems = kept
}

// statuses lists the statuses of the answers the page got so far from
// URLs whose path contains sub.
func (p *page) statuses(sub string) []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int64
	for _, r := range p.responses {
		if u, err := url.Parse(r.url); err == nil && strings.Contains(u.Path, sub) {
			out = append(out, r.status)
		}
	}
	return out
}

// navigate loads the console at route ("/sessions/<id>").
func (p *page) navigate(route string) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, chromedp.Navigate(p.base+"/ui/#"+route), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
		p.t.Fatalf("open %s: %v", route, err)
	}
}

// do runs chromedp steps, failing the test on error.
func (p *page) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, steps...); err != nil {
		p.t.Fatalf("browser: %v", err)
	}
}

// text waits for the element sel (CSS) and returns its visible text.
func (p *page) text(sel string) string {
	p.t.Helper()
	p.do(chromedp.WaitVisible(chromedp.CSS(sel)))
	s, err := chromedp.Run(p.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		p.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// eval evaluates a JavaScript expression and decodes its value.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript condition until it is true (bounded): the
// page renders after its API calls answer.
func (p *page) waitFor(cond string) {
	p.t.Helper()
	_, err := chromedp.Run(p.ctx, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		main, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.querySelector("main") ? document.querySelector("main").innerText : ""`))
		p.t.Fatalf("waiting for %s: %v\npage shows: %s", cond, err, main)
	}
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return ""
	}
	if d.Exception != nil && d.Exception.Description != "" {
		return d.Exception.Description
	}
	return d.Text
}

func argsText(args []*runtime.RemoteObject) string {
	var parts []string
	for _, a := range args {
		if a.Value != nil {
			parts = append(parts, string(a.Value))
		} else {
			parts = append(parts, a.Description)
		}
	}
	return strings.Join(parts, " ")
}
