package ui

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// palettes reads the console's colour variables from style.css: the light
// palette (:root), the dark one the theme button picks
// (:root[data-theme="dark"]) and the dark one the system picks (inside
// prefers-color-scheme: dark).
func palettes(t *testing.T) map[string]map[string]string {
	t.Helper()
	b, err := static.ReadFile("static/style.css")
	if err != nil {
		t.Fatal(err)
	}
	css := string(b)
	block := func(selector string) map[string]string {
		i := strings.Index(css, selector)
		if i < 0 {
			t.Fatalf("style.css has no %q block", selector)
		}
		body := css[i:]
		body = body[strings.Index(body, "{")+1:]
		body = body[:strings.Index(body, "}")]
		vars := map[string]string{}
		for _, m := range regexp.MustCompile(`--([a-z-]+):\s*(#[0-9a-fA-F]{6})`).FindAllStringSubmatch(body, -1) {
			vars[m[1]] = strings.ToLower(m[2])
		}
		return vars
	}
	return map[string]map[string]string{
		"light":       block(":root {"),
		"dark":        block(`:root[data-theme="dark"]`),
		"system dark": block(`:root:not([data-theme="light"])`),
	}
}

// luminance is WCAG 2's relative luminance of a #rrggbb colour.
func luminance(t *testing.T, hex string) float64 {
	t.Helper()
	var lin [3]float64
	for i := range lin {
		v, err := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		if err != nil {
			t.Fatalf("colour %q: %v", hex, err)
		}
		c := float64(v) / 255
		if c <= 0.03928 {
			lin[i] = c / 12.92
		} else {
			lin[i] = math.Pow((c+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*lin[0] + 0.7152*lin[1] + 0.0722*lin[2]
}

// TestStyle_TextContrast: every colour the console writes text in is
// legible on every surface it may sit on, in light and in dark, to WCAG
// 2's AA level for body text (4.5:1), and the system's dark palette is the
// theme button's.
func TestStyle_TextContrast(t *testing.T) {
	t.Parallel()
	p := palettes(t)
	if fmt.Sprint(p["dark"]) != fmt.Sprint(p["system dark"]) {
		t.Fatalf("the system's dark palette %v differs from the theme button's %v", p["system dark"], p["dark"])
	}
	texts := []string{"fg", "muted", "accent", "ok", "bad", "warn"}
	surfaces := []string{"bg", "panel", "code-bg", "info-bg"}
	type pair struct{ text, surface string }
	var pairs []pair
	for _, tx := range texts {
		for _, s := range surfaces {
			pairs = append(pairs, pair{tx, s})
		}
	}
	// Status badges: their own colour, or the body's, on their tint.
	for _, s := range []string{"ok", "bad", "warn"} {
		pairs = append(pairs, pair{s, s + "-bg"}, pair{"fg", s + "-bg"})
	}
	for _, theme := range []string{"light", "dark"} {
		vars := p[theme]
		for _, pr := range pairs {
			fg, bg := vars[pr.text], vars[pr.surface]
			if fg == "" || bg == "" {
				t.Fatalf("%s: --%s or --%s is not a #rrggbb colour in style.css", theme, pr.text, pr.surface)
			}
			a, b := luminance(t, fg), luminance(t, bg)
			ratio := (math.Max(a, b) + 0.05) / (math.Min(a, b) + 0.05)
			if ratio < 4.5 {
				t.Errorf("%s: --%s (%s) on --%s (%s) has contrast %.2f:1, want at least 4.5:1", theme, pr.text, fg, pr.surface, bg, ratio)
			}
		}
	}
}
