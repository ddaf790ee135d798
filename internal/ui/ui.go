// Package ui holds the console: a few plain ES modules, two stylesheets
// and one HTML page, embedded in kurad (the API serves them under /ui/).
// The page holds no powers of its own: every call it makes goes to the
// same API, with the token the person typed in, under the same access
// rules.
package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"path"
	"sync"
)

//go:embed static
var static embed.FS

// Prefix is where the console lives.
const Prefix = "/ui/"

// CSP keeps the page to its own origin: scripts and styles only from the
// embedded files (no inline code, so an injected string cannot run), calls
// only to kurad itself, and no framing by another site.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// File is one embedded file, ready to send: its bytes, their gzip, its
// media type and an ETag.
type File struct {
	Body, Gzip  []byte
	ContentType string
	ETag        string
}

var (
	filesOnce sync.Once
	files     map[string]*File
)

// load reads and compresses every embedded file once. The console is small
// (tens of KB), so holding both forms costs little and a Pi on a slow link
// sends a third of the bytes.
func load() map[string]*File {
	filesOnce.Do(func() {
		files = map[string]*File{}
		sub, err := fs.Sub(static, "static")
		if err != nil {
			panic(err)
		}
		err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(sub, p)
			if err != nil {
				return err
			}
			var gz bytes.Buffer
			w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
			w.Write(b)
			w.Close()
			sum := sha256.Sum256(b)
			ct := mime.TypeByExtension(path.Ext(p))
			if ct == "" {
				ct = "application/octet-stream"
			}
			files[p] = &File{Body: b, Gzip: gz.Bytes(), ContentType: ct, ETag: `"` + hex.EncodeToString(sum[:8]) + `"`}
			return nil
		})
		if err != nil {
			panic(err)
		}
	})
	return files
}

// Lookup returns the file at name, a path under /ui/ ("" is the page).
func Lookup(name string) (*File, bool) {
	if name == "" {
		name = "index.html"
	}
	f, ok := load()[name]
	return f, ok
}

// Sizes returns each embedded file's size and gzipped size, for the size
// budget test and the docs.
func Sizes() (raw, gzipped map[string]int) {
	raw, gzipped = map[string]int{}, map[string]int{}
	for p, f := range load() {
		raw[p], gzipped[p] = len(f.Body), len(f.Gzip)
	}
	return raw, gzipped
}
