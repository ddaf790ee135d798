package client_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/kura-memory/kura/client"
)

// TestClient_Do checks what an adapter's request becomes: the path and
// query resolved against the base URL (a path prefix behind a proxy
// included, escapes kept), the token added, the answer passed on as is.
func TestClient_Do(t *testing.T) {
	t.Parallel()
	type seen struct{ rawPath, query, auth string }
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Authorization")}
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, `{"error":{"code":"x","message":"y"}}`)
	}))
	defer srv.Close()
	c := client.New(srv.URL+"/kura/", client.WithToken("t0k"))
	req, err := http.NewRequest("GET", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL, _ = url.Parse("/v1/records/a%2Fb?q=1+2")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTeapot || string(b) != `{"error":{"code":"x","message":"y"}}` {
		t.Errorf("got %d %s, want the answer as sent", resp.StatusCode, b)
	}
	s := <-got
	if want := (seen{"/kura/v1/records/a%2Fb", "q=1+2", "Bearer t0k"}); s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
}
