package main_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// fromRef is a FROM's image as Kura pins it: a registry host (a dot, a
// port or localhost in the first part), a repository, a tag, and the
// digest of that tag's image index.
var fromRef = regexp.MustCompile(`^(?:[a-z0-9-]+\.[a-z0-9.-]+(?::[0-9]+)?|[a-z0-9-]+:[0-9]+|localhost)/[a-z0-9._/-]+:([A-Za-z0-9._-]+)@sha256:[0-9a-f]{64}$`)

// dockerfileFroms returns the image of every FROM in a Dockerfile, with
// line continuations joined, comments and --flags left out, and stages
// named by an earlier AS left out too (FROM build is not a pull).
func dockerfileFroms(t *testing.T, text string) []string {
	t.Helper()
	var froms []string
	stages := map[string]bool{}
	var logical strings.Builder
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(trimmed, "\\"); ok {
			logical.WriteString(cont + " ")
			continue
		}
		logical.WriteString(trimmed)
		fields := strings.Fields(logical.String())
		logical.Reset()
		if len(fields) == 0 || !strings.EqualFold(fields[0], "FROM") {
			continue
		}
		args := fields[1:]
		for len(args) > 0 && strings.HasPrefix(args[0], "--") {
			args = args[1:]
		}
		if len(args) == 0 {
			t.Fatalf("got %q, want FROM with an image", line)
		}
		if !stages[strings.ToLower(args[0])] {
			froms = append(froms, args[0])
		}
		if len(args) == 3 && strings.EqualFold(args[1], "AS") {
			stages[strings.ToLower(args[2])] = true
		}
	}
	return froms
}

// TestDockerfile_BaseImagesPinned: every base image is fully named (so
// podman and buildah, which do not assume docker.io, pull what Docker
// pulls) and pinned by digest next to its tag; the Go image's version is
// the go.mod's.
func TestDockerfile_BaseImagesPinned(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	froms := dockerfileFroms(t, string(b))
	if len(froms) < 2 {
		t.Fatalf("got FROM images %q, want the build and the runtime image", froms)
	}
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (1\.\d+)`).FindSubmatch(mod)
	if goVersion == nil {
		t.Fatal("go.mod has no go line")
	}
	sawGo := false
	for _, ref := range froms {
		m := fromRef.FindStringSubmatch(ref)
		if m == nil {
			t.Errorf("FROM %s: want registry/repository:tag@sha256:<64 hex digits>", ref)
			continue
		}
		if strings.HasPrefix(ref, "docker.io/library/golang:") {
			sawGo = true
			if !strings.HasPrefix(m[1], string(goVersion[1])+"-") && !strings.HasPrefix(m[1], string(goVersion[1])+".") {
				t.Errorf("FROM %s: got Go %s, want go.mod's %s", ref, m[1], goVersion[1])
			}
		}
	}
	if !sawGo {
		t.Errorf("got FROM images %q, want docker.io/library/golang among them", froms)
	}

	// The check itself: what it must refuse and what it must let pass.
	for _, tc := range []struct {
		dockerfile string
		bad        bool
	}{
		{"FROM golang:1.26-bookworm AS build", true},
		{"FROM golang:1.26-bookworm@sha256:" + strings.Repeat("a", 64), true},
		{"FROM docker.io/library/golang:1.26-bookworm", true},
		{"FROM docker.io/library/golang@sha256:" + strings.Repeat("a", 64), true},
		{"FROM docker.io/library/golang:1.26-bookworm@sha256:abc", true},
		{"FROM --platform=$BUILDPLATFORM docker.io/library/golang:1.26-bookworm@sha256:" + strings.Repeat("a", 64) + " AS build", false},
		{"FROM \\\n  gcr.io/distroless/static-debian12:nonroot@sha256:" + strings.Repeat("b", 64), false},
		{"FROM localhost:5000/kura/base:1@sha256:" + strings.Repeat("c", 64), false},
		{"# FROM golang:latest\nFROM quay.io/x/y:1@sha256:" + strings.Repeat("d", 64) + " AS one\nFROM one", false},
		{"FROM quay.io/x/y:1@sha256:" + strings.Repeat("d", 64) + "\nFROM ubuntu", true},
	} {
		bad := false
		for _, ref := range dockerfileFroms(t, tc.dockerfile) {
			bad = bad || !fromRef.MatchString(ref)
		}
		if bad != tc.bad {
			t.Errorf("%q: got refused %v, want %v", tc.dockerfile, bad, tc.bad)
		}
	}
}
