package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// kbBenchEntries is a knowledge base of entries shaped like an operator's:
// identifiers are sentences naming a product, what the entry holds and
// where it applies, keys are its tags, values a few hundred bytes of
// addresses and prose. The same seed gives the same entries.
func kbBenchEntries(n int, seed uint64) []kura.KBEntryInput {
	rng := rand.New(rand.NewPCG(seed, 11))
	parts := strings.Fields("ka lo ven dri mar tes qui zon bel ra nor vik sel tua pre om gal fen ixo dar lum cor ser tal wen")
	names := make([]string, 3000)
	for i := range names {
		var b strings.Builder
		for range 2 + rng.IntN(2) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		names[i] = strings.ToUpper(b.String()[:1]) + b.String()[1:] + fmt.Sprint(i%7)
	}
	kinds := []string{"contract addresses", "API endpoints", "deployment runbook", "pricing tiers", "incident postmortem",
		"oncall rotation", "credentials location", "rate limits", "SLA terms", "release notes", "migration plan",
		"architecture overview", "support contacts", "token allowances", "governance proposals", "audit findings",
		"fee schedule", "liquidity pools", "oracle feeds", "bridge routes", "feature flags", "access policy",
		"backup schedule", "monitoring dashboards", "error budget"}
	places := []string{"Ethereum mainnet", "Arbitrum One", "Optimism", "Base", "Polygon PoS", "Solana", "eu-west-1",
		"us-east-1", "ap-south-1", "staging", "production", "testnet"}
	forms := []string{"%s %s on %s.", "%[2]s for %[1]s in %[3]s", "Where to find the %s %s (%s)?", "%s: %s, %s edition.",
		"The %[2]s of %[1]s as used on %[3]s since %[4]d."}
	out := make([]kura.KBEntryInput, 0, n)
	seen := map[string]bool{}
	for len(out) < n {
		name, kind, place := names[rng.IntN(len(names))], kinds[rng.IntN(len(kinds))], places[rng.IntN(len(places))]
		id := fmt.Sprintf(forms[rng.IntN(len(forms))], name, kind, place, 2019+rng.IntN(8))
		if seen[id] {
			continue
		}
		seen[id] = true
		keys := []string{name, kind, place}
		for range 1 + rng.IntN(3) {
			keys = append(keys, fmt.Sprintf("%s-%d", []string{"Team", "Infra", "Dex", "Lending", "Oracle", "Billing"}[rng.IntN(6)], rng.IntN(20)))
		}
		var v strings.Builder
		fmt.Fprintf(&v, "%s %s (%s): ", name, kind, place)
		for i := range 3 + rng.IntN(4) {
			fmt.Fprintf(&v, "%s: 0x%012x, ", []string{"Pool", "Router", "Factory", "Vault", "Proxy", "Admin"}[i%6], rng.Uint64()&0xffffffffffff)
		}
		v.WriteString("updated by the platform team; see the runbook before changing anything.")
		out = append(out, kura.KBEntryInput{Identifier: id, Keys: keys, Value: v.String()})
	}
	return out
}

// BenchmarkKB_PutBatch upserts batches of 1,000 entries (a tenth of them
// replacing an entry of the batch before) into one knowledge base.
func BenchmarkKB_PutBatch(b *testing.B) {
	db := MustOpenStore(b)
	ctx := context.Background()
	const batch = kura.MaxKBBatch
	all := kbBenchEntries(200_000, 1)
	b.ResetTimer()
	start := time.Now()
	n := 0
	for i := 0; i < b.N; i++ {
		ins := make([]kura.KBEntryInput, batch)
		for j := range ins {
			k := (n + j) % len(all)
			if j%10 == 9 && n+j >= batch {
				k = (n + j - batch) % len(all) // a replace
			}
			ins[j] = all[k]
			ins[j].Value += fmt.Sprint(i)
		}
		if _, err := db.PutKBEntries(ctx, "bench", ins); err != nil {
			b.Fatal(err)
		}
		n += batch
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "entries/s")
}
