package ui_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// postJSON sends a JSON body and wants status; it returns the decoded answer.
func postJSON(t *testing.T, base, path, body string, status int) map[string]any {
	t.Helper()
	return call(t, http.MethodPost, base, path, body, "", status)
}

// call makes one API request (token "" sends none) and wants status.
func call(t *testing.T, method, base, path, body, token string, status int) map[string]any {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" || method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, status, b)
	}
	var out map[string]any
	if len(b) > 0 && b[0] == '{' {
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return out
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
