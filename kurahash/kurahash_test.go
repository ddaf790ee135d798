package kurahash_test

import (
	"encoding/hex"
	"encoding/json"
	"os"
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
	if len(v.JCS) == 0 || len(v.Records) == 0 || len(v.Merkle) == 0 || len(v.Ledgers) == 0 {
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
	for i, l := range loadVectors(t).Ledgers {
		if got := kurahash.LedgerHash(l.RootHash, l.ParentHashes, l.Label, l.CreatedAt); got != l.Hash {
			t.Errorf("ledgers[%d]: got %s, want %s", i, got, l.Hash)
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
