package store

import (
	"strings"
	"testing"
)

func TestRebind(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"SELECT ? , ?", "SELECT $1 , $2"},
		{"WHERE a = ?2 AND b = ?1 OR c = ?2", "WHERE a = $2 AND b = $1 OR c = $2"},
		{"SELECT '?' || ?", "SELECT '?' || $1"},
		{"SELECT 'it''s ?' , ?", "SELECT 'it''s ?' , $1"},
		{`SELECT "we?ird" FROM t WHERE x = ?`, `SELECT "we?ird" FROM t WHERE x = $1`},
		{"SELECT 1 -- why?\nWHERE x = ?", "SELECT 1 -- why?\nWHERE x = $1"},
		{"SELECT /* ? */ ?", "SELECT /* ? */ $1"},
		{"FROM a CROSS JOIN b ON b.x = a.x", "FROM a JOIN b ON b.x = a.x"},
		{"FROM a\n\tCROSS JOIN b ON b.x = a.x", "FROM a\n\tJOIN b ON b.x = a.x"},
		{"SELECT 'CROSS JOIN ' FROM t", "SELECT 'CROSS JOIN ' FROM t"},
		{"SELECT xCROSS JOIN y", "SELECT xCROSS JOIN y"},
		{"SELECT 'unterminated ?", "SELECT 'unterminated ?"},
	} {
		if got := rebind(c.in); got != c.want {
			t.Errorf("rebind(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzRebind: the rewrite never panics, never touches text without a
// placeholder or join to rewrite, and leaves no bare ? outside quotes.
func FuzzRebind(f *testing.F) {
	for _, s := range []string{"SELECT ?", "'?' ?1 \"?\"", "-- ?\n?", "/* ? */ ? CROSS JOIN x ON", "'", "?99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		got := rebindScan(q)
		if !strings.Contains(q, "?") && !strings.Contains(q, "CROSS JOIN") && got != q {
			t.Fatalf("rebindScan(%q) = %q changed text with nothing to rewrite", q, got)
		}
		if strings.Count(got, "?") > strings.Count(q, "?") {
			t.Fatalf("rebindScan(%q) = %q added placeholders", q, got)
		}
	})
}

// TestURLSetsPlanMode: a plan_cache_mode in the database URL is found in
// either form of it, a URL naming several hosts included.
func TestURLSetsPlanMode(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"postgres://kura@db/kura", false},
		{"postgresql://kura:p%40ss@db:5432/kura?sslmode=require", false},
		{"postgres://kura@db1:5432,db2:5432/kura?target_session_attrs=read-write", false},
		{"postgres://kura@db1:5432,db2:5432/kura?target_session_attrs=read-write&plan_cache_mode=auto", true},
		{"postgres://kura@db/kura?plan_cache_mode=auto", true},
		{"postgres://kura@db/kura?x=plan_cache_mode", false},
		{"host=db user=kura dbname=kura", false},
		{"host=db plan_cache_mode=auto", true},
	} {
		if got := urlSetsPlanMode(c.in); got != c.want {
			t.Errorf("urlSetsPlanMode(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// FuzzURLSetsPlanMode: any string is read without a panic, and a URL that
// gets a plan_cache_mode of its own is then said to name one.
func FuzzURLSetsPlanMode(f *testing.F) {
	for _, s := range []string{"postgres://kura@db/kura", "postgres://a,b/k?x=1", "host=db", "postgresql://?%zz", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		urlSetsPlanMode(dsn)
		if strings.HasPrefix(dsn, "postgres://") && !strings.ContainsAny(dsn, "?#%;") {
			if !urlSetsPlanMode(dsn + "?plan_cache_mode=auto") {
				t.Fatalf("%q with ?plan_cache_mode=auto: not found", dsn)
			}
		}
	})
}
