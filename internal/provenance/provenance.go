// Package provenance shapes lineage answers out of the part of the lineage
// graph a query walked: trees with shared and truncated marks, depths,
// evidence, raw sources and derivations. It does no I/O: the store walks
// the edges in SQL and fetches what each vertex is, this package decides
// what the caller sees, so every rule here is testable without a database.
package provenance

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/kura-memory/kura/internal/kura"
)

// TextBytes bounds the text a lineage item carries for a node's summary or
// a record's content: enough to recognise it, small enough that a trace of
// thousands of items stays a few megabytes at most.
const TextBytes = 280

// MaxTraceItems caps the items of one trace direction. A depth-10 trace over
// a dense graph could otherwise list millions of paths; past the cap the
// answer says truncated instead of growing without bound.
const MaxTraceItems = 10_000

// Vertex is what the store knows about one vertex of the lineage: a node of
// the scope, or a record (Kind "record").
type Vertex struct {
	Kind       string
	ID         string
	Title      string // nodes
	Summary    string // nodes, cut to TextBytes
	Text       string // records, see RecordText
	Type       string // records
	AuthorID   string // records
	Redacted   bool   // records whose content was dropped
	SourceType string
	Confidence float64 // nodes
	Lifecycle  string  // nodes
	CreatedAt  string
}

// IsRecord reports whether v is a record.
func (v *Vertex) IsRecord() bool { return v.Kind == "record" }

// Ref is v's ref, kind:id.
func (v *Vertex) Ref() string { return v.Kind + ":" + v.ID }

// Item is v as a lineage item (without depth or children). Its Title or
// Text points into v.
func (v *Vertex) Item() kura.Lineage {
	l := kura.Lineage{Ref: v.Ref(), Kind: v.Kind, SourceType: v.SourceType, CreatedAt: v.CreatedAt}
	// The item points into v rather than copying: vertices are read-only
	// once fetched, and a copy would cost an allocation per item.
	if v.IsRecord() {
		l.Text, l.Type, l.AuthorID, l.Redacted = &v.Text, v.Type, v.AuthorID, v.Redacted
		l.SourceType = kura.RecordSourceType
		return l
	}
	l.Title, l.Summary = &v.Title, v.Summary
	return l
}

// Graph is the walked part of the lineage. Keys are the store's vertex
// keys (a node's nid, a record's negative vertex id); Next lists each
// vertex's neighbours in the direction walked: parents for a backward walk,
// children for a forward one.
type Graph struct {
	Root int64
	Next map[int64][]int64
	// More marks vertices whose neighbours were not read but are known to
	// exist: a walk to a depth limit asks the vertices at the limit only
	// whether they have any.
	More map[int64]bool
}

// hasNext reports whether v has neighbours, read or known.
func (g *Graph) hasNext(v int64) bool { return len(g.Next[v]) > 0 || g.More[v] }

// Depths returns the shortest distance from the root of every vertex
// reachable within limit steps (limit < 0: no limit). It is a breadth-first
// walk with a visited set, so a cyclic graph, which writes never create but
// a damaged table could hold, still terminates.
func (g *Graph) Depths(limit int) map[int64]int {
	d := make(map[int64]int, len(g.Next)+1) // about one entry per vertex
	d[g.Root] = 0
	level := []int64{g.Root}
	for step := 1; len(level) > 0 && (limit < 0 || step <= limit); step++ {
		var next []int64
		for _, v := range level {
			for _, n := range g.Next[v] {
				if _, seen := d[n]; !seen {
					d[n] = step
					next = append(next, n)
				}
			}
		}
		level = next
	}
	return d
}

