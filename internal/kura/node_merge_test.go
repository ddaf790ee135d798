package kura_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
)

func TestMergeNode(t *testing.T) {
	s := func(v string) *string { return &v }
	f := func(v float64) *float64 { return &v }
	const now = "2026-01-02T03:04:05Z"
	old := &kura.Node{Ref: "fact:a", Scope: "p", Kind: "fact", ID: "a", Title: "T", Summary: "S",
		Lifecycle: "active", Authority: "verified", Confidence: 0.9, TargetFiles: []string{"x.go"},
		PayloadRef: s("blob:1"), Owner: s("alice"), SourceType: "doc", DerivedFrom: []string{"fact:b"},
		Metadata: json.RawMessage(`{"k":1}`), Version: 3, CreatedAt: "2025-01-01T00:00:00Z", UpdatedAt: "2025-06-01T00:00:00Z", WrittenBy: "alice"}
	tests := []struct {
		name        string
		old         *kura.Node
		in          kura.NodeInput
		want        func(n *kura.Node) // edits the expected node, from old or the defaults
		wantLineage bool
		wantField   string // non-empty: an invalid error on this field
	}{
		{name: "NewTakesDefaults", in: kura.NodeInput{Kind: "fact", ID: "a", Summary: s("S"), Writer: kura.Writer{Identity: "bob"}},
			want: func(n *kura.Node) {
				*n = kura.Node{Ref: "fact:a", Scope: "p", Kind: "fact", ID: "a", Summary: "S", Lifecycle: "candidate",
					Authority: "unknown", Confidence: 0.5, SourceType: "direct_experience", TargetFiles: []string{},
					DerivedFrom: []string{}, Metadata: json.RawMessage("{}"), Version: 1, CreatedAt: now, UpdatedAt: now, WrittenBy: "bob", Owner: s("bob")}
			}},
		// A non-admin's node is its own, so that it may write it again.
		{name: "NewByWriterEmptyOwnerIsTheWriters", in: kura.NodeInput{Kind: "fact", ID: "a", Summary: s("S"), Owner: s(""), Writer: kura.Writer{Identity: "bob"}},
			want: func(n *kura.Node) {
				*n = kura.Node{Ref: "fact:a", Scope: "p", Kind: "fact", ID: "a", Summary: "S", Lifecycle: "candidate",
					Authority: "unknown", Confidence: 0.5, SourceType: "direct_experience", TargetFiles: []string{},
					DerivedFrom: []string{}, Metadata: json.RawMessage("{}"), Version: 1, CreatedAt: now, UpdatedAt: now, WrittenBy: "bob", Owner: s("bob")}
			}},
		{name: "NewByWriterNamedOwnerKept", in: kura.NodeInput{Kind: "fact", ID: "a", Summary: s("S"), Owner: s("alice"), Writer: kura.Writer{Identity: "bob"}},
			want: func(n *kura.Node) {
				*n = kura.Node{Ref: "fact:a", Scope: "p", Kind: "fact", ID: "a", Summary: "S", Lifecycle: "candidate",
					Authority: "unknown", Confidence: 0.5, SourceType: "direct_experience", TargetFiles: []string{},
					DerivedFrom: []string{}, Metadata: json.RawMessage("{}"), Version: 1, CreatedAt: now, UpdatedAt: now, WrittenBy: "bob", Owner: s("alice")}
			}},
		{name: "NewByAdminMayHaveNoOwner", in: kura.NodeInput{Kind: "fact", ID: "a", Summary: s("S"), Writer: kura.Writer{Identity: "root", Admin: true}},
			want: func(n *kura.Node) {
				*n = kura.Node{Ref: "fact:a", Scope: "p", Kind: "fact", ID: "a", Summary: "S", Lifecycle: "candidate",
					Authority: "unknown", Confidence: 0.5, SourceType: "direct_experience", TargetFiles: []string{},
					DerivedFrom: []string{}, Metadata: json.RawMessage("{}"), Version: 1, CreatedAt: now, UpdatedAt: now, WrittenBy: "root"}
			}},
		{name: "NewNeedsSummary", in: kura.NodeInput{Kind: "fact", ID: "a"}, wantField: "nodes[2].summary"},
		{name: "NewDerivedDeduped", in: kura.NodeInput{Kind: "fact", ID: "a", Summary: s("S"), DerivedFrom: []string{"fact:b", "fact:b", "fact:c"}},
			want: func(n *kura.Node) {
				*n = kura.Node{Ref: "fact:a", Scope: "p", Kind: "fact", ID: "a", Summary: "S", Lifecycle: "candidate",
					Authority: "unknown", Confidence: 0.5, SourceType: "direct_experience", TargetFiles: []string{},
					DerivedFrom: []string{"fact:b", "fact:c"}, Metadata: json.RawMessage("{}"), Version: 1, CreatedAt: now, UpdatedAt: now}
			}, wantLineage: true},
		{name: "NewEmptyDerived", in: kura.NodeInput{Kind: "fact", ID: "a", Summary: s("S"), DerivedFrom: []string{}},
			want: func(n *kura.Node) {
				*n = kura.Node{Ref: "fact:a", Scope: "p", Kind: "fact", ID: "a", Summary: "S", Lifecycle: "candidate",
					Authority: "unknown", Confidence: 0.5, SourceType: "direct_experience", TargetFiles: []string{},
					DerivedFrom: []string{}, Metadata: json.RawMessage("{}"), Version: 1, CreatedAt: now, UpdatedAt: now}
			}, wantLineage: true},
		{name: "SelfDerived", in: kura.NodeInput{Kind: "fact", ID: "a", Summary: s("S"), DerivedFrom: []string{"fact:a"}}, wantField: "nodes[2].derived_from"},
		{name: "VersionKeepsNilFields", old: old, in: kura.NodeInput{Kind: "fact", ID: "a", Writer: kura.Writer{Identity: "carol"}},
			want: func(n *kura.Node) { n.Version, n.UpdatedAt, n.WrittenBy = 4, now, "carol" }},
		{name: "VersionOverrides", old: old, in: kura.NodeInput{Kind: "fact", ID: "a", Title: s("T2"), Summary: s("S2"),
			Lifecycle: s("retired"), Authority: s("asserted"), Confidence: f(0.1), TargetFiles: []string{}, SourceType: s("chat"),
			Metadata: json.RawMessage(`{}`)},
			want: func(n *kura.Node) {
				n.Title, n.Summary, n.Lifecycle, n.Authority, n.Confidence = "T2", "S2", "retired", "asserted", 0.1
				n.TargetFiles, n.SourceType, n.Metadata = []string{}, "chat", json.RawMessage(`{}`)
				n.Version, n.UpdatedAt, n.WrittenBy = 4, now, ""
			}},
		{name: "EmptyClearsPayloadAndOwner", old: old, in: kura.NodeInput{Kind: "fact", ID: "a", PayloadRef: s(""), Owner: s("")},
			want: func(n *kura.Node) { n.PayloadRef, n.Owner, n.Version, n.UpdatedAt, n.WrittenBy = nil, nil, 4, now, "" }},
		{name: "OwnerClearingOwnNodeKeepsIt", old: old, in: kura.NodeInput{Kind: "fact", ID: "a", Owner: s(""), Writer: kura.Writer{Identity: "alice"}},
			want: func(n *kura.Node) { n.Version, n.UpdatedAt, n.WrittenBy = 4, now, "alice" }},
		{name: "AdminClearsOwner", old: old, in: kura.NodeInput{Kind: "fact", ID: "a", Owner: s(""), Writer: kura.Writer{Identity: "root", Admin: true}},
			want: func(n *kura.Node) { n.Owner, n.Version, n.UpdatedAt, n.WrittenBy = nil, 4, now, "root" }},
		{name: "SameDerivedNoLineage", old: old, in: kura.NodeInput{Kind: "fact", ID: "a", DerivedFrom: []string{"fact:b"}},
			want: func(n *kura.Node) { n.Version, n.UpdatedAt, n.WrittenBy = 4, now, "" }},
		{name: "ChangedDerivedLineage", old: old, in: kura.NodeInput{Kind: "fact", ID: "a", DerivedFrom: []string{}},
			want:        func(n *kura.Node) { n.DerivedFrom, n.Version, n.UpdatedAt, n.WrittenBy = []string{}, 4, now, "" },
			wantLineage: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before kura.Node
			if tt.old != nil {
				before = *tt.old
			}
			got, lineage, err := kura.MergeNode(tt.old, &tt.in, "p", now, "nodes[2].")
			if tt.wantField != "" {
				var ke *kura.Error
				if !errors.As(err, &ke) || ke.Code != kura.EInvalid || ke.Details["field"] != tt.wantField {
					t.Fatalf("got err %v, want invalid %s", err, tt.wantField)
				}
				return
			}
			if err != nil {
				t.Fatalf("got err %v, want nil", err)
			}
			want := before
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v, want %+v", got, want)
			}
			if lineage != tt.wantLineage {
				t.Errorf("got lineage %v, want %v", lineage, tt.wantLineage)
			}
			if tt.old != nil && tt.old.Version != 3 {
				t.Errorf("old changed: version %d", tt.old.Version)
			}
		})
	}
}

func TestConfidenceReason(t *testing.T) {
	tests := []struct {
		reason  string
		created bool
		want    string
	}{
		{"", true, "created"}, {"", false, "updated"}, {"reviewed", true, "reviewed"}, {"reviewed", false, "reviewed"},
	}
	for _, tt := range tests {
		if got := kura.ConfidenceReason(tt.reason, tt.created); got != tt.want {
			t.Errorf("ConfidenceReason(%q, %v) = %q, want %q", tt.reason, tt.created, got, tt.want)
		}
	}
}

func TestDedupe(t *testing.T) {
	tests := []struct{ in, want []string }{
		{nil, []string{}}, {[]string{"a", "b", "a", "c", "b"}, []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		if got := kura.Dedupe(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Dedupe(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
