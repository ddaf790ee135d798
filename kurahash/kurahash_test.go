package kurahash_test

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/kura-memory/kura/kurahash"
)

// vectors mirrors shared/vectors/hashes.json (copied into testdata so the
// tests run from any clone).
type vectors struct {
	JCS []struct {
		Input     string `json:"input"`
		Canonical string `json:"canonical"`
	} `json:"jcs"`
	Records []struct {
		Type        string            `json:"type"`
		Content     json.RawMessage   `json:"content"`
		AuthorID    string            `json:"author_id"`
		Metadata    map[string]string `json:"metadata"`
		CreatedAt   string            `json:"created_at"`
		JCSContent  string            `json:"jcs_content"`
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
		Why    string `json:"why"`
		Field  string `json:"field"`
		Ledger struct {
			RootHash     string   `json:"root_hash"`
			ParentHashes []string `json:"parent_hashes"`
			Label        string   `json:"label"`
			CreatedAt    string   `json:"created_at"`
			Hash         string   `json:"hash"`
		} `json:"ledger"`
	} `json:"ledgers_not_verifiable"`
}

func loadVectors(t *testing.T) vectors {
	t.Helper()
	b, err := os.ReadFile("testdata/hashes.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.JCS) == 0 || len(v.Records) == 0 || len(v.Merkle) == 0 || len(v.Ledgers) == 0 || len(v.NotVerifiable) == 0 {
		t.Fatal("vector file is missing sections")
	}
	return v
}

func mustHash(t *testing.T, s string) [32]byte {
	t.Helper()
	b, err := kurahash.DecodeHash(s)
	if err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return b
}

func TestCanonical_Vectors(t *testing.T) {
	t.Parallel()
	for i, c := range loadVectors(t).JCS {
		got, err := kurahash.Canonical([]byte(c.Input))
		if err != nil {
			t.Fatalf("jcs[%d]: %v", i, err)
		}
		if string(got) != c.Canonical {
			t.Errorf("jcs[%d]: got %s, want %s", i, got, c.Canonical)
		}
	}
}

func TestRecord_Vectors(t *testing.T) {
	t.Parallel()
	for i, r := range loadVectors(t).Records {
		ch, canon, err := kurahash.ContentHash(r.Content)
		if err != nil {
			t.Fatalf("records[%d]: %v", i, err)
		}
		if string(canon) != r.JCSContent {
			t.Errorf("records[%d] canonical: got %s, want %s", i, canon, r.JCSContent)
		}
		if ch != r.ContentHash {
			t.Errorf("records[%d] content_hash: got %s, want %s", i, ch, r.ContentHash)
		}
		h := kurahash.RecordHash(r.Type, ch, r.AuthorID)
		if h != r.Hash {
			t.Errorf("records[%d] hash: got %s, want %s", i, h, r.Hash)
		}
		if s := kurahash.Seal(h, kurahash.MetadataJSON(r.Metadata), r.CreatedAt); s != r.Seal {
			t.Errorf("records[%d] seal: got %s, want %s", i, s, r.Seal)
		}
	}
}

