package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/kura-memory/kura/internal/kura"
)

// Limits on the shape of a JSON body, checked before it is decoded: the
// size limit alone still lets a small body nest deep enough to cost a
// decoder (and every later walk over the value) far more than its bytes.
const (
	// MaxJSONDepth is the deepest nesting of arrays and objects accepted.
	MaxJSONDepth = 64
	// MaxJSONElements is the most members one array or object may hold.
	MaxJSONElements = 100_000
)

// readBody reads the whole body under the size limit.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, s.jsonError(err)
		}
		// A client that stalls past the server's read timeout, or hangs up.
		return nil, kura.Invalid("", "the body could not be read: %v", err)
	}
	return b, nil
}

// decodeBody decodes one JSON value from b into v after checkJSONShape:
// no unknown fields (the field is named), nothing after the value.
func (s *Server) decodeBody(b []byte, v any) error {
	if err := checkJSONShape(b); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return s.jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return kura.Invalid("", "the body holds more than one JSON value")
	}
	return nil
}

// checkJSONShape refuses text that is not UTF-8, escapes a lone UTF-16
// surrogate (encoding/json would quietly store U+FFFD in place of either,
// so what is kept would differ from what was sent), nests deeper than
// MaxJSONDepth or holds a container of more than MaxJSONElements members.
// It does not check syntax: the decoder that follows does.
func checkJSONShape(b []byte) error {
	if !utf8.Valid(b) {
		return kura.Invalid("", "the body is not valid UTF-8")
	}
	if loneSurrogate(b) {
		return kura.Invalid("", "the body holds a \\u escape of a lone UTF-16 surrogate, which is not a character")
	}
	var counts [MaxJSONDepth]int // commas seen in each open container
	depth := 0
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			if depth == MaxJSONDepth {
				return kura.Invalid("", "the body nests arrays and objects deeper than %d levels", MaxJSONDepth).WithDetail("limit", MaxJSONDepth)
			}
			counts[depth] = 0
			depth++
		case ']', '}':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth > 0 {
				counts[depth-1]++
				if counts[depth-1] >= MaxJSONElements {
					return kura.Invalid("", "an array or object in the body holds more than %d members", MaxJSONElements).WithDetail("limit", MaxJSONElements)
				}
			}
		}
	}
	return nil
}
