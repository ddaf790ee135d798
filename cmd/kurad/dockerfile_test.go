package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
	for _, fields := range dockerfileLines(text) {
		if !strings.EqualFold(fields[0], "FROM") {
			continue
		}
		args := fields[1:]
		for len(args) > 0 && strings.HasPrefix(args[0], "--") {
			args = args[1:]
		}
		if len(args) == 0 {
			t.Fatalf("got %q, want FROM with an image", strings.Join(fields, " "))
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

// dockerfileLines returns a Dockerfile's instructions as fields, with line
// continuations joined and comments left out.
func dockerfileLines(text string) [][]string {
	var out [][]string
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
		if fields := strings.Fields(logical.String()); len(fields) > 0 {
			out = append(out, fields)
		}
		logical.Reset()
	}
	return out
}

// dataDirProblems checks that a Dockerfile's runtime image has its data
// directory (ENV KURA_DATA_DIR) made 0700 and owned by the user kurad runs
// as, under BuildKit and buildah alike: copied --chown of the USER from a
// build stage, as an entry of the directory the COPY names (COPY copies a
// directory's contents and makes the destination itself with a mode the
// builder picks: BuildKit the source's, buildah and podman 0755; an entry
// inside keeps its mode under both), made there with mkdir -m 0700 (the
// distroless runtime has no shell to chmod). It names what is wrong.
func dataDirProblems(text string) []string {
	type stage struct {
		name string
		ins  [][]string
	}
	var stages []stage
	for _, f := range dockerfileLines(text) {
		if strings.EqualFold(f[0], "FROM") {
			s := stage{}
			if n := len(f); n >= 4 && strings.EqualFold(f[n-2], "AS") {
				s.name = strings.ToLower(f[n-1])
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) > 0 {
			stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, f)
		}
	}
	if len(stages) == 0 {
		return []string{"no FROM"}
	}
	runtime := stages[len(stages)-1]
	var dataDir, user string
	for _, f := range runtime.ins {
		switch strings.ToUpper(f[0]) {
		case "ENV":
			for i := 1; i < len(f); i++ {
				if v, ok := strings.CutPrefix(f[i], "KURA_DATA_DIR="); ok {
					dataDir = v
				} else if f[i] == "KURA_DATA_DIR" && i == 1 && len(f) > 2 {
					dataDir = f[2]
				}
			}
		case "USER":
			if len(f) > 1 {
				user = f[1]
			}
		}
	}
	if dataDir == "" {
		return []string{"the runtime image sets no ENV KURA_DATA_DIR"}
	}
	if user == "" || user == "root" || user == "0" || strings.HasPrefix(user, "0:") {
		return []string{"the runtime image runs as root (USER " + user + ")"}
	}
	dataDir = filepath.Clean(dataDir)
	// The COPY whose destination is the data directory or holds it; rel is
	// the data directory's path below that destination.
	var copyArgs []string
	var rel string
	for _, f := range runtime.ins {
		if !strings.EqualFold(f[0], "COPY") || len(f) < 3 {
			continue
		}
		dest := filepath.Clean(f[len(f)-1])
		if r, err := filepath.Rel(dest, dataDir); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
			copyArgs, rel = f[1:], r
		}
	}
	if copyArgs == nil {
		return []string{"no COPY makes the data directory " + dataDir + " (a directory the image does not hold is created by Docker owned by root)"}
	}
	var from, chown string
	var paths []string
	for _, a := range copyArgs {
		switch {
		case strings.HasPrefix(a, "--from="):
			from = strings.ToLower(strings.TrimPrefix(a, "--from="))
		case strings.HasPrefix(a, "--chown="):
			chown = strings.TrimPrefix(a, "--chown=")
		case strings.HasPrefix(a, "--"):
		default:
			paths = append(paths, a)
		}
	}
	var problems []string
	if chown != user {
		problems = append(problems, "the data directory is copied --chown="+chown+", want the runtime USER "+user)
	}
	if rel == "." {
		problems = append(problems, "the COPY's destination is the data directory itself, whose mode the builder then picks (0755 under buildah and podman); copy a directory that holds it")
	}
	if len(paths) != 2 {
		return append(problems, "the data directory's COPY has sources "+strings.Join(paths[:max(0, len(paths)-1)], " ")+", want one directory")
	}
	src := filepath.Join(filepath.Clean(paths[0]), rel)
	var build *stage
	for i := range stages {
		if stages[i].name != "" && stages[i].name == from {
			build = &stages[i]
		}
	}
	if build == nil {
		return append(problems, "the data directory is not copied from a build stage (--from="+from+")")
	}
	mode := ""
	for _, f := range build.ins {
		if !strings.EqualFold(f[0], "RUN") {
			continue
		}
		for i := 1; i < len(f); i++ {
			if f[i] != "mkdir" {
				continue
			}
			var m string
			made := false
			for j := i + 1; j < len(f) && f[j] != "&&" && f[j] != ";" && f[j] != "||"; j++ {
				switch a := f[j]; {
				case a == "-m" && j+1 < len(f):
					m = f[j+1]
					j++
				case strings.HasPrefix(a, "--mode="):
					m = strings.TrimPrefix(a, "--mode=")
				case strings.HasPrefix(a, "-m"):
					m = strings.TrimPrefix(a, "-m")
				case filepath.Clean(a) == src:
					made = true
				}
			}
			if made {
				mode = m
			}
		}
	}
	if mode == "" {
		return append(problems, "stage "+from+" makes "+src+" without mkdir -m 0700 (the umask decides its mode)")
	}
	if v, err := strconv.ParseUint(mode, 8, 32); err != nil || v != 0o700 {
		problems = append(problems, "stage "+from+" makes "+src+" with mode "+mode+", want 0700")
	}
	return problems
}

