package api_test

import (
	"testing"

	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/store"
)

// TestAPI_InfoSchemaVersionIsTheEngines: /v1/info names the schema in the
// numbering of the store it runs on.
func TestAPI_InfoSchemaVersionIsTheEngines(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{})
	c := &apiClient{tb: t, base: d.BaseURL()}
	st, m, raw := c.get("/v1/info")
	want := store.SchemaVersion
	if kuradtest.Store() == kuradtest.StorePostgres {
		want = store.PGSchemaVersion
	}
	if got, _ := m["schema_version"].(float64); st != 200 || int(got) != want {
		t.Fatalf("/v1/info: %d %s, want schema_version %d", st, raw, want)
	}
}
