package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/kura-memory/kura/internal/pgtest"
	"github.com/kura-memory/kura/internal/store"
)

// TestJSONEach_RowsOnPostgreSQL: PostgreSQL's json_each (written for the
// store's statements, migrations_pg/0004) gives the rows they read of
// SQLite's: an array's elements by index, in order, as text (numbers as
// written, null as NULL, an object as its JSON); an object's members (in
// jsonb's key order: no statement reads an object's order); nothing for a
// scalar.
func TestJSONEach_RowsOnPostgreSQL(t *testing.T) {
	t.Parallel()
	db := mustOpenConfig(t, store.Config{DatabaseURL: pgtest.URL(t)})
	for _, c := range []struct {
		doc  string
		want [][2]string
	}{
		{`[]`, nil},
		{`{}`, nil},
		{`"s"`, nil},
		{`[3,"a b",null,1.50,true]`, [][2]string{{"0", "3"}, {"1", "a b"}, {"2", "<null>"}, {"3", "1.50"}, {"4", "true"}}},
		{`[12,11,10,9,8,7,6,5,4,3,2,1]`, [][2]string{{"0", "12"}, {"1", "11"}, {"2", "10"}, {"3", "9"}, {"4", "8"}, {"5", "7"},
			{"6", "6"}, {"7", "5"}, {"8", "4"}, {"9", "3"}, {"10", "2"}, {"11", "1"}}},
		{`["x",["y"]]`, [][2]string{{"0", "x"}, {"1", `["y"]`}}},
		{`{"b":1,"a":"x","c":null}`, [][2]string{{"a", "x"}, {"b", "1"}, {"c", "<null>"}}},
	} {
		got, err := db.JSONEach(context.Background(), c.doc)
		if err != nil {
			t.Fatalf("json_each(%s): %v", c.doc, err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("json_each(%s) = %q, want %q", c.doc, got, c.want)
		}
	}
}

// TestPGReadPool_PlansWithTheValues: searches on PostgreSQL are planned
// for their words and scope (a generic plan read a scope's every document
// to count one word), unless the database URL says how to plan; the
// setting ends with the read (nothing of it is left on the pooled
// connection).
func TestPGReadPool_PlansWithTheValues(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	ctx := context.Background()
	for _, c := range []struct{ url, want string }{
		{u, "force_custom_plan"},
		{u + "&plan_cache_mode=force_generic_plan", "force_generic_plan"},
	} {
		db := mustOpenConfig(t, store.Config{DatabaseURL: c.url})
		got, err := db.ReadSetting(ctx, "plan_cache_mode")
		if err != nil || got != c.want {
			t.Errorf("%s: plan_cache_mode %q, %v; want %q", c.url, got, err, c.want)
		}
	}
	db := mustOpenConfig(t, store.Config{DatabaseURL: u})
	if _, err := db.ReadSetting(ctx, "plan_cache_mode"); err != nil {
		t.Fatal(err)
	}
	if got, err := db.PoolSetting(ctx, "plan_cache_mode"); err != nil || got != "auto" {
		t.Errorf("after a read, the pooled connection's plan_cache_mode is %q, %v; want PostgreSQL's default, auto", got, err)
	}
}