// TestDockerfile_DataDirPrivate: the image's data directory is created
// 0700 and owned by the runtime user, so that a new volume takes that mode
// and owner and nobody else in the container can look in.
func TestDockerfile_DataDirPrivate(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if p := dataDirProblems(string(b)); len(p) > 0 {
		t.Errorf("the Dockerfile's data directory: %v", p)
	}

	// The check itself, on variants of the real Dockerfile.
	shipped := string(b)
	for _, tc := range []struct {
		name, old, new string
		bad            bool
	}{
		{"AsShipped", "", "", false},
		{"NoMode", "mkdir -m 0700 /out/rootfs/data", "mkdir /out/rootfs/data", true},
		{"ModeOpen", "mkdir -m 0700 /out/rootfs/data", "mkdir -m 0755 /out/rootfs/data", true},
		{"ModeShortForm", "mkdir -m 0700 /out/rootfs/data", "mkdir -m700 /out/rootfs/data", false},
		{"ModeLongForm", "mkdir -m 0700 /out/rootfs/data", "mkdir --mode=0700 /out/rootfs/data", false},
		{"ModeOnAnotherDir", "mkdir -m 0700 /out/rootfs/data", "mkdir -m 0700 /out/rootfs/other", true},
		{"OwnedByRoot", "COPY --from=build --chown=65532:65532 /out/rootfs/ /", "COPY --from=build /out/rootfs/ /", true},
		{"OwnedByAnother", "COPY --from=build --chown=65532:65532 /out/rootfs/ /", "COPY --from=build --chown=1000:1000 /out/rootfs/ /", true},
		{"NotCopied", "COPY --from=build --chown=65532:65532 /out/rootfs/ /", "", true},
		{"RunsAsRoot", "USER 65532:65532", "USER root", true},
		{"DataDirElsewhere", "KURA_DATA_DIR=/data", "KURA_DATA_DIR=/var/lib/kura", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := shipped
			if tc.old != "" {
				if !strings.Contains(shipped, tc.old) {
					t.Fatalf("the Dockerfile no longer holds %q: update this case", tc.old)
				}
				text = strings.Replace(shipped, tc.old, tc.new, 1)
			}
			if p := dataDirProblems(text); (len(p) > 0) != tc.bad {
				t.Errorf("got problems %v, want refused %v", p, tc.bad)
			}
		})
	}
	// The form this Dockerfile had, which buildah and podman build with
	// /data 0755 though its source was made 0700 (TestDockerfile_BuildahDataDir).
	t.Run("CopiedOntoTheDataDir", func(t *testing.T) {
		text := strings.NewReplacer(
			"mkdir -p /out/rootfs && mkdir -m 0700 /out/rootfs/data", "mkdir -p -m 0700 /out/data",
			"COPY --from=build --chown=65532:65532 /out/rootfs/ /", "COPY --from=build --chown=65532:65532 /out/data /data",
		).Replace(shipped)
		if text == shipped {
			t.Fatal("the Dockerfile no longer holds the lines this case replaces: update it")
		}
		if p := dataDirProblems(text); len(p) == 0 {
			t.Error("got no problems, want the COPY onto /data refused")
		}
	})
}
