package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/ui"
)

// uiRoutes serve the console's files. They are open: the page is the same
// for everyone and holds no data; what it shows comes from the API routes,
// called with the token the person enters.
func (s *Server) uiRoutes() []route {
	return []route{
		{method: http.MethodGet, pattern: "/ui", open: true, serve: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, ui.Prefix, http.StatusMovedPermanently)
		}},
		{method: http.MethodGet, pattern: "/ui/*", open: true, serve: s.handleConsoleFile},
	}
}

// handleConsoleFile sends one of the console's files: with a strict CSP,
// an ETag (a matching If-None-Match is 304) and gzip when the browser
// takes it. The page routes by fragment, so no other path falls back to
// it: a name that is not there is a 404 with the error body.
func (s *Server) handleConsoleFile(w http.ResponseWriter, r *http.Request) {
	f, ok := ui.Lookup(strings.TrimPrefix(r.URL.Path, ui.Prefix))
	if !ok {
		s.writeError(w, r, kura.Errorf(kura.ENotFound, "the console has no file %s", r.URL.Path))
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", ui.CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Content-Type", f.ContentType)
	h.Set("ETag", f.ETag)
	// Revalidate every time: a new kurad brings new files under the same
	// names, and a 304 costs one round trip.
	h.Set("Cache-Control", "no-cache")
	h.Add("Vary", "Accept-Encoding")
	if r.Header.Get("If-None-Match") == f.ETag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.Body
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		body = f.Gzip
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// acceptsGzip reports whether an Accept-Encoding header takes gzip (a q of
// zero refuses it).
func acceptsGzip(ae string) bool {
	for _, part := range strings.Split(ae, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q, found := strings.CutPrefix(strings.ReplaceAll(strings.TrimSpace(params), " ", ""), "q=")
		if !found {
			return true
		}
		v, err := strconv.ParseFloat(q, 64)
		return err == nil && v > 0
	}
	return false
}
