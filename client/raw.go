package client

import (
	"net/http"
	"net/url"
)

// Do sends a request the caller built, for adapters that pass kurad's
// answers on rather than decode them (the MCP tools of "kura mcp"):
// req.URL holds the path and query (/v1/records/...), resolved against the
// client's base URL, and the client's token is added. The answer comes back
// as kurad wrote it, error bodies included; closing its body is the
// caller's job.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	u, err := url.Parse(c.base + req.URL.EscapedPath())
	if err != nil {
		return nil, err
	}
	u.RawQuery = req.URL.RawQuery
	req.URL = u
	req.Host = u.Host
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return c.http.Do(req)
}
