package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
)

// Long polls wait at most this long, whatever wait= asks: an HTTP client
// or proxy in between would likely give up first anyway.
const maxEventWait = 60 * time.Second

// streamKeepalive is how often an idle event stream sends a comment line,
// so proxies and clients can tell a quiet stream from a dead one.
var streamKeepalive = 15 * time.Second

// EventStore is what the event routes need from the store.
type EventStore interface {
	LastEventSeq() int64
	ListEvents(ctx context.Context, f kura.EventFilter) (*kura.EventPage, error)
	// EventsChanged is closed at the next commit that writes an event.
	EventsChanged() <-chan struct{}
}

// eventRoutes are the feed and the stream; both filter in the store query
// what the caller may not see (restrictEvents).
func (s *Server) eventRoutes() []route {
	return []route{
		{method: http.MethodGet, pattern: "/v1/events", role: auth.RoleReader, check: projectQuery, serve: s.handleEvents},
		{method: http.MethodGet, pattern: "/v1/events/stream", role: auth.RoleReader, check: projectQuery, serve: s.handleEventStream},
	}
}

// parseEventFilter reads after=, limit=, type= (comma-separated) and
// project= shared by the feed and the stream.
func parseEventFilter(q url.Values) (kura.EventFilter, error) {
	var f kura.EventFilter
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return f, kura.Invalid("after", "after must be a non-negative event seq")
		}
		f.After = n
	}
	var err error
	if f.Limit, err = parseLimit(q.Get("limit")); err != nil {
		return f, err
	}
	for _, v := range q["type"] {
		for t := range strings.SplitSeq(v, ",") {
			if t == "" {
				continue // "type=" or a trailing comma filters nothing
			}
			if !kura.ValidEventType(t) {
				return f, kura.Invalid("type", "unknown event type %q", t).WithDetail("allowed", kura.EventTypes)
			}
			if !slices.Contains(f.Types, t) {
				f.Types = append(f.Types, t)
			}
		}
	}
	if v := q.Get("project"); v != "" {
		if !kura.ValidSlug(v) {
			return f, kura.Invalid("project", "project must be a slug")
		}
		f.Project = v
	}
	return f, nil
}

// parseWait reads wait= as a Go duration ("30s", "1m") or whole seconds.
func parseWait(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.Atoi(v)
		if nerr != nil {
			return 0, kura.Invalid("wait", "wait must be a duration such as 30s")
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 {
		return 0, kura.Invalid("wait", "wait must not be negative")
	}
	return min(d, maxEventWait), nil
}

// eventsBody renders an event page: each event is exactly the pointer
// payload published on NATS.
func eventsBody(p *kura.EventPage) []byte {
	b := make([]byte, 0, 64+len(p.Events)*200)
	b = append(b, `{"events":[`...)
	for i := range p.Events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p.Events[i].Pointer()...)
	}
	b = append(b, `],"next_after":`...)
	b = strconv.AppendInt(b, p.NextAfter, 10)
	b = append(b, `,"last_seq":`...)
	b = strconv.AppendInt(b, p.LastSeq, 10)
	if p.CompactedThrough > 0 {
		b = append(b, `,"compacted_through":`...)
		b = strconv.AppendInt(b, p.CompactedThrough, 10)
	}
	return append(b, "}\n"...)
}

