package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestDockerfile_BuildahDataDir builds the Dockerfile with buildah and
// reads the mode and owner of the image's /data, for the shipped file and
// for the form it had before (the directory copied onto /data), which
// buildah made 0755 though BuildKit made it 0700. The bases are replaced
// by a local image holding a static busybox and the Go steps by empty
// files (no registry is needed); every instruction that makes /data runs
// as written. Opt-in (KURA_TEST_BUILDAH=1, as root, with buildah and
// busybox-static installed: apt-get install buildah busybox-static): a
// build takes seconds, but CI should not depend on a container builder.
func TestDockerfile_BuildahDataDir(t *testing.T) {
	if os.Getenv("KURA_TEST_BUILDAH") != "1" {
		t.Skip("set KURA_TEST_BUILDAH=1 to build the image with buildah (root, buildah and busybox-static installed)")
	}
	if _, err := exec.LookPath("buildah"); err != nil {
		t.Fatalf("buildah: %v", err)
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatalf("busybox: %v", err)
	}
	shipped, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	buildah := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("buildah", append([]string{"--root", filepath.Join(root, "storage"), "--runroot", filepath.Join(root, "run"), "--storage-driver", "vfs"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("buildah %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	t.Cleanup(func() { buildah("rm", "--all"); buildah("rmi", "--all", "--force") })

	ctx := filepath.Join(root, "context")
	if err := os.MkdirAll(ctx, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile("../../" + f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ctx, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bb, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctx, "busybox"), bb, 0o755); err != nil {
		t.Fatal(err)
	}
	base := "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n"
	if err := os.WriteFile(filepath.Join(ctx, "Dockerfile.base"), []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	buildah("bud", "--isolation", "chroot", "-f", filepath.Join(ctx, "Dockerfile.base"), "-t", "localhost/kura-test-base", ctx)

	dataDir := func(name, dockerfile string) (os.FileMode, uint32) {
		t.Helper()
		path := filepath.Join(ctx, "Dockerfile."+name)
		if err := os.WriteFile(path, []byte(localBuild(dockerfile)), 0o644); err != nil {
			t.Fatal(err)
		}
		buildah("bud", "--isolation", "chroot", "--format", "docker", "-f", path, "-t", "localhost/kura-test-"+name, ctx)
		c := buildah("from", "localhost/kura-test-"+name)
		mnt := buildah("mount", c)
		defer buildah("umount", c)
		st, err := os.Stat(filepath.Join(mnt, "data"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Uid
	}
	mode, uid := dataDir("shipped", string(shipped))
	if mode != 0o700 || uid != 65532 {
		t.Errorf("the shipped Dockerfile: got /data %04o owned by %d, want 0700 owned by 65532", mode, uid)
	}
	before := strings.NewReplacer(
		"mkdir -p /out/rootfs && mkdir -m 0700 /out/rootfs/data", "mkdir -p -m 0700 /out/data",
		"COPY --from=build --chown=65532:65532 /out/rootfs/ /", "COPY --from=build --chown=65532:65532 /out/data /data",
	).Replace(string(shipped))
	oldMode, _ := dataDir("before", before)
	t.Logf("buildah: /data %04o as shipped, %04o with the directory copied onto /data", mode, oldMode)
	if oldMode == 0o700 {
		t.Log("this buildah keeps the source's mode for a directory copied onto /data too: the case the fix is for did not arise")
	}
}

var (
	fromImage = regexp.MustCompile(`^FROM (--platform=\S+ )?\S+`)
	goBuild   = regexp.MustCompile(`go build [^&]*-o (/out/\S+) \S+`)
	cacheFlag = regexp.MustCompile(`--mount=type=cache,target=\S+`)
)

// localBuild makes a Dockerfile buildable without a registry: every base
// is the local busybox image, go mod download does nothing and go build
// writes an empty file where the binary would go.
func localBuild(dockerfile string) string {
	lines := strings.Split(dockerfile, "\n")
	for i, l := range lines {
		l = fromImage.ReplaceAllString(l, "FROM ${1}localhost/kura-test-base")
		l = strings.ReplaceAll(l, "go mod download", "true")
		l = goBuild.ReplaceAllString(l, "mkdir -p /out && touch $1")
		lines[i] = cacheFlag.ReplaceAllString(l, "")
	}
	return strings.Join(lines, "\n")
}