// Tree builds the lineage tree below the root, depth levels deep. Each
// vertex is expanded once, at the first place depth-first order meets it at
// its shortest distance from the root; every other place shows it with
// Shared set and no children. Expanding at the shortest distance rather
// than at the first visit matters under a depth limit: a vertex first met
// through a long path would otherwise be cut there while a short path could
// have shown its sources. truncated reports a vertex at the limit with
// more lineage beyond it, or maxItems reached.
func Tree(g *Graph, vs map[int64]*Vertex, depth, maxItems int, forward bool) (items []kura.Lineage, truncated bool) {
	b := &builder{g: g, vs: vs, depth: depth, max: maxItems, forward: forward,
		min: g.Depths(depth), expanded: map[int64]bool{}, rank: rankVertices(vs)}
	return b.children(g.Root, 0), b.truncated
}

// rankVertices numbers the vertices in the order siblings are listed
// (compareVertex), so that each sibling list sorts by a number: a dense
// graph lists thousands of siblings, each vertex in many lists.
func rankVertices(vs map[int64]*Vertex) map[int64]int {
	keys := make([]int64, 0, len(vs))
	for k, v := range vs {
		if v != nil {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(x, y int64) int { return cmp.Or(compareVertex(vs[x], vs[y]), cmp.Compare(x, y)) })
	rank := make(map[int64]int, len(keys))
	for i, k := range keys {
		rank[k] = i
	}
	return rank
}

type builder struct {
	g         *Graph
	vs        map[int64]*Vertex
	depth     int
	max       int
	forward   bool
	min       map[int64]int
	expanded  map[int64]bool
	rank      map[int64]int // sibling order (rankVertices)
	count     int
	truncated bool
}

// children lists the neighbours of v (at depth d) as items, expanding them
// as Tree describes. The result is never nil: an expanded vertex without
// neighbours answers an empty list.
func (b *builder) children(v int64, d int) []kura.Lineage {
	out := []kura.Lineage{}
	for _, n := range b.sorted(b.g.Next[v]) {
		if b.count >= b.max {
			b.truncated = true
			return out
		}
		b.count++
		it := b.vs[n].Item()
		it.Depth = d + 1
		if b.expanded[n] || b.min[n] < d+1 {
			it.Shared = true
			out = append(out, it)
			continue
		}
		b.expanded[n] = true
		if d+1 >= b.depth {
			if b.g.hasNext(n) {
				it.Truncated = true
				b.truncated = true
			}
			out = append(out, it)
			continue
		}
		kids := b.children(n, d+1)
		if b.forward {
			it.Derived = kids
		} else {
			it.Sources = kids
		}
		out = append(out, it)
	}
	return out
}

// sorted returns the neighbours that have details, oldest first (then by
// kind and id), so a tree reads in the order things happened and is the same on
// every call. Neighbours without details are left out: the walk did not
// reach them (past its cap) or they are not in the scope.
func (b *builder) sorted(ns []int64) []int64 {
	type ranked struct {
		rank int
		key  int64
	}
	rs := make([]ranked, 0, len(ns))
	for _, n := range ns {
		if r, ok := b.rank[n]; ok {
			rs = append(rs, ranked{r, n})
		}
	}
	slices.SortFunc(rs, func(x, y ranked) int { return cmp.Compare(x.rank, y.rank) })
	out := make([]int64, 0, len(rs))
	for i, r := range rs {
		if i == 0 || r.key != rs[i-1].key {
			out = append(out, r.key)
		}
	}
	return out
}

// compareVertex orders by creation, then kind, then id. Comparing the
// parts rather than Ref() keeps string building out of a sort's inner loop
// (derived lists run to tens of thousands), strings.Compare reads each pair
// once where cmp.Compare may read it twice, and each part is compared only
// when the ones before it tie (cmp.Or would compare all three every time).
func compareVertex(a, b *Vertex) int {
	if c := strings.Compare(a.CreatedAt, b.CreatedAt); c != 0 {
		return c
	}
	if c := strings.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// reachedVertex is a vertex of a closure and its shortest distance from the
// root.
type reachedVertex struct {
	v *Vertex
	d int
}

// reached returns the vertices of g other than the root, with details, by
// shortest distance, then creation, kind and id.
func reached(g *Graph, vs map[int64]*Vertex) []reachedVertex {
	depths := g.Depths(-1)
	out := make([]reachedVertex, 0, len(depths))
	for k, d := range depths {
		if v := vs[k]; k != g.Root && v != nil {
			out = append(out, reachedVertex{v, d})
		}
	}
	slices.SortFunc(out, func(x, y reachedVertex) int {
		if x.d != y.d {
			return cmp.Compare(x.d, y.d)
		}
		return compareVertex(x.v, y.v)
	})
	return out
}

// Evidence lists what supports the root: the episodes, notes and records in
// its whole backward lineage (g walked backward), each once.
//
// Only those three kinds are evidence. Episodes record what happened, notes
// what was observed and records what was captured; the other kinds (belief,
// fact, decision, goal...) are conclusions drawn from such things. Counting
// a conclusion as evidence for another would count the evidence beneath it
// twice, so conclusions are walked through, not listed.
func Evidence(ref string, g *Graph, vs map[int64]*Vertex) *kura.Evidence {
	e := &kura.Evidence{Ref: ref, Evidence: kura.EvidenceSet{
		Episodes: []kura.EvidenceNode{}, Notes: []kura.EvidenceNode{}, RawEntries: []kura.RawEntry{}}}
	for _, r := range reached(g, vs) {
		v, d := r.v, r.d
		switch v.Kind {
		case "record":
			e.Evidence.RawEntries = append(e.Evidence.RawEntries, rawEntry(v, d))
		case "episode":
			e.Evidence.Episodes = append(e.Evidence.Episodes, evidenceNode(v, d))
			if d == 1 {
				e.DirectEpisodes++
			}
		case "note":
			e.Evidence.Notes = append(e.Evidence.Notes, evidenceNode(v, d))
		}
	}
	e.SourceRawEntries = len(e.Evidence.RawEntries)
	e.TotalEvidenceCount = len(e.Evidence.Episodes) + len(e.Evidence.Notes) + e.SourceRawEntries
	return e
}

// RawSources lists the records at the roots of the root's lineage (g walked
// backward). Records are never derived from anything, so every record
// reached is a root. A record traced itself is its own raw source: it is
// where its lineage starts, and answering nothing would read as "unknown
// origin".
func RawSources(ref string, g *Graph, vs map[int64]*Vertex) *kura.RawSources {
	out := &kura.RawSources{Ref: ref, RawSources: []kura.RawEntry{}}
	if v := vs[g.Root]; v != nil && v.IsRecord() {
		out.RawSources = append(out.RawSources, rawEntry(v, 0))
	}
	for _, r := range reached(g, vs) {
		if r.v.IsRecord() {
			out.RawSources = append(out.RawSources, rawEntry(r.v, r.d))
		}
	}
	out.Count = len(out.RawSources)
	return out
}

// Derived lists everything transitively derived from the root (g walked
// forward), complete, by shortest distance, then creation (then kind and
// id, so ties always come out in the same order).
func Derived(ref string, g *Graph, vs map[int64]*Vertex) *kura.Derived {
	order := reached(g, vs)
	out := &kura.Derived{Ref: ref, Derived: make([]kura.Lineage, len(order))}
	for i, r := range order {
		out.Derived[i] = r.v.Item()
		out.Derived[i].Depth = r.d
	}
	out.Count = len(out.Derived)
	return out
}

func evidenceNode(v *Vertex, d int) kura.EvidenceNode {
	return kura.EvidenceNode{Ref: v.Ref(), ID: v.ID, Title: v.Title, Summary: v.Summary, SourceType: v.SourceType,
		Confidence: v.Confidence, Lifecycle: v.Lifecycle, CreatedAt: v.CreatedAt, Depth: d}
}

func rawEntry(v *Vertex, d int) kura.RawEntry {
	return kura.RawEntry{Ref: v.Ref(), ID: v.ID, Type: v.Type, Text: v.Text, AuthorID: v.AuthorID,
		Redacted: v.Redacted, CreatedAt: v.CreatedAt, Depth: d}
}

// Cut returns s cut to at most n bytes on a rune boundary.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
