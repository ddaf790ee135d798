package kura_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
)

// validToolCall is a tool.call content that passes every rule.
const validToolCall = `{"tool_name":"grep","arguments":{"q":"x"},"status":"pending"}`

// fieldOf returns the code and the "field" detail of a *kura.Error.
func fieldOf(t *testing.T, err error) (code, field string) {
	t.Helper()
	var ke *kura.Error
	if !errors.As(err, &ke) {
		t.Fatalf("got error %T (%v), want *kura.Error", err, err)
	}
	f, _ := ke.Details["field"].(string)
	return ke.Code, f
}

func metadataN(n int) map[string]string {
	m := make(map[string]string, n)
	for i := 0; i < n; i++ {
		m[fmt.Sprintf("k%d", i)] = "v"
	}
	return m
}

func TestRecordInput_Validate(t *testing.T) {
	t.Parallel()
	vocab := kura.NewVocabulary()
	ok := func(mut func(in *kura.RecordInput)) kura.RecordInput {
		in := kura.RecordInput{Type: "agent.thought", Content: json.RawMessage(`"hi"`), AuthorID: "agent:bmo"}
		if mut != nil {
			mut(&in)
		}
		return in
	}
	tests := []struct {
		name      string
		in        kura.RecordInput
		wantField string // "" means valid
	}{
		{"Minimal", ok(nil), ""},
		{"EmptyType", ok(func(in *kura.RecordInput) { in.Type = "" }), "type"},
		{"UnknownType", ok(func(in *kura.RecordInput) { in.Type = "agent.dream" }), "type"},
		{"TypeCaseSensitive", ok(func(in *kura.RecordInput) { in.Type = "Agent.Thought" }), "type"},

		{"AuthorUser", ok(func(in *kura.RecordInput) { in.AuthorID = "user:oles" }), ""},
		{"AuthorTool", ok(func(in *kura.RecordInput) { in.AuthorID = "tool:grep" }), ""},
		{"AuthorSys", ok(func(in *kura.RecordInput) { in.AuthorID = "sys:kurad" }), ""},
		{"AuthorPunctuation", ok(func(in *kura.RecordInput) { in.AuthorID = "agent:A.b_c-9" }), ""},
		{"Author64", ok(func(in *kura.RecordInput) { in.AuthorID = "agent:" + strings.Repeat("a", 64) }), ""},
		{"Author65", ok(func(in *kura.RecordInput) { in.AuthorID = "agent:" + strings.Repeat("a", 65) }), "author_id"},
		{"AuthorEmptyName", ok(func(in *kura.RecordInput) { in.AuthorID = "agent:" }), "author_id"},
		{"AuthorEmpty", ok(func(in *kura.RecordInput) { in.AuthorID = "" }), "author_id"},
		{"AuthorNoKind", ok(func(in *kura.RecordInput) { in.AuthorID = "bmo" }), "author_id"},
		{"AuthorUnknownKind", ok(func(in *kura.RecordInput) { in.AuthorID = "robot:bmo" }), "author_id"},
		{"AuthorUpperKind", ok(func(in *kura.RecordInput) { in.AuthorID = "Agent:bmo" }), "author_id"},
		{"AuthorSpace", ok(func(in *kura.RecordInput) { in.AuthorID = "agent:b mo" }), "author_id"},
		{"AuthorColonInName", ok(func(in *kura.RecordInput) { in.AuthorID = "agent:b:mo" }), "author_id"},
		{"AuthorTrailingNewline", ok(func(in *kura.RecordInput) { in.AuthorID = "agent:bmo\n" }), "author_id"},
		{"AuthorLeadingSpace", ok(func(in *kura.RecordInput) { in.AuthorID = " agent:bmo" }), "author_id"},
		{"AuthorNonASCII", ok(func(in *kura.RecordInput) { in.AuthorID = "agent:bmö" }), "author_id"},

		{"ContentMissing", ok(func(in *kura.RecordInput) { in.Content = nil }), "content"},
		{"ContentNullLiteral", ok(func(in *kura.RecordInput) { in.Content = json.RawMessage(`null`) }), ""},
		{"ContentObject", ok(func(in *kura.RecordInput) { in.Content = json.RawMessage(`{"a":[1,2]}`) }), ""},

		{"Metadata64Entries", ok(func(in *kura.RecordInput) { in.Metadata = metadataN(64) }), ""},
		{"Metadata65Entries", ok(func(in *kura.RecordInput) { in.Metadata = metadataN(65) }), "metadata"},
		{"MetadataEmptyKey", ok(func(in *kura.RecordInput) { in.Metadata = map[string]string{"": "v"} }), "metadata"},
		{"MetadataKey128", ok(func(in *kura.RecordInput) { in.Metadata = map[string]string{strings.Repeat("k", 128): "v"} }), ""},
		{"MetadataKey129", ok(func(in *kura.RecordInput) { in.Metadata = map[string]string{strings.Repeat("k", 129): "v"} }), "metadata"},
		{"MetadataValue4096", ok(func(in *kura.RecordInput) { in.Metadata = map[string]string{"k": strings.Repeat("v", 4096)} }), ""},
		{"MetadataValue4097", ok(func(in *kura.RecordInput) { in.Metadata = map[string]string{"k": strings.Repeat("v", 4097)} }), "metadata.k"},
		{"MetadataEmptyValue", ok(func(in *kura.RecordInput) { in.Metadata = map[string]string{"k": ""} }), ""},

		{"ToolCallValid", ok(func(in *kura.RecordInput) { in.Type, in.Content = "tool.call", json.RawMessage(validToolCall) }), ""},
		{"ToolCallSuccess", ok(func(in *kura.RecordInput) {
			in.Type, in.Content = "tool.call", json.RawMessage(`{"tool_name":"t","arguments":{},"status":"success"}`)
		}), ""},
		{"ToolCallError", ok(func(in *kura.RecordInput) {
			in.Type, in.Content = "tool.call", json.RawMessage(`{"tool_name":"t","arguments":{},"status":"error"}`)
		}), ""},
		{"ToolCallArgumentsSpaced", ok(func(in *kura.RecordInput) {
			in.Type, in.Content = "tool.call", json.RawMessage(`{"tool_name":"t","arguments":  {"a":1} ,"status":"pending"}`)
		}), ""},
		{"ToolCallArgumentsArray", ok(func(in *kura.RecordInput) {
			in.Type, in.Content = "tool.call", json.RawMessage(`{"tool_name":"t","arguments":[1],"status":"pending"}`)
		}), "content.arguments"},
		{"ToolCallArgumentsString", ok(func(in *kura.RecordInput) {
			in.Type, in.Content = "tool.call", json.RawMessage(`{"tool_name":"t","arguments":"{}","status":"pending"}`)
		}), "content.arguments"},
		{"ToolCallArgumentsNull", ok(func(in *kura.RecordInput) {
			in.Type, in.Content = "tool.call", json.RawMessage(`{"tool_name":"t","arguments":null,"status":"pending"}`)
		}), "content.arguments"},
		{"ToolCallArgumentsMissing", ok(func(in *kura.RecordInput) {
			in.Type, in.Content = "tool.call", json.RawMessage(`{"tool_name":"t","status":"pending"}`)
		}), "content.arguments"},
		{"ToolCallNoToolName", ok(func(in *kura.RecordInput) {
			in.Type, in.Content = "tool.call", json.RawMessage(`{"arguments":{},"status":"pending"}`)
		}), "content.tool_name"},
		{"ToolCallEmptyToolName", ok(func(in *kura.RecordInput) {
			in.Type, in.Content = "tool.call", json.RawMessage(`{"tool_name":"","arguments":{},"status":"pending"}`)
		}), "content.tool_name"},
		{"ToolCallToolNameNotString", ok(func(in *kura.RecordInput) {
			in.Type, in.Content = "tool.call", json.RawMessage(`{"tool_name":7,"arguments":{},"status":"pending"}`)
		}), "content"},
		{"ToolCallNoStatus", ok(func(in *kura.RecordInput) {
			in.Type, in.Content = "tool.call", json.RawMessage(`{"tool_name":"t","arguments":{}}`)
		}), "content.status"},
		{"ToolCallBadStatus", ok(func(in *kura.RecordInput) {
			in.Type, in.Content = "tool.call", json.RawMessage(`{"tool_name":"t","arguments":{},"status":"done"}`)
		}), "content.status"},
		{"ToolCallStatusCase", ok(func(in *kura.RecordInput) {
			in.Type, in.Content = "tool.call", json.RawMessage(`{"tool_name":"t","arguments":{},"status":"Pending"}`)
		}), "content.status"},
		{"ToolCallUnknownField", ok(func(in *kura.RecordInput) {
			in.Type, in.Content = "tool.call", json.RawMessage(`{"tool_name":"t","arguments":{},"status":"pending","extra":1}`)
		}), "content"},
		{"ToolCallNotObject", ok(func(in *kura.RecordInput) { in.Type, in.Content = "tool.call", json.RawMessage(`[1,2]`) }), "content"},
		{"ToolCallString", ok(func(in *kura.RecordInput) { in.Type, in.Content = "tool.call", json.RawMessage(`"grep"`) }), "content"},

		{"ToolResultStatusOnly", ok(func(in *kura.RecordInput) { in.Type, in.Content = "tool.result", json.RawMessage(`{"status":"ok"}`) }), ""},
		{"ToolResultFull", ok(func(in *kura.RecordInput) {
			in.Type, in.Content = "tool.result", json.RawMessage(`{"status":"error","result":[1,{"a":null}],"error":"boom"}`)
		}), ""},
		{"ToolResultNoStatus", ok(func(in *kura.RecordInput) { in.Type, in.Content = "tool.result", json.RawMessage(`{"result":1}`) }), "content.status"},
		{"ToolResultEmptyStatus", ok(func(in *kura.RecordInput) { in.Type, in.Content = "tool.result", json.RawMessage(`{"status":""}`) }), "content.status"},
		{"ToolResultErrorNotString", ok(func(in *kura.RecordInput) {
			in.Type, in.Content = "tool.result", json.RawMessage(`{"status":"error","error":{"m":1}}`)
		}), "content"},
		{"ToolResultUnknownField", ok(func(in *kura.RecordInput) {
			in.Type, in.Content = "tool.result", json.RawMessage(`{"status":"ok","output":1}`)
		}), "content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.in.Validate(vocab, "")
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("got error %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got nil error, want invalid %s", tt.wantField)
			}
			code, field := fieldOf(t, err)
			if code != kura.EInvalid {
				t.Errorf("got code %q, want %q", code, kura.EInvalid)
			}
			if field != tt.wantField {
				t.Errorf("got field %q, want %q (err %v)", field, tt.wantField, err)
			}
		})
	}
}

