package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// RecordListOptions filters and pages GET /v1/records. Zero values are left
// out of the query: the server's defaults apply (limit 100, no filter).
type RecordListOptions struct {
	Type     string // record type, e.g. "agent.thought"
	AuthorID string // e.g. "agent:bmo"
	Since    string // RFC 3339; created_at >= Since
	Until    string // RFC 3339; created_at < Until
	Limit    int    // page size, at most 1000
	Cursor   string // NextCursor of the previous page
}

func (o RecordListOptions) query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("type", o.Type)
	set("author_id", o.AuthorID)
	set("since", o.Since)
	set("until", o.Until)
	set("cursor", o.Cursor)
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return q
}

// RecordPage is one page of records; NextCursor is empty on the last page.
type RecordPage struct {
	Records    []Record `json:"records"`
	NextCursor string   `json:"next_cursor,omitempty"`
}

// PutRecord writes one record (POST /v1/records). When a record with the same
// hash already exists the server answers 200 with that record and
// Deduplicated set; that is a success too.
func (c *Client) PutRecord(ctx context.Context, in RecordInput) (*Record, error) {
	var out Record
	if err := c.do(ctx, "put record", http.MethodPost, "/v1/records", nil, in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PutRecords writes records all or nothing, in one transaction
// (POST /v1/records/batch), and returns them in input order.
func (c *Client) PutRecords(ctx context.Context, in []RecordInput) ([]Record, error) {
	if in == nil {
		// The server expects a list; null would be a malformed body.
		in = []RecordInput{}
	}
	body := struct {
		Records []RecordInput `json:"records"`
	}{in}
	var out struct {
		Records []Record `json:"records"`
	}
	if err := c.do(ctx, "put records", http.MethodPost, "/v1/records/batch", nil, body, &out); err != nil {
		return nil, err
	}
	return out.Records, nil
}

// GetRecord returns the record with the given id (GET /v1/records/{id}).
func (c *Client) GetRecord(ctx context.Context, id string) (*Record, error) {
	if isEmpty(id) {
		return nil, errMissingID("record id")
	}
	var out Record
	if err := c.do(ctx, "get record", http.MethodGet, "/v1/records/"+esc(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetRecordByHash returns the record whose hash (the dedup identity) is hash
// (GET /v1/records/by-hash/{hash}).
func (c *Client) GetRecordByHash(ctx context.Context, hash string) (*Record, error) {
	if isEmpty(hash) {
		return nil, errMissingID("record hash")
	}
	var out Record
	if err := c.do(ctx, "get record by hash", http.MethodGet, "/v1/records/by-hash/"+esc(hash), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListRecords returns one page of records, oldest first (GET /v1/records).
func (c *Client) ListRecords(ctx context.Context, opts RecordListOptions) (*RecordPage, error) {
	var out RecordPage
	if err := c.do(ctx, "list records", http.MethodGet, "/v1/records", opts.query(), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
