package store

import (
	"slices"
	"strings"
	"testing"
)

// TestPGToolTarget: what pg_dump and pg_restore get in their argv never
// holds the database password (every user of the host can read argv); the
// password goes into PGPASSWORD, and parameters only pgx knows, which
// libpq refuses, are left out.
func TestPGToolTarget(t *testing.T) {
	cases := []struct {
		url, target string
		env         []string
	}{
		{"postgres://kura@db:5432/kura?sslmode=disable", "postgres://kura@db:5432/kura?sslmode=disable", nil},
		{"postgres://kura:pw%40x@db/kura", "postgres://kura@db/kura", []string{"PGPASSWORD=pw@x"}},
		{"postgresql://kura@db/kura?password=pw&sslmode=require", "postgresql://kura@db/kura?sslmode=require", []string{"PGPASSWORD=pw"}},
		{"postgres://kura:@db/kura", "postgres://kura@db/kura", []string{"PGPASSWORD="}},
		{"postgres://db/kura?pool_max_conns=4&statement_cache_capacity=0&default_query_exec_mode=exec&application_name=kura", "postgres://db/kura?application_name=kura", nil},
	}
	for _, tc := range cases {
		target, env, err := pgToolTarget(tc.url)
		if err != nil || target != tc.target || !slices.Equal(env, tc.env) {
			t.Errorf("%s: got %q %q %v, want %q %q", tc.url, target, env, err, tc.target, tc.env)
		}
		if got := RedactDatabaseURL(tc.url); got != tc.target || strings.Contains(got, "pw") {
			t.Errorf("%s: redacted to %q, want %q", tc.url, got, tc.target)
		}
	}
	for _, bad := range []string{"mysql://db/kura", "host=db user=kura", "postgres://%zz"} {
		if _, _, err := pgToolTarget(bad); err == nil {
			t.Errorf("%s: got no error, want one", bad)
		}
	}
}