func TestRecordInput_ValidateEveryDefaultType(t *testing.T) {
	t.Parallel()
	vocab := kura.NewVocabulary()
	for _, typ := range kura.DefaultRecordTypes {
		t.Run(typ, func(t *testing.T) {
			content := json.RawMessage(`{"text":"x"}`)
			switch typ {
			case "tool.call":
				content = json.RawMessage(validToolCall)
			case "tool.result":
				content = json.RawMessage(`{"status":"ok"}`)
			}
			in := kura.RecordInput{Type: typ, Content: content, AuthorID: "agent:bmo"}
			if err := in.Validate(vocab, ""); err != nil {
				t.Errorf("got error %v, want nil", err)
			}
		})
	}
}

func TestRecordInput_ValidateFieldPrefix(t *testing.T) {
	t.Parallel()
	vocab := kura.NewVocabulary()
	tests := []struct {
		name      string
		in        kura.RecordInput
		wantField string
	}{
		{"Type", kura.RecordInput{Type: "nope", Content: json.RawMessage(`1`), AuthorID: "agent:a"}, "records[3].type"},
		{"Author", kura.RecordInput{Type: "agent.thought", Content: json.RawMessage(`1`), AuthorID: "x"}, "records[3].author_id"},
		{"ToolStatus", kura.RecordInput{Type: "tool.result", Content: json.RawMessage(`{}`), AuthorID: "tool:a"}, "records[3].content.status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, field := fieldOf(t, tt.in.Validate(vocab, "records[3]."))
			if field != tt.wantField {
				t.Errorf("got field %q, want %q", field, tt.wantField)
			}
		})
	}
}