func TestMerkle_Vectors(t *testing.T) {
	t.Parallel()
	for i, m := range loadVectors(t).Merkle {
		leaves := make([][32]byte, len(m.Leaves))
		for j, l := range m.Leaves {
			leaves[j] = mustHash(t, l)
		}
		root := kurahash.MerkleRoot(leaves)
		if got := hex.EncodeToString(root[:]); got != m.Root {
			t.Errorf("merkle[%d] (%d leaves) root: got %s, want %s", i, len(leaves), got, m.Root)
		}
		if len(m.Proofs) != len(m.Leaves) {
			t.Errorf("merkle[%d]: %d proofs for %d leaves", i, len(m.Proofs), len(m.Leaves))
		}
		for _, p := range m.Proofs {
			path, err := kurahash.AuditPath(leaves, p.LeafIndex)
			if err != nil {
				t.Fatal(err)
			}
			if len(path) != len(p.AuditPath) {
				t.Fatalf("merkle[%d] leaf %d: path length %d, want %d", i, p.LeafIndex, len(path), len(p.AuditPath))
			}
			want := make([][32]byte, len(p.AuditPath))
			for j := range path {
				want[j] = mustHash(t, p.AuditPath[j])
				if path[j] != want[j] {
					t.Errorf("merkle[%d] leaf %d path[%d]: got %x, want %s", i, p.LeafIndex, j, path[j], p.AuditPath[j])
				}
			}
			if !kurahash.VerifyInclusion(leaves[p.LeafIndex], p.LeafIndex, len(leaves), want, root) {
				t.Errorf("merkle[%d] leaf %d: vector proof does not verify", i, p.LeafIndex)
			}
			// A proof must not verify for another leaf or position.
			other := (p.LeafIndex + 1) % len(leaves)
			if other != p.LeafIndex && kurahash.VerifyInclusion(leaves[other], p.LeafIndex, len(leaves), want, root) {
				t.Errorf("merkle[%d] leaf %d: proof verified for the wrong leaf", i, p.LeafIndex)
			}
		}
	}
}

func TestMerkle_LargeTreesProveEveryLeaf(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 33; n++ {
		leaves := make([][32]byte, n)
		for i := range leaves {
			leaves[i][0], leaves[i][1] = byte(i), byte(n)
		}
		root := kurahash.MerkleRoot(leaves)
		for i := range leaves {
			p, err := kurahash.AuditPath(leaves, i)
			if err != nil {
				t.Fatal(err)
			}
			if !kurahash.VerifyInclusion(leaves[i], i, n, p, root) {
				t.Fatalf("n=%d leaf %d: proof does not verify", n, i)
			}
			if n > 1 && kurahash.VerifyInclusion(leaves[i], (i+1)%n, n, p, root) {
				t.Fatalf("n=%d leaf %d: proof verified at the wrong index", n, i)
			}
		}
	}
}

func TestLedger_Vectors(t *testing.T) {
	t.Parallel()
	v := loadVectors(t)
	for i, l := range v.Ledgers {
		if got := kurahash.LedgerHash(l.RootHash, l.ParentHashes, l.Label, l.CreatedAt); got != l.Hash {
			t.Errorf("ledgers[%d]: got %s, want %s", i, got, l.Hash)
		}
		if field, problem := kurahash.LedgerFramingProblem(l.ParentHashes, l.Label, l.CreatedAt); field != "" {
			t.Errorf("ledgers[%d]: %s: %s", i, field, problem)
		}
	}
	// Each of these hashes as its fields say, and no verifier may accept
	// it: the same hash has another reading (ledgers_not_verifiable[0] and
	// [1] are two readings of one hash).
	for i, c := range v.NotVerifiable {
		l := c.Ledger
		if got := kurahash.LedgerHash(l.RootHash, l.ParentHashes, l.Label, l.CreatedAt); got != l.Hash {
			t.Errorf("ledgers_not_verifiable[%d]: got hash %s, want %s", i, got, l.Hash)
		}
		if field, _ := kurahash.LedgerFramingProblem(l.ParentHashes, l.Label, l.CreatedAt); field != c.Field {
			t.Errorf("ledgers_not_verifiable[%d] (%s): refused for %q, want %q", i, c.Why, field, c.Field)
		}
	}
}

