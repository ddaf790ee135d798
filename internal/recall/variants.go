package recall

import "strings"

// irregular lists English verbs whose past forms a stemmer cannot bring
// back to the verb: base, past, past participle (the same word twice when
// two forms agree). A question asks in the present ("when did she go",
// "what did he buy") about what was told in the past ("I went", "we
// bought"): Variants bridges the two. Forms that are also common nouns or
// adjectives of another sense (rose, felt, fell, lead, wound, left, bit,
// lay) are left out, so a query about a flower does not find every rise.
var irregular = []string{
	"arise arose arisen", "awake awoke awoken", "bear bore borne", "beat beat beaten", "become became become",
	"begin began begun", "bend bent bent", "bet bet bet", "bind bound bound", "bite bit bitten",
	"bleed bled bled", "blow blew blown", "break broke broken", "breed bred bred", "bring brought brought",
	"build built built", "burn burnt burnt", "buy bought bought", "catch caught caught", "choose chose chosen",
	"cling clung clung", "come came come", "creep crept crept", "deal dealt dealt", "dig dug dug",
	"draw drew drawn", "dream dreamt dreamt", "drink drank drunk", "drive drove driven", "eat ate eaten",
	"feed fed fed", "feel felt felt", "fight fought fought", "find found found", "flee fled fled",
	"fly flew flown", "forbid forbade forbidden", "forget forgot forgotten", "forgive forgave forgiven",
	"freeze froze frozen", "give gave given", "go went gone", "grind ground ground", "grow grew grown",
	"hang hung hung", "hear heard heard", "hide hid hidden", "hold held held", "keep kept kept",
	"kneel knelt knelt", "know knew known", "lead led led", "leap leapt leapt", "learn learnt learnt",
	"leave left left", "lend lent lent", "lose lost lost", "make made made", "mean meant meant",
	"meet met met", "pay paid paid", "prove proved proven", "ride rode ridden", "ring rang rung",
	"rise rose risen", "run ran run", "say said said", "see saw seen", "seek sought sought",
	"sell sold sold", "send sent sent", "sew sewed sewn", "shake shook shaken", "shine shone shone",
	"shoot shot shot", "show showed shown", "shrink shrank shrunk", "sing sang sung", "sink sank sunk",
	"sit sat sat", "slay slew slain", "sleep slept slept", "slide slid slid", "speak spoke spoken",
	"speed sped sped", "spend spent spent", "spin spun spun", "spit spat spat", "stand stood stood",
	"steal stole stolen", "stick stuck stuck", "sting stung stung", "stink stank stunk", "stride strode stridden",
	"strike struck struck", "string strung strung", "strive strove striven", "swear swore sworn",
	"sweep swept swept", "swim swam swum", "swing swung swung", "take took taken", "teach taught taught",
	"tear tore torn", "tell told told", "think thought thought", "throw threw thrown",
	"understand understood understood", "wake woke woken", "wear wore worn", "weave wove woven",
	"weep wept wept", "win won won", "wind wound wound", "withdraw withdrew withdrawn", "write wrote written",
}

// ambiguous forms: a past form that is also a common word of another
// sense is reached from its verb but does not lead back to it.
var ambiguous = map[string]bool{
	"rose": true, "felt": true, "fell": true, "led": true, "lead": true, "wound": true, "left": true,
	"bit": true, "ground": true, "bound": true, "found": true, "saw": true, "tore": true, "spat": true,
	"bore": true, "shot": true, "stuck": true,
}

var variants = func() map[string][]string {
	m := map[string][]string{}
	add := func(from, to string) {
		if from != to && !containsString(m[from], to) {
			m[from] = append(m[from], to)
		}
	}
	for _, line := range irregular {
		forms := strings.Fields(line)
		for _, f := range forms {
			if ambiguous[f] && f != forms[0] {
				continue
			}
			for _, g := range forms {
				add(f, g)
			}
		}
	}
	return m
}()

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Variants returns the other forms of a lowercase word that a stemmer does
// not reach: the forms of an irregular verb ("go": went, gone; "bought":
// buy). Most words have none.
func Variants(word string) []string { return variants[word] }
