package api

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The tests in this file read docs/openapi.yaml as YAML proper (with
// go.yaml.in/yaml/v3, which only the tests use), where the ones in
// openapi_test.go read it by its indentation: a $ref may sit in a flow
// mapping, and resolving it means walking the document.

// openAPIRoot parses docs/openapi.yaml and returns its top mapping.
func openAPIRoot(t *testing.T) *yaml.Node {
	t.Helper()
	b, err := os.ReadFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return parseYAMLRoot(t, b)
}

func parseYAMLRoot(t *testing.T, b []byte) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("parse: %v", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		t.Fatal("the document is not one mapping")
	}
	return doc.Content[0]
}

// yamlChild is the value under key in a mapping, or the item at a decimal
// index in a sequence; nil when there is none.
func yamlChild(n *yaml.Node, key string) *yaml.Node {
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.AliasNode:
		return yamlChild(n.Alias, key)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i+1]
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i]
		}
	}
	return nil
}

// resolveRef follows a local reference ("#/components/schemas/Id": a URI
// fragment holding an RFC 6901 JSON pointer) from root. It returns nil for
// a reference that leads nowhere or is not local: the document is one
// file and refers to nothing outside it.
func resolveRef(root *yaml.Node, ref string) *yaml.Node {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	ptr, err := url.PathUnescape(frag)
	if err != nil {
		return nil
	}
	if ptr == "" {
		return root
	}
	rest, ok := strings.CutPrefix(ptr, "/")
	if !ok {
		return nil
	}
	n := root
	for _, tok := range strings.Split(rest, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if n = yamlChild(n, tok); n == nil {
			return nil
		}
	}
	return n
}

// unresolvedRefs walks the whole document and returns how many $ref it
// holds and a line for each that is not a string resolving in root.
func unresolvedRefs(root *yaml.Node) (n int, bad []string) {
	var walk func(*yaml.Node)
	walk = func(x *yaml.Node) {
		if x.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(x.Content); i += 2 {
				k, v := x.Content[i], x.Content[i+1]
				if k.Value != "$ref" {
					continue
				}
				n++
				switch {
				case v.Kind != yaml.ScalarNode:
					bad = append(bad, fmt.Sprintf("line %d: $ref is not a string", v.Line))
				case resolveRef(root, v.Value) == nil:
					bad = append(bad, fmt.Sprintf("line %d: $ref %q does not resolve", v.Line, v.Value))
				}
			}
		}
		for _, c := range x.Content {
			walk(c)
		}
	}
	walk(root)
	return n, bad
}

// TestOpenAPI_RefsResolve fails on any $ref of docs/openapi.yaml that does
// not lead to a node of the document (Redocly's no-unresolved-refs): one
// named #/components/schemas/ID where the schema is Id had slipped in.
func TestOpenAPI_RefsResolve(t *testing.T) {
	t.Parallel()
	n, bad := unresolvedRefs(openAPIRoot(t))
	for _, b := range bad {
		t.Error(b)
	}
	if n < 300 {
		t.Fatalf("found %d $ref; the walk is broken", n)
	}

	t.Run("CatchesABrokenRef", func(t *testing.T) {
		t.Parallel()
		root := parseYAMLRoot(t, []byte(`paths:
  /a/{id}:
    get:
      parameters:
        - {name: id, in: path, schema: {$ref: "#/components/schemas/ID"}}
        - $ref: "#/components/parameters/Limit"
        - $ref: "#/paths/~1a~1%7Bid%7D/get/parameters/1"
        - $ref: "other.yaml#/components/schemas/Id"
        - $ref: {x: 1}
components:
  parameters:
    Limit: {name: limit, in: query}
  schemas:
    Id: {type: string}
`))
		n, bad := unresolvedRefs(root)
		want := []string{
			`line 5: $ref "#/components/schemas/ID" does not resolve`,
			`line 8: $ref "other.yaml#/components/schemas/Id" does not resolve`,
			`line 9: $ref is not a string`,
		}
		if n != 5 || !slices.Equal(bad, want) {
			t.Errorf("got %d refs, %q; want 5 and %q", n, bad, want)
		}
	})
}

// TestOpenAPI_ExamplesHaveTheirFields checks the part of what Redocly's
// no-invalid-schema-examples and no-invalid-media-type-examples ask that a
// reader trips on: an example of an object schema (a component's examples,
// and a request or response example whose schema is a $ref) has every
// property the schema requires, and none a closed schema
// (additionalProperties: false) does not list. The Ledger example had
// lost parent_hashes when the field became required.
func TestOpenAPI_ExamplesHaveTheirFields(t *testing.T) {
	t.Parallel()
	root := openAPIRoot(t)
	checked := 0
	check := func(where string, schema, ex *yaml.Node) {
		if schema == nil || ex == nil || ex.Kind != yaml.MappingNode {
			return
		}
		checked++
		has := map[string]bool{}
		for i := 0; i+1 < len(ex.Content); i += 2 {
			has[ex.Content[i].Value] = true
		}
		if req := yamlChild(schema, "required"); req != nil {
			for _, r := range req.Content {
				if !has[r.Value] {
					t.Errorf("%s (line %d): the example lacks required %s", where, ex.Line, r.Value)
				}
			}
		}
		if ap := yamlChild(schema, "additionalProperties"); ap != nil && ap.Value == "false" {
			props := yamlChild(schema, "properties")
			for k := range has {
				if yamlChild(props, k) == nil {
					t.Errorf("%s (line %d): the example has %s, which the schema does not allow", where, ex.Line, k)
				}
			}
		}
	}
	schemas := yamlChild(yamlChild(root, "components"), "schemas")
	for i := 0; i+1 < len(schemas.Content); i += 2 {
		name, s := schemas.Content[i].Value, schemas.Content[i+1]
		if exs := yamlChild(s, "examples"); exs != nil && exs.Kind == yaml.SequenceNode {
			for j, ex := range exs.Content {
				check(fmt.Sprintf("components.schemas.%s.examples[%d]", name, j), s, ex)
			}
		}
		check("components.schemas."+name+".example", s, yamlChild(s, "example"))
	}
	// Every media type with a $ref schema, wherever it is (request
	// bodies, responses, components).
	var walk func(path string, x *yaml.Node)
	walk = func(path string, x *yaml.Node) {
		if x.Kind != yaml.MappingNode {
			for i, c := range x.Content {
				walk(fmt.Sprintf("%s[%d]", path, i), c)
			}
			return
		}
		if ref := yamlChild(yamlChild(x, "schema"), "$ref"); ref != nil && (yamlChild(x, "example") != nil || yamlChild(x, "examples") != nil) {
			s := resolveRef(root, ref.Value)
			check(path+".example", s, yamlChild(x, "example"))
			if exs := yamlChild(x, "examples"); exs != nil && exs.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(exs.Content); i += 2 {
					check(path+".examples."+exs.Content[i].Value, s, yamlChild(exs.Content[i+1], "value"))
				}
			}
		}
		for i := 0; i+1 < len(x.Content); i += 2 {
			walk(path+"."+x.Content[i].Value, x.Content[i+1])
		}
	}
	walk("", root)
	if checked < 40 {
		t.Fatalf("checked %d examples; the walk is broken", checked)
	}
}
