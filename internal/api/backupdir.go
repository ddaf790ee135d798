package api

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// backupNameLayout names a backup made without a path: the UTC time with
// fixed-width fields, so that the names sort as the backups were taken.
const backupNameLayout = "20060102T150405.000000000Z"

// msgBackupOutside answers a path that does not resolve inside the backup
// directory. It repeats neither the path nor the backup directory: an
// error must not tell a caller what lies where on the kurad host.
const msgBackupOutside = "path must name a new or empty directory inside kurad's backup directory (--backup-dir); a relative path is taken inside it, and no path has kurad name one from the time"

// backupTarget is where a backup asked for with path goes. root is the
// backup directory, absolute with its symlinks resolved. No path: a new
// subdirectory of root named from now. A relative path is taken inside
// root. The path is then resolved as the kernel would, symlinks and ..
// followed, and must lie strictly inside root; what does not exist yet
// cannot be a symlink, so resolving the longest existing prefix is enough.
func backupTarget(root, path string, now time.Time) (string, error) {
	if path == "" {
		return filepath.Join(root, now.UTC().Format(backupNameLayout)), nil
	}
	if strings.ContainsRune(path, 0) {
		return "", kura.Invalid("path", msgBackupOutside)
	}
	p := path
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	p, err := resolvePath(filepath.Clean(p))
	if err != nil {
		return "", kura.Invalid("path", msgBackupOutside)
	}
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", kura.Invalid("path", msgBackupOutside)
	}
	return p, nil
}

// resolvePath resolves the symlinks of the longest existing prefix of the
// clean absolute path p and appends the rest, which does not exist.
func resolvePath(p string) (string, error) {
	existing, rest := p, ""
	for {
		_, err := os.Lstat(existing)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", err
	}
	return filepath.Join(real, rest), nil
}
