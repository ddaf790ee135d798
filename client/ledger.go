package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// CreateLedger seals a new ledger over existing records (POST /v1/ledgers).
func (c *Client) CreateLedger(ctx context.Context, in LedgerInput) (*Ledger, error) {
	// nil slices would go out as null; the contract speaks of lists.
	if in.ParentIDs == nil {
		in.ParentIDs = []string{}
	}
	if in.RecordIDs == nil {
		in.RecordIDs = []string{}
	}
	var out Ledger
	if err := c.do(ctx, "create ledger", http.MethodPost, "/v1/ledgers", nil, in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetLedger returns the ledger with the given id, record ids included
// (GET /v1/ledgers/{id}).
func (c *Client) GetLedger(ctx context.Context, id string) (*Ledger, error) {
	if isEmpty(id) {
		return nil, errMissingID("ledger id")
	}
	var out Ledger
	if err := c.do(ctx, "get ledger", http.MethodGet, "/v1/ledgers/"+esc(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// LedgerRecords returns one page of a ledger's records, hydrated and in
// ledger order (GET /v1/ledgers/{id}/records). limit <= 0 and an empty
// cursor leave the server's defaults.
func (c *Client) LedgerRecords(ctx context.Context, id string, limit int, cursor string) (*RecordPage, error) {
	if isEmpty(id) {
		return nil, errMissingID("ledger id")
	}
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var out RecordPage
	if err := c.do(ctx, "ledger records", http.MethodGet, "/v1/ledgers/"+esc(id)+"/records", q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AllLedgerRecords follows LedgerRecords' cursors and returns every record of
// the ledger in order.
func (c *Client) AllLedgerRecords(ctx context.Context, id string) ([]Record, error) {
	var all []Record
	cursor := ""
	for {
		p, err := c.LedgerRecords(ctx, id, 1000, cursor)
		if err != nil {
			return nil, err
		}
		all = append(all, p.Records...)
		// An empty page with a cursor would loop for ever on a broken
		// server; stop instead.
		if p.NextCursor == "" || p.NextCursor == cursor || len(p.Records) == 0 {
			return all, nil
		}
		cursor = p.NextCursor
	}
}

// VerifyLedger asks kurad to recompute and check a ledger
// (GET /v1/ledgers/{id}/verify). A failed verification is not an error: it
// is an answer with OK false and the mismatches.
func (c *Client) VerifyLedger(ctx context.Context, id string) (*Verification, error) {
	if isEmpty(id) {
		return nil, errMissingID("ledger id")
	}
	var out Verification
	if err := c.do(ctx, "verify ledger", http.MethodGet, "/v1/ledgers/"+esc(id)+"/verify", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Diff compares the record sets of ledgers a and b
// (GET /v1/ledgers/{a}/diff/{b}): Added is in b only, Removed in a only.
func (c *Client) Diff(ctx context.Context, a, b string) (*Diff, error) {
	if isEmpty(a) || isEmpty(b) {
		return nil, errMissingID("ledger id")
	}
	var out Diff
	if err := c.do(ctx, "diff ledgers", http.MethodGet, "/v1/ledgers/"+esc(a)+"/diff/"+esc(b), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Proof returns the RFC 6962 inclusion proof of a record in a ledger
// (GET /v1/ledgers/{id}/proof/{record_id}); check it with VerifyProof.
func (c *Client) Proof(ctx context.Context, ledgerID, recordID string) (*Proof, error) {
	if isEmpty(ledgerID) {
		return nil, errMissingID("ledger id")
	}
	if isEmpty(recordID) {
		return nil, errMissingID("record id")
	}
	var out Proof
	if err := c.do(ctx, "ledger proof", http.MethodGet, "/v1/ledgers/"+esc(ledgerID)+"/proof/"+esc(recordID), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
