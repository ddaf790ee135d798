package main

import (
	"fmt"
	"strings"

	"github.com/kura-memory/kura/internal/recall"
)

// suggest returns the candidate a mistyped word most likely meant, or ""
// when none is close: the only candidate it is a prefix of ("mem" for
// "memory"), else the nearest within one edit for words of up to four
// characters and two edits for longer ones, the first in order on a tie.
// The bound keeps "frobnicate" from being offered "context".
func suggest(word string, candidates []string) string {
	if word == "" {
		return ""
	}
	var prefixed []string
	for _, c := range candidates {
		if strings.HasPrefix(c, word) {
			prefixed = append(prefixed, c)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	limit := 1
	if len([]rune(word)) > 4 {
		limit = 2
	}
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if d := recall.EditDistance(word, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// topLevelNames lists the words that may follow "kura": the commands and
// the groups ("turn" for "turn open"), in table order, each once.
func topLevelNames() []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range commandTable() {
		w, _, _ := strings.Cut(c.name, " ")
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// subcommandNames lists the words that may follow group ("open", "close"...
// for "turn").
func subcommandNames(group string) []string {
	var out []string
	for _, c := range groupCommands(group) {
		out = append(out, strings.TrimPrefix(c.name, group+" "))
	}
	return out
}

// didYouMean returns the command a mistyped name most likely meant
// ("session" for "sessoin", "turn open" for "turn opne"), or "".
func didYouMean(name string) string {
	if group, sub, ok := strings.Cut(name, " "); ok && len(groupCommands(group)) > 0 {
		if s := suggest(sub, subcommandNames(group)); s != "" {
			return group + " " + s
		}
		return ""
	}
	return suggest(name, topLevelNames())
}

// unknownCommand is the message for a command kura does not have, with a
// suggestion when one is close.
func unknownCommand(name string) string {
	if s := didYouMean(name); s != "" {
		return fmt.Sprintf("unknown command %q: did you mean %q? (run 'kura help' for the commands)", name, s)
	}
	return fmt.Sprintf("unknown command %q; run 'kura help' for the commands", name)
}
