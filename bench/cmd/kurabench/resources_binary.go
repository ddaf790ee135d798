// The resources phase's binaries: the release build it measures, and what
// the binary is (size, flags, static or not).

package main

import (
	"context"
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// resourceBinary inspects the binaries and returns the one this phase
// runs. Without -kurad the bench's own build is a plain go build (cgo as
// the toolchain defaults, symbols and DWARF kept), which is not what a Pi
// runs, so a release build is made with the Makefile's flags and measured
// in every respect. A -kurad binary is run as given; when it is not a
// release build, the size target is judged on a release build of this tree.
func (b *bench) resourceBinary(ctx context.Context, rs *Resources) (string, error) {
	if b.cfg.kuradBin != "" {
		given := inspectBinary(b.kurad, "given with -kurad")
		if given.Release {
			rs.Binary = given
			return b.kurad, nil
		}
		rel, err := b.buildRelease(ctx)
		if err != nil {
			return "", err
		}
		rs.Binary = inspectBinary(rel, releaseBuildText(ctx, b.root))
		rs.BenchBinary = &given
		return b.kurad, nil
	}
	plain := inspectBinary(b.kurad, "go build ./cmd/kurad (the bench's build for the other phases)")
	rel, err := b.buildRelease(ctx)
	if err != nil {
		return "", err
	}
	rs.Binary = inspectBinary(rel, releaseBuildText(ctx, b.root))
	rs.BenchBinary = &plain
	return rel, nil
}

func releaseBuildText(ctx context.Context, root string) string {
	return fmt.Sprintf("CGO_ENABLED=0 go build -trimpath -ldflags \"%s -X main.version=%s\" ./cmd/kurad", releaseLDFlags, releaseVersion(ctx, root))
}

// releaseVersion is the Makefile's VERSION.
func releaseVersion(ctx context.Context, root string) string {
	cmd := exec.CommandContext(ctx, "git", "describe", "--tags", "--always", "--dirty")
	cmd.Dir = root
	out, err := cmd.Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return v
	}
	return "dev"
}

// buildRelease builds ./cmd/kurad as make build does, once per run.
func (b *bench) buildRelease(ctx context.Context) (string, error) {
	bin := filepath.Join(b.tmp, "kurad-release")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	fmt.Fprintln(os.Stderr, "   building ./cmd/kurad with the release flags")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", releaseLDFlags+" -X main.version="+releaseVersion(ctx, b.root), "-o", bin, "./cmd/kurad")
	cmd.Dir = b.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("release build of ./cmd/kurad: %w\n%s", err, out)
	}
	return bin, nil
}

// inspectBinary reads a binary's size, ELF sections and Go build info.
func inspectBinary(path, build string) BinaryInfo {
	bi := BinaryInfo{Path: path, Build: build}
	st, err := os.Stat(path)
	if err != nil {
		bi.Error = err.Error()
		return bi
	}
	bi.Bytes, bi.MiB = st.Size(), round(float64(st.Size())/(1<<20))
	f, err := elf.Open(path)
	if err != nil {
		bi.Error = "not an ELF file: " + err.Error()
		return bi
	}
	defer f.Close()
	bi.Stripped = f.Section(".symtab") == nil
	for _, s := range f.Sections {
		if strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
			bi.DWARF = true
		}
	}
	bi.Static = true
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			bi.Static = false
		}
	}
	if info, err := buildinfo.ReadFile(path); err == nil {
		bi.Version = info.GoVersion
		for _, s := range info.Settings {
			switch s.Key {
			case "-trimpath":
				bi.Trimpath = s.Value == "true"
			case "CGO_ENABLED":
				bi.CGO = s.Value
			}
		}
	}
	bi.Release = bi.Stripped && !bi.DWARF && bi.Trimpath && bi.CGO == "0"
	return bi
}

func binFlags(bi BinaryInfo) string {
	var f []string
	if bi.Stripped {
		f = append(f, "stripped")
	} else {
		f = append(f, "symbols")
	}
	if bi.DWARF {
		f = append(f, "DWARF")
	} else {
		f = append(f, "no DWARF")
	}
	if bi.Trimpath {
		f = append(f, "-trimpath")
	}
	if bi.CGO != "" {
		f = append(f, "CGO_ENABLED="+bi.CGO)
	}
	if bi.Static {
		f = append(f, "static")
	} else {
		f = append(f, "dynamically linked")
	}
	return strings.Join(f, ", ")
}

// gcPolicy says which GC settings the measured kurads run under: they
// inherit the bench's environment, and kurad's tuneGC applies GOGC=300 and
// a 256 MiB soft memory limit unless GOGC / GOMEMLIMIT are set.
func gcPolicy() string {
	g, l := os.Getenv("GOGC"), os.Getenv("GOMEMLIMIT")
	var parts []string
	if g == "" {
		parts = append(parts, "GOGC=300 (kurad's default)")
	} else {
		parts = append(parts, "GOGC="+g+" (from the environment)")
	}
	if l == "" {
		parts = append(parts, "GOMEMLIMIT=256MiB (kurad's default)")
	} else {
		parts = append(parts, "GOMEMLIMIT="+l+" (from the environment)")
	}
	return strings.Join(parts, ", ")
}
