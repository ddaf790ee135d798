package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/kurahash"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// memTree is a tlog tree over in-memory stored hashes.
type memTree []tlog.Hash

func (m *memTree) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		out[i] = (*m)[x]
	}
	return out, nil
}

// logFixture is an export's log section built here, without kurad: a tree
// whose leaves 2 and 4 (seq 3 and 5) are the ledger.written events of two
// ledgers, and a checkpoint signed by the "kurad" key pub.
type logFixture struct {
	pub     string // ed25519:<hex>
	signer  note.Signer
	ledgers []client.Ledger
	section exportedLog
	origin  string
	tree    memTree
}

func newLogFixture(t testing.TB, cosigner note.Signer) *logFixture {
	const origin = "kura.test/export"
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.SplitN(vkey, "+", 3)[2])
	if err != nil || len(raw) != 33 {
		t.Fatalf("verifier key %q: %v", vkey, err)
	}
	f := &logFixture{pub: "ed25519:" + hex.EncodeToString(raw[1:]), signer: signer, origin: origin}
	f.ledgers = []client.Ledger{
		{ID: "0193a000-0000-7000-8000-00000000000a", Hash: strings.Repeat("a", 64)},
		{ID: "0193a000-0000-7000-8000-00000000000b", Hash: strings.Repeat("b", 64)},
	}
	var tree memTree
	var leaves [][]byte
	for seq := int64(1); seq <= 6; seq++ {
		l := kurahash.LogLeaf{Seq: seq, ID: fmt.Sprint("ev", seq), Type: "record.written", Project: "p", Subject: "s", At: "2026-01-01T00:00:00Z", Digest: strings.Repeat("c", 64)}
		switch seq {
		case 3:
			l.Type, l.Refs, l.Digest = "ledger.written", map[string]string{"ledger_id": f.ledgers[0].ID}, f.ledgers[0].Hash
		case 5:
			l.Type, l.Refs, l.Digest = "ledger.written", map[string]string{"ledger_id": f.ledgers[1].ID}, f.ledgers[1].Hash
		}
		data, err := kurahash.LogLeafData(l)
		if err != nil {
			t.Fatal(err)
		}
		hs, err := tlog.StoredHashes(seq-1, data, &tree)
		if err != nil {
			t.Fatal(err)
		}
		tree = append(tree, hs...)
		leaves = append(leaves, data)
	}
	root, err := tlog.TreeHash(6, &tree)
	if err != nil {
		t.Fatal(err)
	}
	signers := []note.Signer{signer}
	if cosigner != nil {
		signers = append(signers, cosigner)
	}
	text, err := note.Sign(&note.Note{Text: fmt.Sprintf("%s\n6\n%s\n", origin, b64(root))}, signers...)
	if err != nil {
		t.Fatal(err)
	}
	f.section.Checkpoint = string(text)
	f.tree = tree
	for i, seq := range []int64{3, 5} {
		p, err := tlog.ProveRecord(6, seq-1, &tree)
		if err != nil {
			t.Fatal(err)
		}
		proof := make([]string, len(p))
		for j, h := range p {
			proof[j] = b64(h)
		}
		f.section.Inclusions = append(f.section.Inclusions, exportedInclusion{LedgerID: f.ledgers[i].ID, Seq: seq, Size: 6,
			LeafHash: b64(kurahash.LogLeafHash(leaves[seq-1])), Leaf: base64.StdEncoding.EncodeToString(leaves[seq-1]), Proof: proof})
	}
	return f
}

func (f *logFixture) verify(lg *exportedLog, witnessKeys ...string) (*offlineLog, []client.SessionIssue) {
	var problems []client.SessionIssue
	rep := verifyExportLog(lg, f.ledgers, f.pub, witnessKeys, func(ledger, field, format string, args ...any) {
		problems = append(problems, client.SessionIssue{LedgerID: ledger, Field: field, Detail: fmt.Sprintf(format, args...)})
	})
	return rep, problems
}

func cloneSection(s exportedLog) *exportedLog {
	out := s
	out.Inclusions = append([]exportedInclusion{}, s.Inclusions...)
	for i := range out.Inclusions {
		out.Inclusions[i].Proof = append([]string{}, s.Inclusions[i].Proof...)
	}
	return &out
}