func TestLedgerFramingProblem(t *testing.T) {
	t.Parallel()
	h := strings.Repeat("ab", 32)
	for _, tt := range []struct {
		parents          []string
		label, createdAt string
		field            string
	}{
		{nil, "morning", "2026-11-21T09:00:04.000000000Z", ""},
		{[]string{h, h}, "a, b; c — é 東 😀 \u202e", "2026-11-21T09:00:04.000000000Z", ""},
		{nil, "a\nb", "t", "label"},
		{nil, "a\rb", "t", "label"},
		{nil, "a\tb", "t", "label"},
		{nil, "\x00", "t", "label"},
		{nil, "\x7f", "t", "label"},
		{nil, "\u0085", "t", "label"},
		{nil, "\u009f", "t", "label"},
		{nil, "ok", "t\n", "created_at"},
		{[]string{h + "," + h}, "ok", "t", "parent_hashes"},
		{[]string{strings.ToUpper(h)}, "ok", "t", "parent_hashes"},
		{[]string{h[:63]}, "ok", "t", "parent_hashes"},
		{[]string{h + "\n"}, "ok", "t", "parent_hashes"},
	} {
		if field, problem := kurahash.LedgerFramingProblem(tt.parents, tt.label, tt.createdAt); field != tt.field {
			t.Errorf("%q %q %q: got %q (%s), want %q", tt.parents, tt.label, tt.createdAt, field, problem, tt.field)
		}
	}
}

func TestCanonical_Rejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{"a":1,"a":2}`, `{"a":}`, "\"\xff\"", `[1,]`, ``, `{"a":1} x`} {
		if _, err := kurahash.Canonical([]byte(in)); err == nil {
			t.Errorf("Canonical(%q): got no error, want one", in)
		}
	}
}

// FuzzCanonical checks that canonical JSON is a fixed point and still valid
// JSON that means the same as its input.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":2,"a":1}`, `[1.0,1e21,-0]`, `"\u20ac"`, `{"x":{"y":[null,true]}}`, `1e-7`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := kurahash.Canonical(in)
		if err != nil {
			return
		}
		if !json.Valid(c) {
			t.Fatalf("canonical form of %q is not valid JSON: %q", in, c)
		}
		c2, err := kurahash.Canonical(c)
		if err != nil {
			t.Fatalf("canonical form %q does not canonicalize again: %v", c, err)
		}
		if string(c2) != string(c) {
			t.Fatalf("not a fixed point: %q -> %q", c, c2)
		}
	})
}

func TestSealWithMetadataHash(t *testing.T) {
	t.Parallel()
	md := kurahash.MetadataJSON(map[string]string{"project_id": "hashi"})
	a := kurahash.Seal("h", md, "2026-11-21T09:00:00.000000000Z")
	b := kurahash.SealWithMetadataHash("h", kurahash.SumHex(md), "2026-11-21T09:00:00.000000000Z")
	if a != b {
		t.Fatalf("got %s, want %s", b, a)
	}
}

// FuzzLedgerFramingProblem: fields LedgerFramingProblem accepts can be read
// back from the message LedgerHash hashes in one way only, the way they
// were written; so no other fields a verifier would accept give that hash.
func FuzzLedgerFramingProblem(f *testing.F) {
	h := strings.Repeat("0f", 32)
	f.Add(h+","+h, "morning", "2026-11-21T09:00:04.000000000Z")
	f.Add("", "morning\n2026-11-21T09:00:04.000000000Z", "2026-11-21T09:00:05.000000000Z")
	f.Add(h, "a,b", "t\nu")
	f.Add(h+"\n"+h, "\x1b[2J", "\u0085")
	f.Fuzz(func(t *testing.T, parents, label, createdAt string) {
		var ps []string
		if parents != "" {
			ps = strings.Split(parents, ",")
		}
		if field, _ := kurahash.LedgerFramingProblem(ps, label, createdAt); field != "" {
			return
		}
		root := strings.Repeat("e3", 32)
		msg := "kura-ledger-v1\n" + root + "\n" + strings.Join(ps, ",") + "\n" + label + "\n" + createdAt
		parts := strings.Split(msg, "\n")
		if len(parts) != 5 || parts[1] != root || parts[3] != label || parts[4] != createdAt {
			t.Fatalf("accepted %q %q %q, whose message reads back as %q", ps, label, createdAt, parts)
		}
		back := []string(nil)
		if parts[2] != "" {
			back = strings.Split(parts[2], ",")
		}
		if strings.Join(back, "\x00") != strings.Join(ps, "\x00") || len(back) != len(ps) {
			t.Fatalf("accepted parents %q, read back as %q", ps, back)
		}
	})
}
