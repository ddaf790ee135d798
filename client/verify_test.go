package client_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/kurahash"
)

// vectors is the part of kurahash/testdata/hashes.json these tests use.
type vectors struct {
	Records []struct {
		Type        string            `json:"type"`
		Content     json.RawMessage   `json:"content"`
		AuthorID    string            `json:"author_id"`
		Metadata    map[string]string `json:"metadata"`
		CreatedAt   string            `json:"created_at"`
		ContentHash string            `json:"content_hash"`
		Hash        string            `json:"hash"`
		Seal        string            `json:"seal"`
	} `json:"records"`
	Merkle []struct {
		Leaves []string `json:"leaves"`
		Root   string   `json:"root"`
		Proofs []struct {
			LeafIndex int      `json:"leaf_index"`
			AuditPath []string `json:"audit_path"`
		} `json:"proofs"`
	} `json:"merkle"`
	Ledgers []struct {
		RootHash     string   `json:"root_hash"`
		ParentHashes []string `json:"parent_hashes"`
		Label        string   `json:"label"`
		CreatedAt    string   `json:"created_at"`
		Hash         string   `json:"hash"`
	} `json:"ledgers"`
	NotVerifiable []struct {
		Why    string        `json:"why"`
		Field  string        `json:"field"`
		Ledger client.Ledger `json:"ledger"`
	} `json:"ledgers_not_verifiable"`
}

func loadVectors(t *testing.T) vectors {
	t.Helper()
	b, err := os.ReadFile("../kurahash/testdata/hashes.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Records) < 4 || len(v.Ledgers) < 3 || len(v.Merkle) == 0 {
		t.Fatal("vector file is missing sections")
	}
	return v
}

// vectorRecords returns the vector records as the API would hand them out.
func vectorRecords(t *testing.T) []client.Record {
	t.Helper()
	var out []client.Record
	for i, r := range loadVectors(t).Records {
		out = append(out, client.Record{
			ID:          fmt.Sprintf("0193a000-0000-7000-8000-%012d", i),
			Hash:        r.Hash,
			ContentHash: r.ContentHash,
			Seal:        r.Seal,
			Type:        r.Type,
			Content:     r.Content,
			AuthorID:    r.AuthorID,
			Metadata:    r.Metadata,
			CreatedAt:   r.CreatedAt,
		})
	}
	return out
}

// vectorLedgers returns the three vector ledgers with the records they hold:
// ledger 0 holds records 0 and 1, ledger 1 (child of 0) records 0..3, and
// ledger 2 (child of 1 and 0) is empty.
func vectorLedgers(t *testing.T) (ls []client.Ledger, recs [][]client.Record, parents [][]string) {
	t.Helper()
	v := loadVectors(t)
	all := vectorRecords(t)
	recs = [][]client.Record{all[:2], all[:4], nil}
	for i, vl := range v.Ledgers {
		l := client.Ledger{
			ID:          fmt.Sprintf("0193b000-0000-7000-8000-%012d", i),
			Hash:        vl.Hash,
			RootHash:    vl.RootHash,
			Label:       vl.Label,
			RecordCount: len(recs[i]),
			CreatedAt:   vl.CreatedAt,
		}
		for _, r := range recs[i] {
			l.RecordIDs = append(l.RecordIDs, r.ID)
		}
		ls = append(ls, l)
		parents = append(parents, vl.ParentHashes)
	}
	for i := range ls {
		for _, ph := range parents[i] {
			for _, p := range ls {
				if p.Hash == ph {
					ls[i].ParentIDs = append(ls[i].ParentIDs, p.ID)
				}
			}
		}
	}
	return ls, recs, parents
}

// mismatchFields returns the fields a *client.VerificationError names, in order.
func mismatchFields(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve *client.VerificationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %T (%v), want *client.VerificationError", err, err)
	}
	var out []string
	for _, m := range ve.Mismatches {
		out = append(out, m.Field)
	}
	return out
}

