package recall

// stopWords are English function words: articles, pronouns, auxiliaries,
// prepositions, conjunctions and the question words a model starts its
// questions with ("when did she go to ..."). They occur in most texts and
// say nothing about which text is meant, so a query ignores them.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range []string{
		"a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at",
		"be", "been", "before", "being", "below", "between", "both", "but", "by",
		"can", "could", "did", "do", "does", "doing", "down", "during",
		"each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers",
		"herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself",
		"just", "me", "might", "more", "most", "must", "my", "myself", "no", "nor", "not", "now",
		"of", "off", "on", "once", "only", "or", "other", "ought", "our", "ours", "ourselves", "out", "over", "own",
		"same", "shall", "she", "should", "so", "some", "such",
		"than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they",
		"this", "those", "through", "to", "too", "under", "until", "up", "us", "very",
		"was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "whose", "why", "will",
		"with", "would", "you", "your", "yours", "yourself", "yourselves",
		"s", "t", "d", "ll", "m", "re", "ve", // the tails of it's, don't, she'd, we'll, I'm, you're, I've
		"also", "ever", "much", "many", "get", "got", "tell", "please", "know", "kind",
	} {
		m[w] = true
	}
	return m
}()

// IsStopWord reports whether a lowercase word is a stop word.
func IsStopWord(w string) bool { return stopWords[w] }
