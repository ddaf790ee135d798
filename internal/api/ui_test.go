package api

import (
	"strings"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	for _, c := range []struct {
		header string
		want   bool
	}{
		{"", false},
		{"gzip", true},
		{"GZIP", true},
		{"br, gzip, deflate", true},
		{"gzip;q=0", false},
		{"gzip; q=0.000", false},
		{"gzip;q=0.5", true},
		{"gzip;q=1", true},
		{"gzip;q=nonsense", false},
		{"deflate, br", false},
		{"x-gzip", false},
	} {
		if got := acceptsGzip(c.header); got != c.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", c.header, got, c.want)
		}
	}
}

// FuzzAcceptsGzip: any header is answered without a panic, and a header
// that never names gzip is never taken for one.
func FuzzAcceptsGzip(f *testing.F) {
	for _, s := range []string{"gzip", "gzip;q=0", "br, gzip;q=0.3", ";;,,", "gzip;q="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		if acceptsGzip(h) && !strings.Contains(strings.ToLower(h), "gzip") {
			t.Fatalf("acceptsGzip(%q) without gzip in it", h)
		}
	})
}
