package api

import (
	"net/http"

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
		{method: http.MethodGet, pattern: "/ui/*", open: true, serve: func(w http.ResponseWriter, r *http.Request) {
			if !ui.Serve(w, r) {
				s.writeError(w, r, kura.Errorf(kura.ENotFound, "the console has no file %s", r.URL.Path))
			}
		}},
	}
}