func TestVerifyExportLog(t *testing.T) {
	t.Parallel()
	wskey, wvkey, err := note.GenerateKey(rand.Reader, "witness.test")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := fnote.NewSignerForCosignatureV1(wskey)
	if err != nil {
		t.Fatal(err)
	}
	f := newLogFixture(t, ws)

	rep, problems := f.verify(&f.section, wvkey)
	if len(problems) != 0 || !rep.Checked || rep.LedgersProved != 2 || rep.Size != 6 || len(rep.Cosigners) != 1 {
		t.Fatalf("got %+v %+v, want both ledgers proved and the witness", rep, problems)
	}

	_, otherWitness := newWitnessKey(t)
	otherLeaf, _ := kurahash.LogLeafData(kurahash.LogLeaf{Seq: 3, Type: "ledger.written", Refs: map[string]string{"ledger_id": f.ledgers[0].ID}, Digest: strings.Repeat("f", 64)})
	tests := []struct {
		name      string
		edit      func(*exportedLog)
		witness   []string
		wantField string
		wantText  string
	}{
		{"CheckpointSizeEdited", func(l *exportedLog) { l.Checkpoint = strings.Replace(l.Checkpoint, "\n6\n", "\n7\n", 1) }, nil, "log_signature", "does not verify"},
		{"CheckpointNotANote", func(l *exportedLog) { l.Checkpoint = "junk" }, nil, "log_signature", "not a signed note"},
		{"LeafDigestEdited", func(l *exportedLog) {
			l.Inclusions[0].Leaf = base64.StdEncoding.EncodeToString(otherLeaf)
			l.Inclusions[0].LeafHash = b64(kurahash.LogLeafHash(otherLeaf))
		}, nil, "log_leaf", "not the ledger's hash"},
		{"LeafWithoutItsHash", func(l *exportedLog) { l.Inclusions[0].Leaf = base64.StdEncoding.EncodeToString(otherLeaf) }, nil, "log_leaf", "hashes to"},
		{"LeafOfAnotherLedger", func(l *exportedLog) {
			l.Inclusions[0].LedgerID, l.Inclusions[1].LedgerID = l.Inclusions[1].LedgerID, l.Inclusions[0].LedgerID
		}, nil, "log_leaf", "names ledger"},
		{"ProofEdited", func(l *exportedLog) { l.Inclusions[1].Proof[0] = b64(tlog.Hash{1}) }, nil, "log_proof", "does not lead to the root"},
		{"ProofCut", func(l *exportedLog) { l.Inclusions[1].Proof = l.Inclusions[1].Proof[1:] }, nil, "log_proof", ""},
		{"SeqMoved", func(l *exportedLog) { l.Inclusions[1].Seq = 4 }, nil, "log_leaf", "seq"},
		{"OtherSize", func(l *exportedLog) { l.Inclusions[0].Size = 5 }, nil, "log_root", "size 5"},
		{"UnknownWitness", func(l *exportedLog) {}, []string{otherWitness}, "log_cosignature", "no cosignature of witness other.witness"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lg := cloneSection(f.section)
			tt.edit(lg)
			_, problems := f.verify(lg, tt.witness...)
			found := false
			for _, p := range problems {
				if p.Field == tt.wantField && strings.Contains(p.Detail, tt.wantText) {
					found = true
				}
			}
			if !found {
				t.Errorf("got %+v, want a %s problem saying %q", problems, tt.wantField, tt.wantText)
			}
		})
	}

	t.Run("OtherKey", func(t *testing.T) {
		g := newLogFixture(t, nil)
		_, problems := g.verify(&f.section)
		if len(problems) == 0 || problems[0].Field != "log_signature" {
			t.Errorf("got %+v, want the checkpoint refused under another key", problems)
		}
	})
	t.Run("NoSectionStillVerifies", func(t *testing.T) {
		rep, problems := f.verify(nil)
		if rep.Checked || len(problems) != 0 {
			t.Errorf("got %+v %+v, want not checked and no problem", rep, problems)
		}
		if _, problems := f.verify(nil, wvkey); len(problems) != 1 || problems[0].Field != "log_cosignature" {
			t.Errorf("got %+v, want a witness key without a log section to fail", problems)
		}
	})
	t.Run("LedgerMissingFromSection", func(t *testing.T) {
		lg := cloneSection(f.section)
		lg.Inclusions = lg.Inclusions[:1]
		rep, problems := f.verify(lg)
		if len(problems) != 0 || rep.LedgersProved != 1 || len(rep.NotInLog) != 1 || rep.NotInLog[0] != f.ledgers[1].ID {
			t.Errorf("got %+v %+v, want the second ledger named as not in the log", rep, problems)
		}
	})
}

// cosignedAt is the fixture's tree of size signed by its kurad key and
// cosigned by ws, with the consistency proof from it to the tree of 6.
func (f *logFixture) cosignedAt(t *testing.T, size int64, ws note.Signer) exportedCosigned {
	t.Helper()
	root, err := tlog.TreeHash(size, &f.tree)
	if err != nil {
		t.Fatal(err)
	}
	text, err := note.Sign(&note.Note{Text: fmt.Sprintf("%s\n%d\n%s\n", f.origin, size, b64(root))}, f.signer, ws)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tlog.ProveTree(6, size, &f.tree)
	if err != nil {
		t.Fatal(err)
	}
	proof := []string{}
	for _, h := range p {
		proof = append(proof, b64(h))
	}
	return exportedCosigned{Checkpoint: string(text), Consistency: proof}
}

