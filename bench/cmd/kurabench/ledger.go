package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// bigBody is the --max-body-bytes the verify phase falls back to when a
// 100,000-id ledger create is refused as too large (ids alone are ~3.9 MB).
const bigBody = "16777216"

// errTooLarge marks a 413 from POST /v1/ledgers.
var errTooLarge = errors.New("413 too_large")

// hydratePhase times reading every record of a 10,000-record ledger, page
// by page, as a worker rehydrating its context would.
func (b *bench) hydratePhase(ctx context.Context) (*PhaseResult, error) {
	n := b.cfg.hydrateN
	res := &PhaseResult{
		Title:     fmt.Sprintf("hydrate a %d-record ledger (limit=1000 pages)", n),
		Metric:    "ms",
		LatencyOf: "full hydrate: HTTP time of every page (request to last body byte); the client's JSON decoding between pages is reported apart",
		DataDir:   "fresh kurad data dir for this phase",
		Params:    map[string]any{"records": n, "page_limit": 1000, "timed_hydrates": b.cfg.hydrateK},
	}
	k, err := b.startKurad(ctx, "hydrate")
	if err != nil {
		return res, err
	}
	defer b.stopKurad(k, res)
	lid, err := b.prepareLedger(ctx, k, "h", n, res)
	if err != nil {
		return res, err
	}
	// The first hydrate reads a cold cache and checks every record in
	// full; it is reported, not counted.
	t0 := time.Now()
	if _, _, err := b.hydrate(ctx, k, lid.ID, lid.RecordIDs, true); err != nil {
		return res, err
	}
	res.Params["first_hydrate_ms"] = round(ms(time.Since(t0)))

	var durs []time.Duration
	cpu := startCPU(k.pid())
	for range b.cfg.hydrateK {
		t0 := time.Now()
		pages, decode, err := b.hydrate(ctx, k, lid.ID, lid.RecordIDs, false)
		wall := time.Since(t0)
		if err != nil {
			return res, err
		}
		// The pages are fetched one after another, so the decoding done
		// between them overlaps no server work: subtracting it leaves the
		// time kurad and the loopback took, which is what the target bounds.
		el := wall - decode
		durs = append(durs, el)
		res.Runs = append(res.Runs, Run{Rows: n, Requests: pages, Seconds: round(el.Seconds()), Ms: round(ms(el)), WallMs: round(ms(wall)), ClientDecodeMs: round(ms(decode))})
		b.logf("hydrate %.2f ms HTTP, %.2f ms wall (%d pages, client decode %.2f ms)", ms(el), ms(wall), pages, ms(decode))
	}
	res.CPU = *cpu.stop()
	res.summarizeLatency(durs)
	res.Params["median_wall_ms_incl_client_decode"] = round(medianOf(res.Runs, func(r Run) float64 { return r.WallMs }))
	res.Params["median_client_decode_ms"] = round(medianOf(res.Runs, func(r Run) float64 { return r.ClientDecodeMs }))
	return res, nil
}

// hydratePage is the part of a page the timed hydrates decode: the ids (to
// check order and count) and the cursor. Content is skipped, not kept.
type hydratePage struct {
	Records []struct {
		ID string `json:"id"`
	} `json:"records"`
	NextCursor string `json:"next_cursor"`
}

// fullPage is what the first hydrate checks: every record whole.
type fullPage struct {
	Records    []kura.Record `json:"records"`
	NextCursor string        `json:"next_cursor"`
}

