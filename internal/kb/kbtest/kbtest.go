// Package kbtest holds the knowledge-base spec's worked examples (the
// Uniswap and AAVE entries and every query the spec answers for them) and
// random workloads, so that the pure rules, the store and the HTTP API are
// all held to the same table.
package kbtest

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/kura-memory/kura/internal/kura"
)

// The spec's two entries, in insertion order.
var (
	Uniswap = kura.KBEntryInput{
		Identifier: "Uniswap contract addresses on Ethereum mainnet.",
		Keys:       []string{"Uniswap", "Contract Address", "Ethereum", "Dex", "Dex contracts"},
		Value:      "Pool: 0x12312313, Router: 0x456456456, Factory: 0x789789789",
	}
	AAVE = kura.KBEntryInput{
		Identifier: "AAVE contract addresses on Ethereum mainnet.",
		Keys:       []string{"AAVE", "Contract Address", "Ethereum", "Lending", "Money market contracts"},
		Value:      "Pool: 0x756745, MoneyMarket: 0x7890789, FlashLoan: 0xabc123",
	}
	// Entries is what the examples query: Uniswap then AAVE.
	Entries = []kura.KBEntryInput{Uniswap, AAVE}
)

// The spec's mutations of the Uniswap entry.
const (
	UpdatedValue = "Pool: 0xNEWADDR, Router: 0xNEWROUTER"
)

// UpdatedKeys are the Uniswap entry's keys after the spec's update_keys.
var UpdatedKeys = []string{"Uniswap", "Contract Address", "Ethereum", "Dex", "AMM"}

// Example is one query of the spec and what it returns: indexes into
// Entries, in order.
type Example struct {
	Name  string // the spec's call, e.g. from_key("Contract")
	Query kura.KBQuery
	Want  []int
}

func ptr(s string) *string { return &s }

// Examples are every query the spec shows for the two entries, the
// negative ones included.
var Examples = []Example{
	{`from_identifier("Uniswap")`, kura.KBQuery{Identifier: ptr("Uniswap")}, []int{0}},
	{`from_identifier("contract addresses")`, kura.KBQuery{Identifier: ptr("contract addresses")}, []int{0, 1}},
	{`from_identifier("AAVE Ethereum")`, kura.KBQuery{Identifier: ptr("AAVE Ethereum")}, []int{1}},
	{`from_identifier("Solana")`, kura.KBQuery{Identifier: ptr("Solana")}, nil},
	{`from_key("Ethereum")`, kura.KBQuery{Key: ptr("Ethereum")}, []int{0, 1}},
	{`from_key("Contract")`, kura.KBQuery{Key: ptr("Contract")}, nil},
	{`from_key("dex")`, kura.KBQuery{Key: ptr("dex")}, []int{0}},
	{`from_any_keys(["Dex", "Lending"])`, kura.KBQuery{AnyKeys: []string{"Dex", "Lending"}}, []int{0, 1}},
	{`from_any_keys(["Solana", "Polygon"])`, kura.KBQuery{AnyKeys: []string{"Solana", "Polygon"}}, nil},
	{`from_exact_keys(["Dex", "Lending"])`, kura.KBQuery{AllKeys: []string{"Dex", "Lending"}}, nil},
	{`from_exact_keys(["Ethereum", "Contract Address"])`, kura.KBQuery{AllKeys: []string{"Ethereum", "Contract Address"}}, []int{0, 1}},
	{`from_exact_keys(["AAVE", "Lending"])`, kura.KBQuery{AllKeys: []string{"AAVE", "Lending"}}, []int{1}},
}

// Workload builds random knowledge-base content from a small vocabulary,
// so that words and keys collide often: multi-byte words, case variants,
// punctuation and digits included.
type Workload struct {
	R *rand.Rand
}

// Vocabulary words; case variants and multi-byte letters make folding
// and tokenizing matter.
var Vocabulary = []string{
	"Uniswap", "uniswap", "AAVE", "aave", "contract", "Contract", "addresses", "on", "Ethereum", "mainnet",
	"pool", "v2", "0x12", "東京", "東京タワー", "déjà", "DÉJÀ", "vu", "ΟΔΟΣ", "οδος", "straße", "Kelvin", "K",
	"naïve", "über", "Über", "café", "42", "١٢٣", "a", "I",
}

// Separators join words; some are punctuation the tokenizer must split on.
var Separators = []string{" ", "  ", ", ", ". ", "-", "/", "_", ": ", "!", "\t", "\n", "'", "·", "—", "\x00"}

// KeyVocabulary are keys, with case variants and a key holding a comma.
var KeyVocabulary = []string{"Dex", "dex", "DEX", "Lending", "lending", "Ethereum", "Contract Address", "contract address",
	"AMM", "NFT", "東京", "Déjà", "déjà", "a,b", "ΟΔΟΣ", "οδος", "K", "k", "x y"}

// Text returns up to n vocabulary words joined by random separators.
func (w Workload) Text(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 || w.R.IntN(4) == 0 {
			b.WriteString(Separators[w.R.IntN(len(Separators))])
		}
		b.WriteString(Vocabulary[w.R.IntN(len(Vocabulary))])
	}
	if w.R.IntN(3) == 0 {
		b.WriteString([]string{".", "?", "!", "…"}[w.R.IntN(4)])
	}
	return b.String()
}

// Keys returns up to n keys drawn from KeyVocabulary (repeats possible).
func (w Workload) Keys(n int) []string {
	out := make([]string, w.R.IntN(n+1))
	for i := range out {
		out[i] = KeyVocabulary[w.R.IntN(len(KeyVocabulary))]
	}
	return out
}

// Identifier returns a short random identifier; a small space of them, so
// upserts replace as often as they create.
func (w Workload) Identifier() string { return w.Text(1 + w.R.IntN(4)) }

// Value returns a random value.
func (w Workload) Value() string {
	return fmt.Sprintf("value %d %s", w.R.IntN(1000), w.Text(w.R.IntN(3)))
}

// Query returns a random query: no condition, one, or several of every
// form combined (a condition drawn twice keeps the last draw).
func (w Workload) Query() kura.KBQuery {
	var q kura.KBQuery
	for range w.R.IntN(4) {
		switch w.R.IntN(4) {
		case 0:
			s := w.Text(w.R.IntN(3))
			q.Identifier = &s
		case 1:
			k := KeyVocabulary[w.R.IntN(len(KeyVocabulary))]
			q.Key = &k
		case 2:
			q.AnyKeys = w.Keys(3)
		case 3:
			q.AllKeys = w.Keys(3)
		}
	}
	return q
}