func TestRecordInput_ValidateUnknownTypeListsAllowed(t *testing.T) {
	t.Parallel()
	vocab := kura.NewVocabulary("custom.note")
	in := kura.RecordInput{Type: "agent.dream", Content: json.RawMessage(`1`), AuthorID: "agent:bmo"}
	err := in.Validate(vocab, "")
	var ke *kura.Error
	if !errors.As(err, &ke) {
		t.Fatalf("got %v, want *kura.Error", err)
	}
	allowed, ok := ke.Details["allowed"].([]string)
	if !ok {
		t.Fatalf("got details[allowed] %T, want []string", ke.Details["allowed"])
	}
	if !reflect.DeepEqual(allowed, vocab.Types()) {
		t.Errorf("got allowed %v, want %v", allowed, vocab.Types())
	}
	if !strings.Contains(ke.Message, `"agent.dream"`) {
		t.Errorf("got message %q, want it to name the type", ke.Message)
	}

	t.Run("ExtraTypeAccepted", func(t *testing.T) {
		in := kura.RecordInput{Type: "custom.note", Content: json.RawMessage(`1`), AuthorID: "agent:bmo"}
		if err := in.Validate(vocab, ""); err != nil {
			t.Errorf("got %v, want nil", err)
		}
		if err := in.Validate(kura.NewVocabulary(), ""); err == nil {
			t.Error("got nil error from the default vocabulary, want unknown type")
		}
	})
}