// handleEvents is the catch-up feed, with an optional long poll: when
// nothing matches yet it waits for the next commit (up to wait=) before
// answering, possibly with an empty list.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, err := parseEventFilter(q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	restrictEvents(r, &f)
	wait, err := parseWait(q.Get("wait"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	tokens := s.watchToken(r)
	var deadline <-chan time.Time
	if wait > 0 {
		// The wait may outlast the server's write timeout (configurable,
		// possibly short): the answer gets its own window after it.
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(wait + 30*time.Second))
		t := time.NewTimer(wait)
		defer t.Stop()
		deadline = t.C
	}
	// From its first wait for a commit until it answers, the poll counts
	// in kura_events_polls_waiting.
	waiting := false
	defer func() {
		if waiting {
			s.polling.Add(-1)
		}
	}()
	for {
		// Take the channel before reading so a commit in between wakes us.
		changed := s.store.EventsChanged()
		page, err := s.store.ListEvents(ctx, f)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if len(page.Events) > 0 || wait == 0 {
			writeBody(w, http.StatusOK, eventsBody(page))
			return
		}
		// A filter may have skipped rows: continue after them, but never
		// past the deadline, shutdown or a gone client.
		f.After = page.NextAfter
		if page.NextAfter < page.LastSeq {
			select {
			case <-deadline:
				writeBody(w, http.StatusOK, eventsBody(page))
				return
			case <-s.closing:
				writeBody(w, http.StatusOK, eventsBody(page))
				return
			case <-ctx.Done():
				return
			default:
				continue
			}
		}
		if !waiting {
			waiting = true
			s.polling.Add(1)
		}
		select {
		case <-changed:
		case <-tokens.changed():
			if err := tokens.recheck(); err != nil {
				if kura.IsCode(err, kura.EUnauth) {
					w.Header().Set("WWW-Authenticate", `Bearer realm="kura"`)
					s.writeError(w, r, err)
				} else {
					// Other rights now: answer, and the next poll gets them.
					writeBody(w, http.StatusOK, eventsBody(page))
				}
				return
			}
		case <-deadline:
			writeBody(w, http.StatusOK, eventsBody(page))
			return
		case <-s.closing:
			writeBody(w, http.StatusOK, eventsBody(page))
			return
		case <-ctx.Done():
			return
		}
	}
}

