package ui_test

import (
	"net/http"
	"testing"

	"github.com/kura-memory/kura/internal/kuradtest"
)

// TestConsole_SessionsList loads the console on a kurad with two sessions
// and finds both listed, with no script error, CSP violation or request
// to another origin on the way.
func TestConsole_SessionsList(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	for _, name := range []string{"morning", "evening"} {
		postJSON(t, base, "/v1/sessions", `{"project":"hashi","name":"`+name+`"}`, http.StatusCreated)
	}
	p := openConsole(t, base, "/sessions")
	p.waitFor(`document.querySelectorAll("main table tbody tr").length === 2`)
	if got := p.text("main table tbody"); !contains(got, "hashi/morning") || !contains(got, "hashi/evening") {
		t.Fatalf("sessions table = %q", got)
	}
}