func TestVerifyRecord(t *testing.T) {
	t.Parallel()
	t.Run("Vectors", func(t *testing.T) {
		for i, r := range vectorRecords(t) {
			if err := client.VerifyRecord(&r); err != nil {
				t.Errorf("records[%d]: %v", i, err)
			}
		}
	})

	tests := []struct {
		name   string
		change func(r *client.Record)
		want   []string
	}{
		{"ContentChanged", func(r *client.Record) { r.Content = json.RawMessage(`{"text":"REST feels dirty"}`) }, []string{"content_hash", "hash", "seal"}},
		{"ContentReformatted", func(r *client.Record) { r.Content = json.RawMessage("{ \"text\" : \"REST feels clean\" }") }, nil},
		{"ContentInvalid", func(r *client.Record) { r.Content = json.RawMessage(`{"text":`) }, []string{"content_hash"}},
		{"TypeChanged", func(r *client.Record) { r.Type = "agent.plan" }, []string{"hash", "seal"}},
		{"AuthorChanged", func(r *client.Record) { r.AuthorID = "agent:eve" }, []string{"hash", "seal"}},
		{"MetadataChanged", func(r *client.Record) { r.Metadata = map[string]string{"project_id": "other", "trace_id": "t-1"} }, []string{"seal"}},
		{"TimeChanged", func(r *client.Record) { r.CreatedAt = "2026-11-21T09:00:00.120000001Z" }, []string{"seal"}},
		{"SealChanged", func(r *client.Record) { r.Seal = strings.Repeat("0", 64) }, []string{"seal"}},
		{"Redacted", func(r *client.Record) { r.Redacted, r.Content = true, json.RawMessage("null") }, nil},
		{"RedactedAbsentContent", func(r *client.Record) { r.Redacted, r.Content = true, nil }, nil},
		{"RedactedContentHashChanged", func(r *client.Record) {
			r.Redacted, r.Content = true, json.RawMessage("null")
			r.ContentHash = strings.Repeat("1", 64)
		}, []string{"hash", "seal"}},
		{"NullContentNotRedacted", func(r *client.Record) { r.Content = json.RawMessage("null") }, []string{"content_hash", "hash", "seal"}},
		{"Withheld", func(r *client.Record) { r.Withheld, r.Content = true, json.RawMessage("null") }, nil},
		{"WithheldContentHashChanged", func(r *client.Record) {
			r.Withheld, r.Content = true, json.RawMessage("null")
			r.ContentHash = strings.Repeat("1", 64)
		}, []string{"hash", "seal"}},
		// Withheld with content still there: the content is checked.
		{"WithheldContentChanged", func(r *client.Record) { r.Withheld, r.Content = true, json.RawMessage(`"other"`) }, []string{"content_hash", "hash", "seal"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := vectorRecords(t)[0]
			tt.change(&r)
			got := mismatchFields(t, client.VerifyRecord(&r))
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got mismatches %v, want %v", got, tt.want)
			}
		})
	}

	t.Run("Nil", func(t *testing.T) {
		if err := client.VerifyRecord(nil); err == nil {
			t.Error("got nil, want an error")
		}
	})
}

