package api

import (
	"context"
	"net/http"
	"time"

	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
)

// AdminStore is what the operations routes need from the store.
type AdminStore interface {
	Backup(ctx context.Context, dir string) (*kura.BackupManifest, error)
	CompactEvents(ctx context.Context, beforeSeq int64) (*kura.EventCompaction, error)
	EventsCompactedThrough(ctx context.Context) (int64, error)
	Import(ctx context.Context, in *kura.ImportInput, opts ...kura.WriteOption) (*kura.ImportResult, error)
}

// adminRoutes are the routes that reach every scope and project: backups
// hold everything, import writes any author. They are for admins whose
// token is not limited to some scopes or projects.
//
// Backup and compaction take no Idempotency-Key: a backup writes no data (a
// retry into the same path answers 409, and the directory's manifest.json
// says what the first call took; one without a path makes a new backup),
// and compaction is idempotent by nature (a repeat removes nothing more).
func (s *Server) adminRoutes() []route {
	return []route{
		bodyRoute[kura.ImportInput, *kura.ImportResult]{
			method: http.MethodPost, pattern: "/v1/admin/import", role: auth.RoleAdmin,
			check: needAll, answer: answer200,
			call: func(r *http.Request, in *kura.ImportInput, keep kura.WriteOption) (*kura.ImportResult, bool, error) {
				res, err := s.store.Import(r.Context(), in, keep)
				return res, false, err
			},
		}.route(s),
		{method: http.MethodPost, pattern: "/v1/admin/backup", role: auth.RoleAdmin, check: needAll, serve: s.handleBackup},
		{method: http.MethodPost, pattern: "/v1/admin/compact-events", role: auth.RoleAdmin, check: needAll, serve: s.handleCompactEvents},
	}
}

type backupRequest struct {
	Path string `json:"path"`
}

// handleBackup writes a consistent snapshot and its manifest into a
// directory inside the backup directory while writes go on.
func (s *Server) handleBackup(w http.ResponseWriter, r *http.Request) {
	var in backupRequest
	// No body at all asks, as {} does, for a backup named from the time.
	if r.ContentLength != 0 {
		if err := s.decodeJSON(w, r, &in); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if s.cfg.BackupDir == "" {
		s.writeError(w, r, kura.Errorf(kura.EUnavailable, "no backup directory is configured"))
		return
	}
	dir, err := backupTarget(s.cfg.BackupDir, in.Path, time.Now())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// A large database takes longer than the server's write timeout.
	http.NewResponseController(w).SetWriteDeadline(time.Time{})
	// A backup half written is worthless, so one whose caller hangs up
	// still finishes (its manifest.json says it is complete); only kurad
	// shutting down stops it, and then its files are removed.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	go func() {
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	start := time.Now()
	m, err := s.store.Backup(ctx, dir)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var size int64
	for _, f := range m.Files {
		size += f.Bytes
	}
	s.log.Info("backup written", "path", dir, "bytes", size, "last_event_seq", m.LastEventSeq, "duration", time.Since(start).Round(time.Millisecond))
	s.writeJSON(w, http.StatusOK, kura.Backup{Path: dir, BackupManifest: *m})
}

type compactRequest struct {
	BeforeSeq *int64 `json:"before_seq"`
}

// handleCompactEvents removes old, published rows of the event log.
func (s *Server) handleCompactEvents(w http.ResponseWriter, r *http.Request) {
	var in compactRequest
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	if in.BeforeSeq == nil {
		s.writeError(w, r, kura.Invalid("before_seq", "before_seq is required: events with a smaller seq are removed"))
		return
	}
	res, err := s.store.CompactEvents(r.Context(), *in.BeforeSeq)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, res)
}