// Under writes the export's checkpoint is newer than what a witness
// cosigned: the witness counts through an older cosigned checkpoint that
// the export's checkpoint is proved to extend, and only then.
func TestVerifyExportLog_OlderCosigned(t *testing.T) {
	t.Parallel()
	ws, wvkey := newWitnessKey(t)
	f := newLogFixture(t, nil) // the checkpoint itself is cosigned by nobody
	older := f.cosignedAt(t, 4, ws)

	lg := cloneSection(f.section)
	lg.Cosigned = []exportedCosigned{older}
	rep, problems := f.verify(lg, wvkey)
	if len(problems) != 0 || len(rep.Witnessed) != 1 || rep.Witnessed[0].Size != 4 || rep.Witnessed[0].Witness != "other.witness" {
		t.Fatalf("got %+v %+v, want the witness counted at size 4", rep, problems)
	}
	if _, problems := f.verify(cloneSection(f.section), wvkey); len(problems) != 1 || problems[0].Field != "log_cosignature" {
		t.Fatalf("without the older checkpoint: got %+v, want log_cosignature", problems)
	}

	forkRoot := tlog.Hash{9}
	fork, err := note.Sign(&note.Note{Text: fmt.Sprintf("%s\n4\n%s\n", f.origin, b64(forkRoot))}, f.signer, ws)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		edit   func(c *exportedCosigned)
		fields []string
	}{
		{"ProofEdited", func(c *exportedCosigned) { c.Consistency[0] = b64(tlog.Hash{1}) }, []string{"log_consistency", "log_cosignature"}},
		{"ProofMissing", func(c *exportedCosigned) { c.Consistency = nil }, []string{"log_consistency", "log_cosignature"}},
		{"Forked", func(c *exportedCosigned) { c.Checkpoint = string(fork) }, []string{"log_consistency", "log_cosignature"}},
		{"NotKuradsSignature", func(c *exportedCosigned) { c.Checkpoint = strings.Replace(c.Checkpoint, "\n4\n", "\n5\n", 1) }, []string{"log_signature", "log_cosignature"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := older
			c.Consistency = append([]string{}, older.Consistency...)
			tt.edit(&c)
			lg := cloneSection(f.section)
			lg.Cosigned = []exportedCosigned{c}
			_, problems := f.verify(lg, wvkey)
			var got []string
			for _, p := range problems {
				got = append(got, p.Field)
			}
			if strings.Join(got, " ") != strings.Join(tt.fields, " ") {
				t.Errorf("got problems %+v, want fields %v", problems, tt.fields)
			}
		})
	}
}

// FuzzVerifyExportLog feeds the offline log check whatever an export's log
// section may hold: it must report, never panic, and prove nothing it
// cannot.
func FuzzVerifyExportLog(f *testing.F) {
	fx := newLogFixture(f, nil)
	in := fx.section.Inclusions[0]
	f.Add(fx.section.Checkpoint, in.LedgerID, in.Seq, in.Size, in.LeafHash, in.Leaf, strings.Join(in.Proof, ","))
	f.Add("", "", int64(0), int64(0), "", "", "")
	f.Add("a\n-1\n\n\n— a x\n", "x", int64(-1), int64(1<<62), "!", "e30=", ",,")
	f.Fuzz(func(t *testing.T, checkpoint, ledgerID string, seq, size int64, leafHash, leaf, proof string) {
		lg := &exportedLog{Checkpoint: checkpoint, Inclusions: []exportedInclusion{{LedgerID: ledgerID, Seq: seq, Size: size, LeafHash: leafHash, Leaf: leaf, Proof: strings.Split(proof, ",")}}}
		rep, problems := fx.verify(lg)
		if rep.LedgersProved > 0 && checkpoint != fx.section.Checkpoint {
			t.Errorf("proved a ledger under a checkpoint that is not the signed one")
		}
		if rep.LedgersProved+len(rep.NotInLog)+len(problems) == 0 && rep.Checked && rep.Size > 0 {
			t.Errorf("neither proved nor refused: %+v", rep)
		}
	})
}

// newWitnessKey returns a fresh witness's signer key and cosignature/v1
// verifier key.
func newWitnessKey(t testing.TB) (note.Signer, string) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, "other.witness")
	if err != nil {
		t.Fatal(err)
	}
	s, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	cv, err := fnote.VKeyToCosignatureV1(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return s, cv
}