func TestVerifyLedgerHashes(t *testing.T) {
	t.Parallel()
	// A ledger whose hash has more than one reading (a control character
	// in its label) is not verified, though its hash matches: the shared
	// vectors every client checks.
	t.Run("NotVerifiable", func(t *testing.T) {
		cases := loadVectors(t).NotVerifiable
		if len(cases) < 2 {
			t.Fatal("no ledgers_not_verifiable vectors")
		}
		for i, c := range cases {
			l := c.Ledger
			v := client.CheckLedgerHashes(&l, nil, l.ParentHashes)
			var fields []string
			for _, m := range v.Mismatches {
				fields = append(fields, m.Field)
			}
			if v.OK || !slices.Contains(fields, c.Field) || slices.Contains(fields, "ledger_hash") {
				t.Errorf("ledgers_not_verifiable[%d] (%s): ok %v, mismatches %v, want %s alone", i, c.Why, v.OK, fields, c.Field)
			}
		}
	})
	t.Run("Vectors", func(t *testing.T) {
		ls, recs, parents := vectorLedgers(t)
		for i := range ls {
			if err := client.VerifyLedgerHashes(&ls[i], recs[i], parents[i]); err != nil {
				t.Errorf("ledgers[%d]: %v", i, err)
			}
		}
	})

	tests := []struct {
		name   string
		change func(l *client.Ledger, recs []client.Record, parents []string) ([]client.Record, []string)
		want   []string
	}{
		{"Unchanged", func(l *client.Ledger, recs []client.Record, parents []string) ([]client.Record, []string) {
			return recs, parents
		}, nil},
		{"RecordsSwapped", func(l *client.Ledger, recs []client.Record, parents []string) ([]client.Record, []string) {
			recs[0], recs[1] = recs[1], recs[0]
			l.RecordIDs[0], l.RecordIDs[1] = l.RecordIDs[1], l.RecordIDs[0]
			return recs, parents
		}, []string{"root_hash", "ledger_hash"}},
		{"RecordIDsDisagree", func(l *client.Ledger, recs []client.Record, parents []string) ([]client.Record, []string) {
			l.RecordIDs[2] = l.RecordIDs[3]
			return recs, parents
		}, []string{"record_id"}},
		{"RecordDropped", func(l *client.Ledger, recs []client.Record, parents []string) ([]client.Record, []string) {
			return recs[:3], parents
		}, []string{"record_count", "record_ids", "root_hash", "ledger_hash"}},
		{"RecordContentChanged", func(l *client.Ledger, recs []client.Record, parents []string) ([]client.Record, []string) {
			recs[2].Content = json.RawMessage(`{"arguments":{"n":4,"repo":"kura"},"status":"pending","tool_name":"github"}`)
			return recs, parents
		}, []string{"content_hash", "hash", "seal", "root_hash", "ledger_hash"}},
		{"RecordSealForged", func(l *client.Ledger, recs []client.Record, parents []string) ([]client.Record, []string) {
			// A record whose stored seal was rewritten to match a changed
			// time still breaks the root: the root is over computed seals.
			recs[1].CreatedAt = "2026-11-21T09:00:01.000000001Z"
			recs[1].Seal = kurahash.Seal(recs[1].Hash, kurahash.MetadataJSON(recs[1].Metadata), recs[1].CreatedAt)
			return recs, parents
		}, []string{"root_hash", "ledger_hash"}},
		{"RedactedRecord", func(l *client.Ledger, recs []client.Record, parents []string) ([]client.Record, []string) {
			recs[3].Redacted, recs[3].Content = true, json.RawMessage("null")
			return recs, parents
		}, nil},
		{"WithheldRecord", func(l *client.Ledger, recs []client.Record, parents []string) ([]client.Record, []string) {
			recs[2].Withheld, recs[2].Content = true, json.RawMessage("null")
			return recs, parents
		}, nil},
		{"LabelChanged", func(l *client.Ledger, recs []client.Record, parents []string) ([]client.Record, []string) {
			l.Label = "hashi-turn-2-out"
			return recs, parents
		}, []string{"ledger_hash"}},
		{"ParentHashWrong", func(l *client.Ledger, recs []client.Record, parents []string) ([]client.Record, []string) {
			return recs, []string{strings.Repeat("2", 64)}
		}, []string{"ledger_hash"}},
		{"ParentHashMissing", func(l *client.Ledger, recs []client.Record, parents []string) ([]client.Record, []string) {
			return recs, nil
		}, []string{"parent_ids", "ledger_hash"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ls, recs, parents := vectorLedgers(t)
			l := ls[1] // four records, one parent
			rs := append([]client.Record(nil), recs[1]...)
			l.RecordIDs = append([]string(nil), l.RecordIDs...)
			rs, ps := tt.change(&l, rs, append([]string(nil), parents[1]...))
			got := mismatchFields(t, client.VerifyLedgerHashes(&l, rs, ps))
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got mismatches %v, want %v", got, tt.want)
			}
		})
	}

	t.Run("MismatchPosition", func(t *testing.T) {
		ls, recs, parents := vectorLedgers(t)
		rs := append([]client.Record(nil), recs[1]...)
		rs[2].AuthorID = "agent:eve"
		err := client.VerifyLedgerHashes(&ls[1], rs, parents[1])
		var ve *client.VerificationError
		if !errors.As(err, &ve) {
			t.Fatalf("got %v, want a *client.VerificationError", err)
		}
		m := ve.Mismatches[0]
		if m.RecordID != rs[2].ID || m.Position == nil || *m.Position != 2 {
			t.Errorf("got record %q at %v, want %q at 2", m.RecordID, m.Position, rs[2].ID)
		}
		if !strings.Contains(err.Error(), "ledger "+ls[1].ID) {
			t.Errorf("got message %q, want it to name the ledger", err)
		}
	})
}

