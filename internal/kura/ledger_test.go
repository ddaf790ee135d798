package kura_test

import (
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
)

func TestLedgerInput_Validate(t *testing.T) {
	t.Parallel()
	const (
		id1 = "0190a3f2-7c1e-7d3a-9b2c-1f2e3d4c5b6a"
		id2 = "0190a3f2-7c1e-7d3a-9b2c-1f2e3d4c5b6b"
	)
	tests := []struct {
		name      string
		in        kura.LedgerInput
		wantField string // "" means valid
	}{
		{"Empty", kura.LedgerInput{}, ""},
		{"Full", kura.LedgerInput{Label: "nightly", ParentIDs: []string{id1, id2}, RecordIDs: []string{id1, id2}}, ""},
		{"Label256", kura.LedgerInput{Label: strings.Repeat("l", kura.MaxLabelLen)}, ""},
		{"Label257", kura.LedgerInput{Label: strings.Repeat("l", kura.MaxLabelLen+1)}, "label"},
		// The limit is in bytes: 86 three-byte runes are 258 bytes.
		{"LabelMultibyte", kura.LedgerInput{Label: strings.Repeat("語", 86)}, "label"},
		{"DuplicateParent", kura.LedgerInput{ParentIDs: []string{id1, id2, id1}}, "parent_ids"},
		{"ParentUppercase", kura.LedgerInput{ParentIDs: []string{strings.ToUpper(id1)}}, "parent_ids"},
		{"ParentEmpty", kura.LedgerInput{ParentIDs: []string{""}}, "parent_ids"},
		{"RecordInvalid", kura.LedgerInput{RecordIDs: []string{id1, "nope"}}, "record_ids"},
		// A record may appear twice in a ledger; only parents must be distinct.
		{"DuplicateRecord", kura.LedgerInput{RecordIDs: []string{id1, id1}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.in.Validate()
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

	t.Run("MessageNamesIndex", func(t *testing.T) {
		in := kura.LedgerInput{RecordIDs: []string{id1, id2, "bad"}}
		if err := in.Validate(); err == nil || !strings.Contains(err.Error(), "record_ids[2]") {
			t.Errorf("got %v, want it to name record_ids[2]", err)
		}
	})
}
