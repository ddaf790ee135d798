package recall

import (
	"crypto/sha256"
	"fmt"
	"testing"
)

// TestUnicode61Table holds the embedded data to the tables the generator
// wrote as Go source before they moved to unicode61.txt: same counts, same
// digest of every pair. Regenerating after an engine upgrade changes both;
// update them with the generator's log line.
func TestUnicode61Table(t *testing.T) {
	const wantRanges, wantFolds = 411, 1299
	const wantDigest = "de50c8b5bf3610e65e4dff7ed312336a06f30251fdd0a2b86863ea326d9ee71c"
	if len(tokenRanges) != wantRanges || len(foldPairs) != wantFolds {
		t.Fatalf("got %d ranges, %d folds, want %d, %d", len(tokenRanges), len(foldPairs), wantRanges, wantFolds)
	}
	if got := fmt.Sprintf("%x", sha256.Sum256([]byte(fmt.Sprint(tokenRanges, foldPairs)))); got != wantDigest {
		t.Errorf("got digest %s, want %s", got, wantDigest)
	}
	tests := []struct {
		r     rune
		token bool
		fold  rune
	}{
		{'0', true, '0'}, {'A', true, 'a'}, {'z', true, 'z'}, {' ', false, ' '},
		{'É', true, 'e'}, {0x0301, true, 0}, {'-', false, '-'}, {0x10FFFF, true, 0x10FFFF},
	}
	for _, tt := range tests {
		if got := isTokenRune(tt.r); got != tt.token {
			t.Errorf("isTokenRune(%U) = %v, want %v", tt.r, got, tt.token)
		}
		if !tt.token {
			continue
		}
		got := tt.r
		if f, ok := fold(tt.r); ok {
			got = f
		}
		if got != tt.fold {
			t.Errorf("fold(%U) = %U, want %U", tt.r, got, tt.fold)
		}
	}
}

func TestParseUnicode61(t *testing.T) {
	tests := []struct {
		name, data string
		ok         bool
	}{
		{"Good", "# tokens\n30 39\n41 5A\n# folds\n41 61\n42 62\n", true},
		{"NoSection", "30 39\n", false},
		{"OneField", "# tokens\n30\n", false},
		{"NotHex", "# tokens\n30 zz\n", false},
		{"RangeBackwards", "# tokens\n39 30\n", false},
		{"RangesOverlap", "# tokens\n30 39\n35 40\n", false},
		{"FoldsOutOfOrder", "# folds\n42 62\n41 61\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parseUnicode61(tt.data)
			if (err == nil) != tt.ok {
				t.Errorf("got err %v, want ok %v", err, tt.ok)
			}
		})
	}
}