func TestVerifyLedgerSignature(t *testing.T) {
	t.Parallel()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	ls, _, _ := vectorLedgers(t)
	l := ls[0]
	l.Signature = hex.EncodeToString(ed25519.Sign(priv, kurahash.LedgerSigningMessage(l.Hash)))
	key := "ed25519:" + hex.EncodeToString(pub)

	if err := client.VerifyLedgerSignature(&l, key); err != nil {
		t.Fatalf("good signature: %v", err)
	}
	other := l
	other.Hash = ls[1].Hash
	if got := mismatchFields(t, client.VerifyLedgerSignature(&other, key)); fmt.Sprint(got) != "[signature]" {
		t.Errorf("signature over another hash: got %v, want [signature]", got)
	}
	for name, k := range map[string]string{"NoPrefix": hex.EncodeToString(pub), "Short": "ed25519:abcd", "NotHex": "ed25519:" + strings.Repeat("zz", 32)} {
		if err := client.VerifyLedgerSignature(&l, k); err == nil {
			t.Errorf("%s key: got nil, want an error", name)
		}
	}
	unsigned := l
	unsigned.Signature = ""
	if err := client.VerifyLedgerSignature(&unsigned, key); err == nil || !strings.Contains(err.Error(), "not signed") {
		t.Errorf("unsigned ledger: got %v, want a not signed error", err)
	}
}

func TestVerifyHeadSignature(t *testing.T) {
	t.Parallel()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	key := "ed25519:" + hex.EncodeToString(pub)
	const session = "0193a000-0000-7000-8000-000000000001"
	ls, _, _ := vectorLedgers(t)
	e := client.ReflogEntry{Seq: 3, To: ls[0].ID, HeadHash: ls[0].Hash}
	e.Signature = hex.EncodeToString(ed25519.Sign(priv, kurahash.HeadSigningMessage(session, e.Seq, e.HeadHash)))

	if err := client.VerifyHeadSignature(session, &e, key); err != nil {
		t.Fatalf("good signature: %v", err)
	}
	tests := []struct {
		name   string
		change func(e *client.ReflogEntry) (sessionID string)
	}{
		{"OtherSession", func(e *client.ReflogEntry) string { return "0193a000-0000-7000-8000-000000000002" }},
		{"OtherSeq", func(e *client.ReflogEntry) string { e.Seq = 4; return session }},
		{"OtherHash", func(e *client.ReflogEntry) string { e.HeadHash = ls[1].Hash; return session }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := e
			sid := tt.change(&changed)
			if got := mismatchFields(t, client.VerifyHeadSignature(sid, &changed, key)); fmt.Sprint(got) != "[signature]" {
				t.Errorf("got %v, want [signature]", got)
			}
		})
	}
	unsigned := e
	unsigned.Signature = ""
	if err := client.VerifyHeadSignature(session, &unsigned, key); err == nil || !strings.Contains(err.Error(), "not signed") {
		t.Errorf("unsigned head move: got %v, want a not signed error", err)
	}
	if err := client.VerifyHeadSignature(session, &e, "ed25519:abcd"); err == nil {
		t.Error("short key: got nil, want an error")
	}
}

func TestVerifyProof(t *testing.T) {
	t.Parallel()
	for _, m := range loadVectors(t).Merkle {
		for _, vp := range m.Proofs {
			p := &client.Proof{LeafIndex: vp.LeafIndex, TreeSize: len(m.Leaves), RootHash: m.Root, AuditPath: vp.AuditPath}
			if err := client.VerifyProof(p, m.Leaves[vp.LeafIndex]); err != nil {
				t.Errorf("%d leaves, leaf %d: %v", len(m.Leaves), vp.LeafIndex, err)
			}
			if len(m.Leaves) > 1 {
				other := m.Leaves[(vp.LeafIndex+1)%len(m.Leaves)]
				if err := client.VerifyProof(p, other); err == nil {
					t.Errorf("%d leaves, leaf %d: proof verified for another seal", len(m.Leaves), vp.LeafIndex)
				}
			}
		}
	}
	if err := client.VerifyProof(&client.Proof{RootHash: "xyz", TreeSize: 1}, strings.Repeat("0", 64)); err == nil {
		t.Error("malformed root: got nil, want an error")
	}
}
