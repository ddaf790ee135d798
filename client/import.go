package client

import (
	"context"
	"net/http"
)

// Import recreates records, ledgers and sessions exported from a kurad, with
// their ids and times (POST /v1/admin/import, admin only). kurad recomputes
// every hash from the given fields and refuses mismatches; what is already
// there with the same hash is counted as Skipped. It takes the records
// first, then the ledgers in the order given (each after its parents and
// records, in this request or an earlier one), then the sessions. The body
// limit of kurad applies: split large imports into requests of a few
// megabytes.
func (c *Client) Import(ctx context.Context, in ImportInput) (*ImportResult, error) {
	// The server expects lists; nil slices would go out as null.
	if in.Records == nil {
		in.Records = []Record{}
	}
	if in.Ledgers == nil {
		in.Ledgers = []Ledger{}
	}
	if in.Sessions == nil {
		in.Sessions = []Session{}
	}
	var out ImportResult
	if err := c.do(ctx, "import", http.MethodPost, "/v1/admin/import", nil, in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