// hydrate pages through GET /v1/ledgers/{id}/records and checks the records
// come back in ledger order, all of them; full also checks each is a whole
// record with its content. It returns the page count and the time spent
// decoding JSON in this process.
func (b *bench) hydrate(ctx context.Context, k *kuradProc, lid string, want []string, full bool) (int, time.Duration, error) {
	var decode time.Duration
	cursor, got, pages := "", 0, 0
	// Bounded: a cursor that never ends is reported, not followed forever.
	maxPages := len(want)/1000 + 3
	for ; pages < maxPages; pages++ {
		u := k.base + "/v1/ledgers/" + lid + "/records?limit=1000"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		st, body, err := b.do(ctx, http.MethodGet, u, nil)
		if err != nil {
			return pages, decode, fmt.Errorf("GET ledger records: %w", err)
		}
		if st != http.StatusOK {
			return pages, decode, httpError("GET /v1/ledgers/{id}/records", st, body)
		}
		t0 := time.Now()
		var ids []string
		var cur string
		if full {
			var page fullPage
			if err := json.Unmarshal(body, &page); err != nil {
				return pages, decode, fmt.Errorf("GET /v1/ledgers/{id}/records page %d: %w", pages+1, err)
			}
			for i, r := range page.Records {
				if !kura.ValidHash(r.Hash) || !kura.ValidHash(r.Seal) || r.Type != recordType || len(r.Content) == 0 || string(r.Content) == "null" || r.CreatedAt == "" {
					return pages, decode, fmt.Errorf("hydrate: record %d (%s) is not a whole record (hash, seal, type, content, created_at)", got+i, r.ID)
				}
				ids = append(ids, r.ID)
			}
			cur = page.NextCursor
		} else {
			var page hydratePage
			if err := json.Unmarshal(body, &page); err != nil {
				return pages, decode, fmt.Errorf("GET /v1/ledgers/{id}/records page %d: %w", pages+1, err)
			}
			for _, r := range page.Records {
				ids = append(ids, r.ID)
			}
			cur = page.NextCursor
		}
		decode += time.Since(t0)
		for i, id := range ids {
			if got+i >= len(want) || id != want[got+i] {
				return pages, decode, fmt.Errorf("hydrate: record %d is %q, want %q (ledger order)", got+i, id, at(want, got+i))
			}
		}
		got += len(ids)
		if cur == "" {
			if got != len(want) {
				return pages + 1, decode, fmt.Errorf("hydrate: %d records, the ledger has %d", got, len(want))
			}
			return pages + 1, decode, nil
		}
		if len(ids) == 0 {
			return pages + 1, decode, fmt.Errorf("hydrate: empty page %d with a next_cursor", pages+1)
		}
		cursor = cur
	}
	return pages, decode, fmt.Errorf("hydrate: next_cursor still set after %d pages of a %d-record ledger", pages, len(want))
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(past the end)"
}

// verifyPhase times GET /v1/ledgers/{id}/verify of a 100,000-record ledger.
func (b *bench) verifyPhase(ctx context.Context) (*PhaseResult, error) {
	n := b.cfg.verifyN
	res := &PhaseResult{
		Title:     fmt.Sprintf("verify a %d-record ledger", n),
		Metric:    "ms",
		LatencyOf: "one verify request",
		DataDir:   "fresh kurad data dir for this phase",
		Params:    map[string]any{"records": n, "timed_verifies": b.cfg.verifyK},
	}
	k, err := b.startKurad(ctx, "verify")
	if err != nil {
		return res, err
	}
	lid, err := b.prepareLedger(ctx, k, "v", n, res)
	if errors.Is(err, errTooLarge) {
		// API.md's default body limit is 4 MiB; a 100,000-id ledger is
		// close to it. Say so, and measure verify with a larger limit.
		res.Notes = append(res.Notes, fmt.Sprintf("POST /v1/ledgers with %d ids was refused with 413 at the default body limit; restarted kurad with --max-body-bytes %s on a fresh data dir", n, bigBody))
		b.stopKurad(k, res)
		if k, err = b.startKurad(ctx, "verify-bigbody", "--max-body-bytes", bigBody); err != nil {
			return res, err
		}
		res.Params["max_body_bytes"] = bigBody
		lid, err = b.prepareLedger(ctx, k, "v2", n, res)
	}
	defer b.stopKurad(k, res)
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	if err := b.verify(ctx, k, lid); err != nil {
		return res, err
	}
	res.Params["first_verify_ms"] = round(ms(time.Since(t0)))

	var durs []time.Duration
	cpu := startCPU(k.pid())
	for range b.cfg.verifyK {
		t0 := time.Now()
		err := b.verify(ctx, k, lid)
		el := time.Since(t0)
		if err != nil {
			return res, err
		}
		durs = append(durs, el)
		res.Runs = append(res.Runs, Run{Rows: n, Requests: 1, Seconds: round(el.Seconds()), Ms: round(ms(el))})
		b.logf("verify %.2f ms", ms(el))
	}
	res.CPU = *cpu.stop()
	res.summarizeLatency(durs)
	return res, nil
}