// TestRecordInput_ValidateMessages pins what a newcomer reads: a missing
// author_id is called required before the form is shown, a malformed one
// gets the form in words and the pattern, and an unknown type says the
// vocabulary is configurable and by what.
func TestRecordInput_ValidateMessages(t *testing.T) {
	t.Parallel()
	vocab := kura.NewVocabulary()
	tests := []struct {
		name      string
		in        kura.RecordInput
		wantField string
		wantStart string   // the message starts with this
		wantAlso  []string // and contains these
	}{
		{"AuthorMissing", kura.RecordInput{Type: "agent.thought", Content: json.RawMessage(`1`)}, "records[3].author_id",
			"author_id is required: who wrote the record, as kind:name with kind user, agent, tool or sys (e.g. agent:bmo)", nil},
		{"AuthorBadKind", kura.RecordInput{Type: "agent.thought", Content: json.RawMessage(`1`), AuthorID: "robot:x"}, "records[3].author_id",
			"author_id must be kind:name with kind user, agent, tool or sys (e.g. agent:bmo)", []string{"^(user|agent|tool|sys):[A-Za-z0-9._-]{1,64}$"}},
		{"AuthorNoName", kura.RecordInput{Type: "agent.thought", Content: json.RawMessage(`1`), AuthorID: "agent:"}, "records[3].author_id",
			"author_id must be kind:name", nil},
		{"UnknownType", kura.RecordInput{Type: "agent.dream", Content: json.RawMessage(`1`), AuthorID: "agent:bmo"}, "records[3].type",
			`unknown record type "agent.dream"`, []string{"details.allowed", "KURA_RECORD_TYPES", "--record-types"}},
		{"TypeMissing", kura.RecordInput{Content: json.RawMessage(`1`), AuthorID: "agent:bmo"}, "records[3].type",
			"type is required", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.in.Validate(vocab, "records[3].")
			code, field := fieldOf(t, err)
			if code != kura.EInvalid || field != tt.wantField {
				t.Errorf("got %s on %q, want %s on %q", code, field, kura.EInvalid, tt.wantField)
			}
			msg := kura.ErrorMessage(err)
			if !strings.HasPrefix(msg, tt.wantStart) {
				t.Errorf("got message %q, want it to start with %q", msg, tt.wantStart)
			}
			for _, w := range tt.wantAlso {
				if !strings.Contains(msg, w) {
					t.Errorf("got message %q, want it to contain %q", msg, w)
				}
			}
		})
	}
}

func TestCheckAuthorID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, wantStart string // wantStart "" means valid
	}{
		{"agent:bmo", ""},
		{"user:oles", ""},
		{"tool:gh", ""},
		{"sys:kurad", ""},
		{"", "author_id is required: who gives feedback, as kind:name"},
		{"bmo", "author_id must be kind:name"},
		{"Agent:bmo", "author_id must be kind:name"},
		{"agent:" + strings.Repeat("a", 65), "author_id must be kind:name"},
	}
	for _, tt := range tests {
		err := kura.CheckAuthorID("author_id", tt.in, "who gives feedback")
		switch {
		case tt.wantStart == "" && err != nil:
			t.Errorf("CheckAuthorID(%q): got %v, want nil", tt.in, err)
		case tt.wantStart != "" && (err == nil || !strings.HasPrefix(kura.ErrorMessage(err), tt.wantStart)):
			t.Errorf("CheckAuthorID(%q): got %v, want a message starting %q", tt.in, err, tt.wantStart)
		}
	}
}

func TestVocabulary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		extra []string
		want  []string // added to the defaults
	}{
		{"Defaults", nil, nil},
		{"Extra", []string{"zeta.note", "alpha.note"}, []string{"alpha.note", "zeta.note"}},
		{"DuplicateExtra", []string{"x.y", "x.y"}, []string{"x.y"}},
		{"DuplicateOfDefault", []string{"tool.call", "memory.fact"}, nil},
		{"Blank", []string{"", "   "}, nil},
		{"TrimmedSpace", []string{"  pad.ded "}, []string{"pad.ded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := kura.NewVocabulary(tt.extra...)
			want := append(append([]string{}, kura.DefaultRecordTypes...), tt.want...)
			sort.Strings(want)
			got := v.Types()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got types %v, want %v", got, want)
			}
			for _, typ := range want {
				if !v.Has(typ) {
					t.Errorf("got Has(%q) false, want true", typ)
				}
			}
		})
	}

	t.Run("TypesIsACopy", func(t *testing.T) {
		v := kura.NewVocabulary()
		got := v.Types()
		got[0] = "mutated"
		if v.Types()[0] == "mutated" {
			t.Error("got Types sharing its backing array, want a copy")
		}
	})
	t.Run("DoesNotAlterDefaults", func(t *testing.T) {
		before := append([]string{}, kura.DefaultRecordTypes...)
		kura.NewVocabulary("a.b", "c.d")
		if !reflect.DeepEqual(kura.DefaultRecordTypes, before) {
			t.Errorf("got DefaultRecordTypes %v, want %v", kura.DefaultRecordTypes, before)
		}
	})
	t.Run("HasUnknown", func(t *testing.T) {
		if kura.NewVocabulary().Has("") {
			t.Error("got Has(\"\") true, want false")
		}
	})
}

