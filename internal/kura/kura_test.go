package kura_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

func TestValidID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"0190a3f2-7c1e-7d3a-9b2c-1f2e3d4c5b6a", true},
		{"00000000-0000-0000-0000-000000000000", true},
		{"0190A3F2-7C1E-7D3A-9B2C-1F2E3D4C5B6A", false},
		{"0190a3f2-7c1e-7d3a-9b2c-1f2e3d4c5B6a", false},
		{"0190a3f27c1e7d3a9b2c1f2e3d4c5b6a", false},
		{"{0190a3f2-7c1e-7d3a-9b2c-1f2e3d4c5b6a}", false},
		{"urn:uuid:0190a3f2-7c1e-7d3a-9b2c-1f2e3d4c5b6a", false},
		{"0190a3f2-7c1e-7d3a-9b2c-1f2e3d4c5b6", false},
		{"0190a3f2-7c1e-7d3a-9b2c-1f2e3d4c5b6a0", false},
		{"0190a3f2-7c1e-7d3a-9b2c-1f2e3d4c5b6g", false},
		{"0190a3f2-7c1e-7d3a-9b2c-1f2e3d4c5b6a\n", false},
		{" 0190a3f2-7c1e-7d3a-9b2c-1f2e3d4c5b6a", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.in), func(t *testing.T) {
			if got := kura.ValidID(tt.in); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestValidSlug(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"default", true},
		{"a", true},
		{"0", true},
		{"hashi_2-x", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"-lead", false},
		{"_lead", false},
		{"Upper", false},
		{"dot.ted", false},
		{"sp ace", false},
		{"slug\n", false},
		{"ünï", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%.20q", tt.in), func(t *testing.T) {
			if got := kura.ValidSlug(tt.in); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestValidHash(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{strings.Repeat("a", 64), true},
		{"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", true},
		{"E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855", false},
		{strings.Repeat("a", 63), false},
		{strings.Repeat("a", 65), false},
		{strings.Repeat("g", 64), false},
		{"sha256:" + strings.Repeat("a", 64), false},
		{strings.Repeat("a", 64) + "\n", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%.20q/%d", tt.in, len(tt.in)), func(t *testing.T) {
			if got := kura.ValidHash(tt.in); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestValidAuthorID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"agent:bmo", true},
		{"user:x", true},
		{"tool:" + strings.Repeat("z", 64), true},
		{"tool:" + strings.Repeat("z", 65), false},
		{"sys:", false},
		{"sys", false},
		{"admin:root", false},
		{"agent:bmo/1", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%.24q/%d", tt.in, len(tt.in)), func(t *testing.T) {
			if got := kura.ValidAuthorID(tt.in); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// timeRE is TimeFormat as a pattern: UTC, exactly nine fractional digits.
var timeRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$`)

func TestFormatTime(t *testing.T) {
	t.Parallel()
	tokyo := time.FixedZone("JST", 9*3600)
	tests := []struct {
		name string
		in   time.Time
		want string
	}{
		{"WholeSecond", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), "2025-01-02T03:04:05.000000000Z"},
		{"Nanos", time.Date(2025, 1, 2, 3, 4, 5, 1, time.UTC), "2025-01-02T03:04:05.000000001Z"},
		{"TrailingZeros", time.Date(2025, 1, 2, 3, 4, 5, 120_000_000, time.UTC), "2025-01-02T03:04:05.120000000Z"},
		{"AllNines", time.Date(2025, 12, 31, 23, 59, 59, 999_999_999, time.UTC), "2025-12-31T23:59:59.999999999Z"},
		{"OtherZoneToUTC", time.Date(2025, 1, 1, 8, 0, 0, 5, tokyo), "2024-12-31T23:00:00.000000005Z"},
		{"Epoch", time.Unix(0, 0), "1970-01-01T00:00:00.000000000Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := kura.FormatTime(tt.in)
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if !timeRE.MatchString(got) {
				t.Errorf("got %q, want it to match %s", got, timeRE)
			}
		})
	}
}

func TestParseTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    string // FormatTime of the result; "" means an error
		wantErr bool
	}{
		{"Canonical", "2025-01-02T03:04:05.000000001Z", "2025-01-02T03:04:05.000000001Z", false},
		{"NoFraction", "2025-01-02T03:04:05Z", "2025-01-02T03:04:05.000000000Z", false},
		{"ShortFraction", "2025-01-02T03:04:05.5Z", "2025-01-02T03:04:05.500000000Z", false},
		{"Offset", "2025-01-02T03:04:05+02:00", "2025-01-02T01:04:05.000000000Z", false},
		{"NegativeOffset", "2025-01-01T23:30:00.25-01:00", "2025-01-02T00:30:00.250000000Z", false},
		{"LowercaseZ", "2025-01-02T03:04:05z", "", true},
		{"DateOnly", "2025-01-02", "", true},
		{"Space", "2025-01-02 03:04:05Z", "", true},
		{"NoZone", "2025-01-02T03:04:05", "", true},
		{"BadMonth", "2025-13-02T03:04:05Z", "", true},
		{"Empty", "", "", true},
		{"Garbage", "yesterday", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := kura.ParseTime(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got %v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if got.Location() != time.UTC {
				t.Errorf("got location %v, want UTC", got.Location())
			}
			if s := kura.FormatTime(got); s != tt.want {
				t.Errorf("got %q, want %q", s, tt.want)
			}
		})
	}
}

// FuzzParseTime checks that whatever ParseTime accepts comes back in UTC and
// survives a FormatTime/ParseTime round trip unchanged.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{
		"2025-01-02T03:04:05.000000001Z",
		"2025-01-02T03:04:05Z",
		"2025-01-02T03:04:05.123+05:30",
		"0000-01-01T00:00:00Z",
		"9999-12-31T23:59:59.999999999Z",
		"2025-01-02",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := kura.ParseTime(s)
		if err != nil {
			return
		}
		if got.Location() != time.UTC {
			t.Fatalf("ParseTime(%q): got location %v, want UTC", s, got.Location())
		}
		if y := got.Year(); y < 0 || y > 9999 {
			t.Fatalf("ParseTime(%q): accepted year %d, which TimeFormat cannot write", s, y)
		}
		out := kura.FormatTime(got)
		if !timeRE.MatchString(out) {
			t.Fatalf("FormatTime(ParseTime(%q)): got %q, want TimeFormat", s, out)
		}
		back, err := kura.ParseTime(out)
		if err != nil {
			t.Fatalf("ParseTime(%q): got error %v, want nil", out, err)
		}
		if !back.Equal(got) {
			t.Fatalf("round trip of %q: got %v, want %v", s, back, got)
		}
	})
}

// TestParseTime_YearEdges checks that every time ParseTime accepts can be
// written back in TimeFormat. The API turns ?since=/?until= into FormatTime
// strings compared with created_at as text, so a five-digit or negative year
// silently breaks the filter.
func TestParseTime_YearEdges(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"9999-12-31T23:59:59-01:00",
		"0000-01-01T00:00:00+01:00",
	} {
		t.Run(in, func(t *testing.T) {
			got, err := kura.ParseTime(in)
			if err != nil {
				return // refusing is a fine answer
			}
			if s := kura.FormatTime(got); !timeRE.MatchString(s) {
				t.Errorf("got FormatTime %q, want TimeFormat (or ParseTime to refuse %q)", s, in)
			}
		})
	}
}
