// Package layers_test holds the import rule of docs/architecture.md as a
// test: kura (domain nouns, stdlib only) ← pure rules (no SQL, HTTP or
// NATS) ← adapters (never each other) ← wiring (daemon, cmd).
package layers_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/kura-memory/kura/"

// layer of every package of the module, by its path under the module.
var layer = map[string]int{
	"internal/kura": domain,

	"kurahash":            pure,
	"internal/admission":  pure,
	"internal/provenance": pure,
	"internal/kb":         pure,
	"internal/recall":     pure,
	"internal/auth":       pure, // tokens and principals: a file's rules, no I/O but reading it
	"internal/keys":       pure, // the signing key: a file, no SQL, HTTP or NATS
	"internal/dirlock":    pure, // a lock file
	"internal/atomicfile": pure, // a file replaced whole, durably
	"internal/ui":         pure, // the console's embedded files (the API sends them)

	"internal/api":        adapter,
	"internal/store":      adapter,
	"internal/bus":        adapter,
	"internal/mcp":        adapter,
	"internal/embed":      adapter,
	"internal/checkpoint": adapter, // signs checkpoints, asks witnesses over HTTP
	"internal/witness":    adapter, // kura witness: follows logs over HTTP and NATS
	"client":              adapter, // the Go client: HTTP to kurad, nothing of kurad's own

	"internal/daemon":        wiring,
	"internal/kuradtest":     wiring,
	"cmd/kurad":              wiring,
	"cmd/kura":               wiring,
	"examples/worker":        wiring,
	"bench/cmd/kurabench":    wiring,
	"bench/cmd/kurasoak":     wiring,
	"bench/internal/evalset": pure,
	"reliability":            wiring,
	"deploy/grafana":         wiring,
	"deploy/prometheus":      wiring,
	// Test support: stand-ins and fixtures the tests of several packages use.
	"internal/embed/embedtest": wiring,
	"internal/kb/kbtest":       wiring,
	"internal/pgtest":          wiring, // a real PostgreSQL server for tests and the benchmark
	"internal/scaleout":        wiring, // tests only: kurads sharing a database
	"internal/sqlitetest":      wiring, // a migrated SQLite file to copy, made once per test binary
	"bench/internal/bm25":      pure,
	"internal/testwait":        pure, // the one polling helper: stdlib only, so every layer's tests may use it
	"internal/freeport":        pure, // a port for a server named before it starts: stdlib only
}

const (
	domain = iota
	pure
	adapter
	wiring
)

// only names packages that, besides wiring, only the listed packages may
// import, whatever their layers say. auth sits with the pure rules (no I/O
// but its file), so "adapters never import each other" lets every adapter
// reach it; but tokens and principals are the HTTP edge's: the API checks
// them and hands the store the caller's identity as a field
// (docs/architecture.md), so neither the store nor another adapter may
// know a caller's token.
var only = map[string][]string{
	"internal/auth": {"internal/api"},
}

// engines are the outside packages only adapters (and wiring) may use.
var engines = []string{"database/sql", "modernc.org/sqlite", "github.com/jackc/pgx/", "net/http", "github.com/nats-io/", "github.com/go-chi/", "github.com/modelcontextprotocol/"}

// generator reports whether f is built only by hand (//go:build ignore).
func generator(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() > f.Package {
			break
		}
		for _, c := range g.List {
			if strings.HasPrefix(c.Text, "//go:build") && strings.Contains(c.Text, "ignore") {
				return true
			}
		}
	}
	return false
}

func TestLayers(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		if rel == "internal/layers" {
			return nil
		}
		from, ok := layer[rel]
		if !ok {
			if !seen[rel] {
				t.Errorf("package %s has no layer in this test's table: give it one", rel)
				seen[rel] = true
			}
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if generator(f) {
			return nil // a go:generate program, not part of the package
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := filepath.Base(path)
			if to, ok := strings.CutPrefix(p, module); ok {
				tl, known := layer[to]
				switch {
				case !known:
					t.Errorf("%s/%s imports %s, which has no layer", rel, name, to)
				case from == domain:
					t.Errorf("%s/%s imports %s: the domain package uses the standard library only", rel, name, to)
				case tl > from || (tl == from && from == adapter):
					t.Errorf("%s/%s imports %s: a layer imports only layers below it (adapters never each other)", rel, name, to)
				case from != wiring && only[to] != nil && !slices.Contains(only[to], rel):
					t.Errorf("%s/%s imports %s: only %s (and wiring) may", rel, name, to, strings.Join(only[to], ", "))
				}
				continue
			}
			if from <= pure && slices.ContainsFunc(engines, func(e string) bool { return p == e || strings.HasPrefix(p, e) }) {
				if from == domain || !strings.HasPrefix(rel, "bench/") {
					t.Errorf("%s/%s imports %s: SQL, HTTP and NATS belong to adapters", rel, name, p)
				}
			}
			if from == domain && strings.Contains(p, ".") {
				t.Errorf("%s/%s imports %s: the domain package uses the standard library only", rel, name, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
