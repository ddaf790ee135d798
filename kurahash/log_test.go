package kurahash

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
)

func TestLogLeafData(t *testing.T) {
	cases := []struct {
		name string
		leaf LogLeaf
		want string
	}{
		{"record", LogLeaf{Seq: 1, ID: "e1", Type: "record.written", Project: "hashi", Subject: "oclaw.v1.hashi.evt.record.written",
			Refs: map[string]string{"record_id": "r1"}, At: "2026-11-21T09:00:00.120000000Z", Digest: "ab"},
			`{"at":"2026-11-21T09:00:00.120000000Z","digest":"ab","id":"e1","project":"hashi","refs":{"record_id":"r1"},"seq":1,"subject":"oclaw.v1.hashi.evt.record.written","type":"record.written"}`},
		{"no refs, html and unicode kept raw", LogLeaf{Seq: 7, Type: "a<b>&", Project: "é", Refs: nil},
			`{"at":"","digest":"","id":"","project":"é","refs":{},"seq":7,"subject":"","type":"a<b>&"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := LogLeafData(c.leaf)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("leaf data\n got %s\nwant %s", got, c.want)
			}
			back, err := ParseLogLeaf(got)
			if err != nil || back.Seq != c.leaf.Seq || back.Type != c.leaf.Type {
				t.Fatalf("parse back: %+v %v", back, err)
			}
			h := LogLeafHash(got)
			want := sha256.Sum256(append([]byte{0}, got...))
			if !bytes.Equal(h[:], want[:]) {
				t.Fatal("leaf hash is not the RFC 6962 leaf hash")
			}
		})
	}
}

// slowLeafData is the leaf through encoding/json and the JCS library, the
// definition plainLeafData must match.
func slowLeafData(t testing.TB, l LogLeaf) []byte {
	if l.Refs == nil {
		l.Refs = map[string]string{}
	}
	raw, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Canonical(raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func FuzzLogLeafData(f *testing.F) {
	f.Add(int64(1), "e1", "record.written", "hashi", "record_id", "r1", "2026-11-21T09:00:00.120000000Z", "ab")
	f.Add(int64(-3), "", "a\"b", "é", "k\\", "\x01", "\u2028", "<&>")
	f.Add(int64(1<<53+1), "x", "y", "z", "b", "c", "d", "e")
	f.Fuzz(func(t *testing.T, seq int64, id, typ, project, refKey, refVal, at, digest string) {
		l := LogLeaf{Seq: seq, ID: id, Type: typ, Project: project, Subject: "s." + typ,
			Refs: map[string]string{refKey: refVal, "z" + refKey: "v"}, At: at, Digest: digest}
		got, err := LogLeafData(l)
		if err != nil {
			return // invalid UTF-8: the library refuses it too
		}
		if seq > 1<<53 || seq < -(1<<53) {
			// JCS writes integers past 2^53 as ES6 doubles; leaf seqs never
			// get there, and the fast path keeps them exact.
			return
		}
		if want := slowLeafData(t, l); !bytes.Equal(got, want) {
			t.Fatalf("leaf data\n got %s\nwant %s", got, want)
		}
	})
}

// The digest of a record.redacted leaf, against values computed outside Go
// (Python: json.dumps(sort_keys=True, separators=(",", ":"),
// ensure_ascii=False), then SHA-256).
func TestRedactionDigest(t *testing.T) {
	cases := []struct {
		name string
		r    Redaction
		want string
	}{
		{"typical", Redaction{RecordID: "01a1fd55-7af8-716c-84cd-f4386ae15fee", Seal: strings.Repeat("a", 64), By: "user:oles",
			Reason: "personal data: “phone”", At: "2026-11-25T09:00:00.120000000Z"},
			"c7e82516489e498ef3bf7f47ed054faab4f658967fe6d62af56dee6fe8c0946c"},
		{"html and escapes", Redaction{RecordID: "r", Reason: `a<b>&"\`}, "2c265f2b87dd8f833fba00add9cd233c4d002910360a4de7ad2afc7d4f32013e"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := RedactionDigest(c.r)
			if err != nil || got != c.want {
				t.Fatalf("got %s %v, want %s", got, err, c.want)
			}
		})
	}
}
