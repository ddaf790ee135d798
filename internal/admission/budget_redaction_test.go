package admission_test

import (
	"testing"

	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
)

// A secret in an item the budget cut was never handed out, so it is not
// counted; the same item kept is counted once.
func TestCompile_RedactionsCountOnlyKeptItems(t *testing.T) {
	t.Parallel()
	ok := newNode("fact", "ok", "active", "trusted")
	sec := newNode("note", "sec", "candidate", "unknown")
	sec.Summary = "password=hunter22"
	nodes := []kura.Node{ok, sec}
	all := admission.Compile(nodes, nil, &admission.Request{}, nil)
	if all.Redactions != 1 || len(all.Buckets.InspectBeforeUse) != 1 {
		t.Fatalf("unbudgeted: %d redactions, %+v", all.Redactions, all.Buckets)
	}
	first := admission.ItemSize(&all.Buckets.UseNow[0])
	cut := admission.Compile(nodes, nil, &admission.Request{BudgetBytes: first}, nil)
	if cut.Redactions != 0 || cut.Omitted[admission.InspectBeforeUse] != 1 || len(cut.Buckets.UseNow) != 1 {
		t.Errorf("budgeted: %d redactions, omitted %v", cut.Redactions, cut.Omitted)
	}
}