// verify calls GET /v1/ledgers/{id}/verify and checks it found the ledger
// intact: ok, every record checked, no mismatch, the root it computed equal
// to the stored one.
func (b *bench) verify(ctx context.Context, k *kuradProc, l *kura.Ledger) error {
	st, body, err := b.do(ctx, http.MethodGet, k.base+"/v1/ledgers/"+l.ID+"/verify", nil)
	if err != nil {
		return fmt.Errorf("GET /v1/ledgers/{id}/verify: %w", err)
	}
	if st != http.StatusOK {
		return httpError("GET /v1/ledgers/{id}/verify", st, body)
	}
	var v kura.Verification
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("GET /v1/ledgers/{id}/verify answer: %w", err)
	}
	if !v.OK || v.RecordsChecked != len(l.RecordIDs) || len(v.Mismatches) != 0 || v.ComputedRootHash != v.RootHash || v.RootHash != l.RootHash {
		s := string(body)
		if len(s) > 800 {
			s = s[:800] + "…"
		}
		return fmt.Errorf("verify of an untouched %d-record ledger did not come back clean (want ok, records_checked=%d, no mismatches, computed_root_hash = root_hash = %s): %s", len(l.RecordIDs), len(l.RecordIDs), l.RootHash, s)
	}
	return nil
}

// prepareLedger writes n records through the batch endpoint and creates a
// ledger over them; both steps are timed and reported as parameters, since
// they are the setup, not the figure.
func (b *bench) prepareLedger(ctx context.Context, k *kuradProc, stream string, n int, res *PhaseResult) (*kura.Ledger, error) {
	t0 := time.Now()
	ids, err := b.ingestBatch(ctx, k, stream, n, b.cfg.batchCli)
	if err != nil {
		return nil, err
	}
	el := time.Since(t0)
	res.Params["setup_ingest_rows_per_s"] = round(float64(n) / el.Seconds())

	in := kura.LedgerInput{Label: "bench-" + stream, ParentIDs: []string{}, RecordIDs: ids}
	body, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	res.Params["ledger_create_body_bytes"] = len(body)
	t0 = time.Now()
	st, rb, err := b.do(ctx, http.MethodPost, k.base+"/v1/ledgers", body)
	res.Params["ledger_create_ms"] = round(ms(time.Since(t0)))
	if err != nil {
		return nil, fmt.Errorf("POST /v1/ledgers: %w", err)
	}
	if st == http.StatusRequestEntityTooLarge {
		return nil, fmt.Errorf("%w: %w", errTooLarge, httpError("POST /v1/ledgers", st, rb))
	}
	if st != http.StatusCreated {
		return nil, httpError("POST /v1/ledgers", st, rb)
	}
	var l kura.Ledger
	if err := json.Unmarshal(rb, &l); err != nil {
		return nil, fmt.Errorf("POST /v1/ledgers answer: %w", err)
	}
	if !kura.ValidID(l.ID) || !kura.ValidHash(l.RootHash) || l.RecordCount != n {
		return nil, fmt.Errorf("POST /v1/ledgers answer: want an id, a root_hash and record_count %d: %.300s", n, rb)
	}
	// API.md has the 201 carry record_ids; hydrate must reproduce the
	// order that was sent.
	if len(l.RecordIDs) != n {
		res.Notes = append(res.Notes, fmt.Sprintf("POST /v1/ledgers answer lists %d record_ids for a %d-record ledger (API.md: the answer carries record_ids)", len(l.RecordIDs), n))
	} else {
		for i := range ids {
			if l.RecordIDs[i] != ids[i] {
				return nil, fmt.Errorf("POST /v1/ledgers answer: record_ids[%d] is %s, sent %s", i, l.RecordIDs[i], ids[i])
			}
		}
	}
	l.RecordIDs = ids
	return &l, nil
}
