package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestVerify_LogStateFromInfo: whatever the ledger says, kura verify fails
// when kurad itself reports that a witness caught a rollback or a fork, and
// says so when kurad keeps no log instead of claiming a check. (A server
// stand-in: the detection itself is kurad's, tested with a real witness
// there.)
func TestVerify_LogStateFromInfo(t *testing.T) {
	t.Parallel()
	const id = "0193a000-0000-7000-8000-00000000000a"
	for _, tc := range []struct {
		info     string
		wantCode int
		want     string
	}{
		{`{"log_origin":"kura.test/x","log_vkey":"k","log":{"state":"rollback_detected","size":3}}`, exitFail, "FAILED log kura.test/x: kurad reports rollback_detected"},
		{`{"log_origin":"kura.test/x","log_vkey":"k","log":{"state":"fork_detected","size":3}}`, exitFail, "FAILED log kura.test/x: kurad reports fork_detected"},
		{`{"public_key":"ed25519:00"}`, exitOK, "log: not checked (kurad keeps no log)"},
		{`{"log_origin":"kura.test/x","log_vkey":"k","log":{"state":"off"}}`, exitOK, "log: not checked"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("GET /v1/ledgers/"+id+"/verify", func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, `{"ok":true,"ledger_id":%q,"records_checked":1,"signature_ok":true,"mismatches":[]}`, id)
			})
			mux.HandleFunc("GET /v1/info", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, tc.info) })
			mux.HandleFunc("GET /v1/log/checkpoint", func(w http.ResponseWriter, r *http.Request) {
				t.Error("a detected rollback needs no checkpoint to fail")
				w.WriteHeader(http.StatusInternalServerError)
			})
			srv := httptest.NewServer(mux)
			defer srv.Close()
			out, errOut, code := runKuraEnv(t, srv.URL, map[string]string{"KURA_STATE_DIR": t.TempDir()}, "verify", "ledger:"+id)
			if code != tc.wantCode || !strings.HasPrefix(out, "OK ledger "+id) || !strings.Contains(out, tc.want) {
				t.Errorf("got exit %d, %q %q, want %d and %q", code, out, errOut, tc.wantCode, tc.want)
			}
		})
	}
}
