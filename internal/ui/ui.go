// Package ui serves the console: a few plain ES modules, a stylesheet and
// one HTML page, embedded in kurad and served under /ui/. The page holds no
// powers of its own: every call it makes goes to the same API, with the
// token the person typed in, under the same access rules.
package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
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

// file is one embedded file, ready to serve: the bytes, their gzip, an ETag.
type file struct {
	body, gz []byte
	ctype    string
	etag     string
}

var (
	filesOnce sync.Once
	files     map[string]*file
)

// load reads and compresses every embedded file once. The console is small
// (tens of KB), so holding both forms costs little and a Pi on a slow link
// sends a third of the bytes.
func load() map[string]*file {
	filesOnce.Do(func() {
		files = map[string]*file{}
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
			files[p] = &file{body: b, gz: gz.Bytes(), ctype: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
			return nil
		})
		if err != nil {
			panic(err)
		}
	})
	return files
}

// Sizes returns each embedded file's size and gzipped size, for the size
// budget test and the docs.
func Sizes() (raw, gzipped map[string]int) {
	raw, gzipped = map[string]int{}, map[string]int{}
	for p, f := range load() {
		raw[p], gzipped[p] = len(f.body), len(f.gz)
	}
	return raw, gzipped
}

// Serve answers a GET or HEAD for one of the console's files ("/ui/" is
// the page) and reports whether the file exists; the caller answers a
// name that does not (with the API's error body). The page routes by
// fragment, so no other path falls back to it.
func Serve(w http.ResponseWriter, r *http.Request) bool {
	name := strings.TrimPrefix(r.URL.Path, Prefix)
	if name == "" {
		name = "index.html"
	}
	f, ok := load()[name]
	if !ok {
		return false
	}
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Content-Type", f.ctype)
	h.Set("ETag", f.etag)
	// Revalidate every time: a new kurad brings new files under the same
	// names, and a 304 costs one round trip.
	h.Set("Cache-Control", "no-cache")
	h.Add("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && match == f.etag {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	body := f.body
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		body = f.gz
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
	return true
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip
// (a q=0 refuses it).
func acceptsGzip(ae string) bool {
	for _, part := range strings.Split(ae, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}
