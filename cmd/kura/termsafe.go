package main

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// What kura prints comes, much of it, from whoever wrote to kurad: record
// metadata, node titles and summaries, knowledge-base values, labels, and
// kurad's error messages quoting them. A terminal acts on some bytes it is
// shown instead of showing them: ESC starts sequences that move the cursor,
// recolour or clear the screen, set the window title, write to the
// clipboard (OSC 52) or make links; a lone CR returns to the start of the
// line so later text hides earlier text; C1 controls (U+0080-U+009F) do the
// same as ESC on some terminals, and bidirectional overrides reorder what a
// line appears to say. safeWriter stands between kura and its stdout and
// stderr and writes those out as escapes.
//
// It does so whether or not the output is a terminal: the human text goes
// to files, pagers, logs and "watch" that end up on one, and it promises
// no exact bytes (its layout is for people). --json is the exact form: its
// writer escapes the same runes as JSON \u escapes, which mean the same
// string, so the JSON decodes to exactly what kurad holds. The two outputs
// that are data, not text (an export's stream, the MCP server's protocol on
// stdout), bypass it.

// safeWriter escapes what a terminal would act on. Newlines and tabs pass,
// and a CR directly before a newline (CRLF text); everything else below
// U+0020, DEL, C1, the bidirectional controls and bytes that are not UTF-8
// are escaped: as \xNN and \uNNNN in text, as \uNNNN (U+FFFD for a byte
// that is not UTF-8) in JSON. In JSON a lone CR can only be whitespace
// between values, so it becomes a newline there, which keeps the JSON as
// it was. A rune split across two writes, or a CR at the end of one, waits
// for the next write or Flush.
type safeWriter struct {
	w       io.Writer
	json    bool
	pending []byte
}

func newSafeWriter(w io.Writer, json bool) *safeWriter { return &safeWriter{w: w, json: json} }

// unsafeRune reports whether a terminal may act on r rather than show it.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f: // C1
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, // bidi marks
		r >= 0x202a && r <= 0x202e, // embeddings and overrides
		r >= 0x2066 && r <= 0x2069: // isolates
		return true
	}
	return false
}

func (s *safeWriter) Write(p []byte) (int, error) {
	buf := p
	if len(s.pending) > 0 {
		buf = append(s.pending, p...)
		s.pending = nil
	}
	out := make([]byte, 0, len(buf)+8)
	for i := 0; i < len(buf); {
		b := buf[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '\r' && i+1 == len(buf):
				s.pending = []byte{'\r'} // CRLF or not: the next write says
			case b == '\r' && buf[i+1] == '\n', b == '\n', b == '\t':
				out = append(out, b)
			case b == '\r' && s.json:
				out = append(out, '\n')
			case unsafeRune(rune(b)):
				out = s.escape(out, rune(b))
			default:
				out = append(out, b)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(buf[i:])
		switch {
		case r == utf8.RuneError && n <= 1 && !utf8.FullRune(buf[i:]):
			s.pending = append([]byte(nil), buf[i:]...)
			i = len(buf)
		case r == utf8.RuneError && n <= 1:
			out = s.escapeByte(out, b)
			i++
		case unsafeRune(r):
			out = s.escape(out, r)
			i += n
		default:
			out = append(out, buf[i:i+n]...)
			i += n
		}
	}
	if _, err := s.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes out what waits for a next write that will not come: a CR
// without its newline, the start of a rune never finished.
func (s *safeWriter) Flush() error {
	p := s.pending
	s.pending = nil
	var out []byte
	for _, b := range p {
		switch {
		case b == '\r' && s.json:
			out = append(out, '\n')
		case b == '\r':
			out = s.escape(out, '\r')
		default:
			out = s.escapeByte(out, b)
		}
	}
	if len(out) == 0 {
		return nil
	}
	_, err := s.w.Write(out)
	return err
}

func (s *safeWriter) escape(out []byte, r rune) []byte {
	if r < 0x80 && !s.json {
		return fmt.Appendf(out, `\x%02x`, r)
	}
	return fmt.Appendf(out, `\u%04x`, r)
}

func (s *safeWriter) escapeByte(out []byte, b byte) []byte {
	if s.json {
		return append(out, `\ufffd`...)
	}
	return fmt.Appendf(out, `\x%02x`, b)
}
