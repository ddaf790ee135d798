package kura_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
)

func TestEvent_Pointer(t *testing.T) {
	t.Parallel()
	const (
		id = "0190a3f2-7c1e-7d3a-9b2c-1f2e3d4c5b6a"
		at = "2025-01-02T03:04:05.000000001Z"
	)
	tests := []struct {
		name string
		ev   kura.Event
		want map[string]any
	}{
		{
			name: "NoRefs",
			ev:   kura.Event{Seq: 1, ID: id, Type: "ledger.created", Project: "default", Subject: "s", CreatedAt: at},
			want: map[string]any{"seq": 1.0, "type": "ledger.created", "project": "default", "at": at},
		},
		{
			name: "Refs",
			ev: kura.Event{Seq: 42, ID: id, Type: "record.written", Project: "hashi", CreatedAt: at,
				Refs: map[string]string{"id": id, "ledger_id": id}},
			want: map[string]any{"seq": 42.0, "type": "record.written", "project": "hashi", "at": at, "id": id, "ledger_id": id},
		},
		{
			// A ref must not be able to overwrite the fixed fields.
			name: "RefsCannotShadow",
			ev: kura.Event{Seq: 7, Type: "record.written", Project: "p", CreatedAt: at,
				Refs: map[string]string{"seq": "x", "type": "x", "project": "x", "at": "x"}},
			want: map[string]any{"seq": 7.0, "type": "record.written", "project": "p", "at": at},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.ev.Pointer()
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("got invalid JSON %s: %v", b, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}

	t.Run("TypicalRefsUnder512Bytes", func(t *testing.T) {
		ev := kura.Event{
			Seq: 1 << 40, Type: "session.turn.appended", Project: "a-project-slug-of-moderate-length",
			CreatedAt: at,
			Refs: map[string]string{
				"id": id, "session_id": id, "turn_id": id, "ledger_id": id,
				"hash": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			},
		}
		if n := len(ev.Pointer()); n >= 512 {
			t.Errorf("got %d bytes, want under 512", n)
		}
	})
	t.Run("Mismatch", func(t *testing.T) {
		// An event changed since its commit: its ids are not served.
		ev := kura.Event{Seq: 9, ID: id, Type: "turn.complete", Project: "p", CreatedAt: at, Mismatch: true,
			Refs: map[string]string{"turn_id": id, "output_ledger_id": id}}
		if got, want := string(ev.Pointer()), `{"at":"`+at+`","mismatch":true,"project":"p","seq":9,"type":"turn.complete"}`; got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	})
	t.Run("NoSubjectOrEventID", func(t *testing.T) {
		ev := kura.Event{Seq: 1, ID: id, Type: "t", Project: "p", Subject: "oclaw.v1.p.evt.t", CreatedAt: at}
		var got map[string]any
		if err := json.Unmarshal(ev.Pointer(), &got); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"subject", "id", "refs"} {
			if _, ok := got[k]; ok {
				t.Errorf("got key %q in pointer %v, want it absent", k, got)
			}
		}
	})
}

func TestEventSubject(t *testing.T) {
	t.Parallel()
	if got, want := kura.EventSubject("hashi", "record.written"), "oclaw.v1.hashi.evt.record.written"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestEventTypes pins the wire names of the event types (shared/API.md,
// "Events"): a constant renamed by mistake changes every subscriber's
// subject.
func TestEventTypes(t *testing.T) {
	t.Parallel()
	want := []string{
		"record.written", "record.redacted", "ledger.written",
		"session.created", "session.head",
		"turn.opened", "turn.claimed", "turn.complete", "dispatch",
		"memory.node", "memory.relation", "memory.lifecycle", "memory.feedback",
		"context.compiled", "kb.changed", "log.acknowledged",
	}
	if !slices.Equal(kura.EventTypes, want) {
		t.Errorf("got %q, want %q", kura.EventTypes, want)
	}
	if got, want := kura.CheckpointSubject, "oclaw.v1._log.evt.checkpoint"; got != want {
		t.Errorf("got checkpoint subject %q, want %q", got, want)
	}
	if got, want := kura.CommandSubject("hashi", "worker", kura.EventDispatch), "oclaw.v1.hashi.cmd.worker.dispatch"; got != want {
		t.Errorf("got dispatch subject %q, want %q", got, want)
	}
}

func TestScopedEvent(t *testing.T) {
	t.Parallel()
	scoped := map[string]bool{
		"memory.node": true, "memory.relation": true, "memory.lifecycle": true, "memory.feedback": true,
		"context.compiled": true, "kb.changed": true,
	}
	for _, typ := range append(slices.Clone(kura.EventTypes), "", "memory.other", "context") {
		if got, want := kura.ScopedEvent(typ), scoped[typ]; got != want {
			t.Errorf("ScopedEvent(%q): got %v, want %v", typ, got, want)
		}
	}
}

// FuzzEvent_Pointer holds Pointer to its definition, encoding/json's
// encoding of the pointer's map (the refs, then seq, type, project and
// at over them), byte for byte, whatever the strings: Pointer writes the
// common case itself.
func FuzzEvent_Pointer(f *testing.F) {
	f.Add(int64(42), "record.written", "hashi", "2025-01-02T03:04:05.000000001Z", "record_id", "0190a3f2-7c1e-7d3a-9b2c-1f2e3d4c5b6a", "ledger_id", "x")
	f.Add(int64(-1), "t<", "p&", "\u2028", "seq", "1", "", "")
	f.Add(int64(0), "", "", "", "a\"b", "é", "type", "q")
	f.Fuzz(func(t *testing.T, seq int64, typ, project, at, k1, v1, k2, v2 string) {
		ev := kura.Event{Seq: seq, Type: typ, Project: project, CreatedAt: at, Refs: map[string]string{k1: v1, k2: v2}}
		m := map[string]any{}
		for k, v := range ev.Refs {
			m[k] = v
		}
		m["seq"], m["type"], m["project"], m["at"] = seq, typ, project, at
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := ev.Pointer(); string(got) != string(want) {
			t.Fatalf("got %s, want %s", got, want)
		}
	})
}
