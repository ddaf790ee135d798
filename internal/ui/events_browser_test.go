package ui_test

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kura-memory/kura/internal/kuradtest"
)

func writeRecord(t *testing.T, base, project, text string) string {
	t.Helper()
	rec := postJSON(t, base, "/v1/records", `{"type":"agent.thought","content":"`+text+`","author_id":"agent:bmo","metadata":{"project_id":"`+project+`"}}`, http.StatusCreated)
	return rec["id"].(string)
}

// TestConsole_EventsLive opens the events tail, writes a record while the
// page is open and waits for its event to appear with seq, type, project
// and a link to the record; paused, a new event waits until resumed.
func TestConsole_EventsLive(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	writeRecord(t, base, "hashi", "before the page")
	p := openConsole(t, base, "/events")
	p.waitFor(`document.querySelector("#ev-status")?.textContent.includes("live")`)

	id := writeRecord(t, base, "hashi", "while the page is open")
	sel := `#ev-list li a[href="#/records/` + id + `"]`
	p.waitFor(`document.querySelector('` + sel + `') !== null`)
	got := eval[string](p, `document.querySelector('`+sel+`').closest("li.event").innerText`)
	for _, w := range []string{"record.written", "hashi", id} {
		if !contains(got, w) {
			t.Errorf("event row = %q, lacks %q", got, w)
		}
	}
	if n := eval[int](p, `document.querySelectorAll('#ev-list li.event[data-type="record.written"]').length`); n != 2 {
		t.Errorf("%d record.written events shown, want 2 (one from before the page, one after)", n)
	}

	// Paused, the next event is held back, and shown on resume.
	p.do(chromedp.Click(chromedp.CSS("#ev-pause")))
	id2 := writeRecord(t, base, "hashi", "while paused")
	p.waitFor(`document.querySelector("#ev-pause").textContent === "Resume (1 new)"`)
	if eval[bool](p, `document.querySelector('#ev-list a[href="#/records/`+id2+`"]') !== null`) {
		t.Error("an event showed while paused")
	}
	p.do(chromedp.Click(chromedp.CSS("#ev-pause")))
	p.waitFor(`document.querySelector('#ev-list a[href="#/records/` + id2 + `"]') !== null`)
}

// TestConsole_EventsFilter filters by project: another project's event,
// written first, never shows, while the project's own does.
func TestConsole_EventsFilter(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	p := openConsole(t, base, "/events")
	p.waitFor(`document.querySelector("#ev-status")?.textContent.includes("live")`)
	p.do(chromedp.SendKeys(chromedp.CSS(`#ev-filters input[name="project"]`), "alpha\r"))
	p.waitFor(`location.hash === "#/events?project=alpha" && document.querySelector("#ev-status")?.textContent.includes("live")`)

	other := writeRecord(t, base, "beta", "another project")
	mine := writeRecord(t, base, "alpha", "this project")
	p.waitFor(`document.querySelector('#ev-list a[href="#/records/` + mine + `"]') !== null`)
	if eval[bool](p, `document.querySelector('#ev-list a[href="#/records/`+other+`"]') !== null`) {
		t.Error("project beta's event shows under the filter project=alpha")
	}
	if projects := eval[[]string](p, `[...new Set([...document.querySelectorAll("#ev-list li.event")].map(li => li.dataset.project))]`); len(projects) != 1 || projects[0] != "alpha" {
		t.Errorf("projects shown = %q", projects)
	}
}