func TestValidTypeName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"tool.call", true},
		{"custom_type-2.x", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"Tool.call", false},
		{"tool call", false},
		{"tool/call", false},
		{"tööl", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%.20q", tt.in), func(t *testing.T) {
			if got := kura.ValidTypeName(tt.in); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// FuzzRecordInputValidate decodes arbitrary request bodies the way the API
// does and checks that validation never panics and always answers with a
// *kura.Error naming a field.
func FuzzRecordInputValidate(f *testing.F) {
	seeds := []string{
		`{"type":"agent.thought","content":"hi","author_id":"agent:bmo"}`,
		`{"type":"tool.call","content":` + validToolCall + `,"author_id":"tool:x"}`,
		`{"type":"tool.call","content":{"tool_name":"t","arguments":[],"status":"x"},"author_id":"tool:x"}`,
		`{"type":"tool.call","content":null,"author_id":"tool:x"}`,
		`{"type":"tool.result","content":{"status":"ok","result":{"a":1}},"author_id":"tool:x"}`,
		`{"type":"tool.result","content":{"error":7},"author_id":"tool:x"}`,
		`{"type":"memory.fact","content":1,"author_id":"user:a","metadata":{"":""}}`,
		`{"type":"nope"}`,
		`{}`,
		`null`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	vocab := kura.NewVocabulary("custom.note")
	f.Fuzz(func(t *testing.T, b []byte) {
		var in kura.RecordInput
		if json.Unmarshal(b, &in) != nil {
			return
		}
		err := in.Validate(vocab, "records[0].")
		if err == nil {
			if !vocab.Has(in.Type) || !kura.ValidAuthorID(in.AuthorID) || len(in.Content) == 0 {
				t.Fatalf("got nil error for %q, want a rejection", b)
			}
			return
		}
		var ke *kura.Error
		if !errors.As(err, &ke) {
			t.Fatalf("got %T %v, want *kura.Error", err, err)
		}
		if ke.Code != kura.EInvalid {
			t.Fatalf("got code %q, want %q", ke.Code, kura.EInvalid)
		}
		if f, _ := ke.Details["field"].(string); !strings.HasPrefix(f, "records[0].") {
			t.Fatalf("got field %q, want prefix records[0].", f)
		}
	})
}

func TestExtractedKind(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		typ  string
		kind string
		ok   bool
	}{
		{"memory.fact", "fact", true},
		{"memory.decision", "decision", true},
		{"memory.other", "", false},
		{"task.deliverable", "", false},
		{"agent.thought", "", false},
		{"", "", false},
	} {
		kind, ok := kura.ExtractedKind(tt.typ)
		if kind != tt.kind || ok != tt.ok {
			t.Errorf("ExtractedKind(%q): got %q, %v, want %q, %v", tt.typ, kind, ok, tt.kind, tt.ok)
		}
	}
}

func TestRecordEventProject(t *testing.T) {
	t.Parallel()
	pid := func(p string) map[string]string { return map[string]string{"project_id": p} }
	tests := []struct {
		name     string
		metadata map[string]string
		projects []string
		want     string
	}{
		{"all projects, no project_id", nil, nil, "default"},
		{"all projects, project_id", pid("beta"), nil, "beta"},
		{"holds the default", nil, []string{"alpha", "default"}, "default"},
		{"limited without the default", nil, []string{"alpha", "beta"}, "alpha"},
		{"limited, other metadata only", map[string]string{"k": "v"}, []string{"alpha"}, "alpha"},
		{"limited, empty project_id", pid(""), []string{"alpha"}, "alpha"},
		{"limited, project_id not a slug", pid("Not A Slug"), []string{"alpha"}, "alpha"},
		{"limited, its own project_id", pid("beta"), []string{"alpha", "beta"}, "beta"},
		{"no project list", nil, []string{}, "default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := kura.RecordEventProject(tc.metadata, "default", tc.projects); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