// handleEventStream serves the feed as Server-Sent Events: "id" is the seq
// (so a reconnecting EventSource resumes through Last-Event-ID), "event" the
// type and "data" the pointer payload.
func (s *Server) handleEventStream(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, err := parseEventFilter(q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	restrictEvents(r, &f)
	if q.Get("after") == "" {
		if v := r.Header.Get("Last-Event-ID"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				s.writeError(w, r, kura.Invalid("Last-Event-ID", "Last-Event-ID must be an event seq"))
				return
			}
			f.After = n
		}
	}
	if q.Get("limit") == "" {
		f.Limit = 1000 // a page per read, not a cap on the stream
	}
	rc := http.NewResponseController(w)
	// A stream outlives the server's write timeout by design; each write
	// gets its own deadline instead.
	const writeWindow = 30 * time.Second
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(b []byte) bool {
		rc.SetWriteDeadline(time.Now().Add(writeWindow))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send([]byte(": kura event stream\n\n")) {
		return
	}
	ctx := r.Context()
	tokens := s.watchToken(r)
	keepalive := time.NewTicker(streamKeepalive)
	defer keepalive.Stop()
	var buf []byte
	for {
		changed := s.store.EventsChanged()
		page, err := s.store.ListEvents(ctx, f)
		if err != nil {
			if ctx.Err() == nil {
				// Headers are gone; say it in the stream, then end it.
				send([]byte("event: error\ndata: " + string(s.streamErrorBody(r, err)) + "\n\n"))
			}
			return
		}
		buf = buf[:0]
		if page.CompactedThrough > 0 {
			// A comment, which every SSE client skips: the stream has no
			// frame type for it, and a frame without a seq would break
			// clients that resume from the seq of each frame.
			buf = append(buf, ": compacted_through "...)
			buf = strconv.AppendInt(buf, page.CompactedThrough, 10)
			buf = append(buf, "\n\n"...)
		}
		for i := range page.Events {
			e := &page.Events[i]
			buf = append(buf, "id: "...)
			buf = strconv.AppendInt(buf, e.Seq, 10)
			buf = append(buf, "\nevent: "...)
			buf = append(buf, e.Type...)
			buf = append(buf, "\ndata: "...)
			buf = append(buf, e.Pointer()...)
			buf = append(buf, "\n\n"...)
		}
		if len(buf) > 0 && !send(buf) {
			return
		}
		f.After = page.NextAfter
		if page.NextAfter < page.LastSeq {
			select {
			case <-s.closing:
				return
			case <-ctx.Done():
				return
			default:
				continue
			}
		}
		select {
		case <-changed:
		case <-tokens.changed():
			if err := tokens.recheck(); err != nil {
				if kura.IsCode(err, kura.EUnauth) {
					send([]byte("event: error\ndata: " + string(s.streamErrorBody(r, err)) + "\n\n"))
				}
				// Other rights: the client reconnects (an EventSource does
				// so by itself) and its new stream carries them.
				return
			}
		case <-keepalive.C:
			if !send([]byte(": keepalive\n\n")) {
				return
			}
		case <-s.closing:
			return
		case <-ctx.Done():
			return
		}
	}
}

// tokenWatch lets a long poll or an event stream, authorised once when it
// started, notice a reload of the tokens file (SIGHUP) that revokes its
// token or changes what the token may see.
type tokenWatch struct {
	s  *Server
	r  *http.Request
	ch <-chan struct{}
}

func (s *Server) watchToken(r *http.Request) *tokenWatch {
	t := &tokenWatch{s: s, r: r}
	if t.recheck() != nil {
		// A reload came between the middleware's lookup and now: the
		// first wait wakes at once and finds it again.
		t.ch = closedChan
	}
	return t
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// changed is ready at the next reload; nil (never ready) without tokens.
func (t *tokenWatch) changed() <-chan struct{} { return t.ch }

// errRightsChanged ends a stream whose token now carries other rights.
var errRightsChanged = kura.Errorf(kura.EDenied, "the token's rights changed")

// recheck looks the request's token up again after a reload: nil while it
// still grants exactly what it did, unauthenticated once the tokens file
// no longer holds it, errRightsChanged when it grants something else now.
func (t *tokenWatch) recheck() error {
	t.ch = t.s.cfg.Tokens.Changed()
	if t.s.cfg.Tokens == nil {
		return nil // tokenless: nothing to revoke
	}
	p, ok := t.s.cfg.Tokens.Lookup(bearer(t.r))
	switch {
	case !ok:
		return kura.Errorf(kura.EUnauth, "the token was revoked (the tokens file no longer holds it)")
	case !p.Equal(auth.FromContext(t.r.Context())):
		return errRightsChanged
	}
	return nil
}

// CloseStreams ends long polls and event streams, so a graceful shutdown
// does not wait for clients that would otherwise stay connected.
func (s *Server) CloseStreams() {
	s.closeOnce.Do(func() { close(s.closing) })
}

// streamErrorBody is the error body sent inside a stream whose headers are
// already out; internal details stay in the log.
func (s *Server) streamErrorBody(r *http.Request, err error) []byte {
	var ke *kura.Error
	if !errors.As(err, &ke) {
		reqID := middleware.GetReqID(r.Context())
		s.log.Error("event stream failed", "req_id", reqID, "err", err)
		ke = &kura.Error{Code: kura.EInternal, Message: "internal error (request " + reqID + ")"}
	} else if ke.Code == kura.EInternal {
		s.log.Error("event stream failed", "req_id", middleware.GetReqID(r.Context()), "err", err, "cause", ke.Cause)
	}
	b, _ := json.Marshal(map[string]any{"error": ke})
	return b
}

// restrictEvents limits an event filter to what the caller may see, in the
// store query, so next_after paging still steps over what it skipped.
func restrictEvents(r *http.Request, f *kura.EventFilter) {
	p := auth.FromContext(r.Context())
	if p.AllProjects() && p.AllScopes() {
		return
	}
	f.Restricted, f.Projects, f.Scopes = true, p.Projects, p.Scopes
}
