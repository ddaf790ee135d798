package memory

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
)

// ScoreNode must agree with Score over Terms, which the search index uses.
func TestScoreNodeMatchesScore(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	vocab := strings.Fields("rest API payments Queue retry back-off cache go file svc users Déjà 東京 a1 b2")
	text := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(w, []string{" ", "-", ", ", "/"}[rng.IntN(4)])
	}
	for i := range 500 {
		owner := "agent:" + strings.ToLower(strings.ReplaceAll(text(1), " ", ""))
		n := kura.Node{Kind: "fact", ID: fmt.Sprintf("n%d.%s", i, strings.Fields(text(1))[0]), Title: text(rng.IntN(3)), Summary: text(rng.IntN(6)),
			TargetFiles: []string{text(2) + ".go"}, Owner: &owner,
			Metadata: json.RawMessage(fmt.Sprintf(`{"k":%q,"n":[%d,true]}`, text(1), rng.IntN(3)))}
		q := Words(text(1 + rng.IntN(3)))
		s1, r1 := Score(Terms(&n), q)
		s2, r2 := ScoreNode(&n, q)
		if s1 != s2 || fmt.Sprint(r1) != fmt.Sprint(r2) {
			t.Fatalf("node %+v query %v: Score %d %v, ScoreNode %d %v", n, q, s1, r1, s2, r2)
		}
	}
}
