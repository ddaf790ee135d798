package evalset

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
)

// MemoryConfig sizes a memory set. Conversations are generated one after
// another from the seed, so the first n conversations of a larger set are
// the set of n conversations.
type MemoryConfig struct {
	Seed          uint64
	Conversations int
}

// Turn is one dialog turn: one episode node.
type Turn struct {
	ID      string `json:"id"`      // node id: c<conversation>-s<session>-t<turn>
	Session int    `json:"session"` // 1-based
	Speaker string `json:"speaker"`
	Title   string `json:"title"` // "<speaker>, session <n>"
	Text    string `json:"text"`  // what was said: the node's summary
	// Role is why the turn is there: "evidence" (tells a fact a question
	// asks about), "distractor" (the same topic, answering nothing),
	// "reaction" or "smalltalk".
	Role string `json:"role"`
}

// Conversation is two people talking over several sessions.
type Conversation struct {
	Index    int       `json:"index"`
	Speakers [2]string `json:"speakers"`
	Sessions int       `json:"sessions"`
	Turns    []Turn    `json:"turns"`
}

// Question is a question about one conversation and the turns that
// answer it.
type Question struct {
	ID       string   `json:"id"`
	Conv     int      `json:"conversation"`
	Text     string   `json:"text"`
	Evidence []string `json:"evidence"` // turn ids, all needed to answer
	Fact     string   `json:"fact"`     // the fact type asked about
	// Tags say how the question is asked: "multi" (two evidence turns),
	// "synonym" (names a thing by another word than the evidence),
	// "pronoun" (she/he for the name), "typo", "keywords" (a bare keyword
	// list, no sentence), "no_overlap" (no word of the question but the
	// person's name appears in the evidence, before any stemming).
	Tags []string `json:"tags,omitempty"`
}

// MemorySet is the memory evaluation set.
type MemorySet struct {
	Conversations []Conversation `json:"conversations"`
	Questions     []Question     `json:"questions"`
}

// Turns counts every turn of every conversation.
func (s *MemorySet) Turns() int {
	n := 0
	for i := range s.Conversations {
		n += len(s.Conversations[i].Turns)
	}
	return n
}

// How questions are asked: shares of the questions.
const (
	pronounShare   = 0.08
	keywordsShare  = 0.10
	typoShare      = 0.04
	secondQuestion = 0.30 // a second question about the same fact
	multiShare     = 0.4  // chance a person gets each two-turn fact
)

// Memory generates the memory set.
func Memory(cfg MemoryConfig) *MemorySet {
	s := &MemorySet{}
	for c := range cfg.Conversations {
		// One generator per conversation, so conversation c is the same
		// whatever the number of conversations asked for.
		r := rand.New(rand.NewPCG(cfg.Seed, uint64(c)+1))
		conv, qs := genConversation(r, c)
		s.Conversations = append(s.Conversations, conv)
		s.Questions = append(s.Questions, qs...)
	}
	for i := range s.Questions {
		s.Questions[i].ID = fmt.Sprintf("q%05d", i+1)
	}
	return s
}

// factInst is a fact of one speaker in one conversation.
type factInst struct {
	ft            *factType
	owner         int // speaker index
	d             *draw
	session, then int // sessions of the telling and of the second turn
	sayID, thenID string
}

// item is a turn placed in a session before the session is written out.
type item struct {
	spk  int
	text string
	role string
	f    *factInst
	then bool    // the fact's second turn
	key  float64 // order within the session
}

func genConversation(r *rand.Rand, idx int) (Conversation, []Question) {
	a := r.IntN(len(people))
	b := r.IntN(len(people) - 1)
	if b >= a {
		b++
	}
	sp := [2]*person{&people[a], &people[b]}
	conv := Conversation{Index: idx, Speakers: [2]string{sp[0].name, sp[1].name}, Sessions: 18 + r.IntN(9)}
	ns := conv.Sessions

	var facts []*factInst
	for owner := range 2 {
		groups := map[string]bool{}
		add := func(ft *factType) {
			d := &draw{r: r, v: map[string]string{"name": sp[owner].name, "other": sp[1-owner].name}, owner: sp[owner]}
			ft.draw(d)
			facts = append(facts, &factInst{ft: ft, owner: owner, d: d})
			groups[ft.group] = true
		}
		for i := range factTypes {
			if ft := &factTypes[i]; ft.then != nil && r.Float64() < multiShare {
				add(ft)
			}
		}
		want := 30 + r.IntN(9)
		for _, i := range r.Perm(len(factTypes)) {
			if ft := &factTypes[i]; ft.then == nil && !groups[ft.group] && want > 0 {
				add(ft)
				want--
			}
		}
	}

	// Place every turn in a session. A second turn comes in a later
	// session than the first; distractors come after the telling.
	sessions := make([][]*item, ns)
	place := func(s int, it *item) { sessions[s] = append(sessions[s], it) }
	for _, f := range facts {
		if f.ft.then != nil {
			f.session = r.IntN(ns - 1)
			f.then = f.session + 1 + r.IntN(ns-1-f.session)
		} else {
			f.session = r.IntN(ns)
		}
		say := &item{spk: f.owner, text: fill(pick(r, f.ft.say), f.d.v), role: "evidence", f: f, key: r.Float64()}
		place(f.session, say)
		if f.ft.then != nil {
			spk := f.owner
			if f.ft.thenOther {
				spk = 1 - f.owner
			}
			place(f.then, &item{spk: spk, text: fill(pick(r, f.ft.then), f.d.v), role: "evidence", f: f, then: true, key: r.Float64()})
		}
		after := func() (int, float64) {
			if f.session < ns-1 && r.IntN(4) > 0 {
				return f.session + 1 + r.IntN(ns-1-f.session), r.Float64()
			}
			return f.session, say.key + (1-say.key)*r.Float64()
		}
		for _, i := range r.Perm(len(f.ft.near))[:min(len(f.ft.near), r.IntN(3))] {
			s, k := after()
			place(s, &item{spk: f.owner, text: fill(f.ft.near[i], f.d.v), role: "distractor", key: k})
		}
		if len(f.ft.other) > 0 && r.IntN(2) == 0 {
			s, k := after()
			place(s, &item{spk: 1 - f.owner, text: fill(pick(r, f.ft.other), f.d.v), role: "distractor", key: k})
		}
	}

	// Write the sessions out: greetings, then every item with small talk
	// before it and a reaction after it, then goodbyes.
	for s := range ns {
		items := sessions[s]
		sort.SliceStable(items, func(i, j int) bool { return items[i].key < items[j].key })
		n := 0
		last := -1
		title := func(spk int) string { return fmt.Sprintf("%s, session %d", sp[spk].name, s+1) }
		emit := func(spk int, text, role string) string {
			n++
			id := fmt.Sprintf("c%03d-s%02d-t%03d", idx, s+1, n)
			conv.Turns = append(conv.Turns, Turn{ID: id, Session: s + 1, Speaker: sp[spk].name, Title: title(spk), Text: text, Role: role})
			last = spk
			return id
		}
		addressing := func(spk int) map[string]string {
			return map[string]string{"other": sp[1-spk].name, "name": sp[1-spk].name}
		}
		starter := r.IntN(2)
		emit(starter, fill(pick(r, greetings), addressing(starter)), "smalltalk")
		emit(1-starter, fill(pick(r, greetingReplies), addressing(1-starter)), "smalltalk")
		for _, it := range items {
			for range r.IntN(3) {
				emit(1-last, pick(r, smallTalk), "smalltalk")
			}
			if it.spk == last {
				emit(1-last, pick(r, handovers), "smalltalk")
			}
			id := emit(it.spk, it.text, it.role)
			other := 1 - it.spk
			switch {
			case it.f != nil && it.then:
				it.f.thenID = id
				if r.IntN(5) < 3 {
					emit(other, fill(pick(r, acks[it.f.ft.tone]), it.f.d.v), "reaction")
				}
			case it.f != nil:
				it.f.sayID = id
				if r.IntN(5) < 4 {
					t := pick(r, acks[it.f.ft.tone])
					if r.IntN(5) < 3 {
						t = pick(r, it.f.ft.react)
					}
					emit(other, fill(t, it.f.d.v), "reaction")
				}
			case r.IntN(2) == 0:
				emit(other, pick(r, smallTalk), "smalltalk")
			}
		}
		emit(1-last, pick(r, closings), "smalltalk")
		emit(1-last, fill(pick(r, closingReplies), addressing(last)), "smalltalk")
	}

	text := map[string]string{}
	for _, t := range conv.Turns {
		text[t.ID] = t.Text
	}
	var qs []Question
	for _, f := range facts {
		asks := r.Perm(len(f.ft.ask))
		k := 1
		if len(asks) > 1 && r.Float64() < secondQuestion {
			k = 2
		}
		for _, ai := range asks[:k] {
			qs = append(qs, question(r, idx, f, f.ft.ask[ai], sp, text))
		}
	}
	return conv, qs
}

// question asks one question about fact f with template tpl.
func question(r *rand.Rand, conv int, f *factInst, tpl string, sp [2]*person, text map[string]string) Question {
	owner := sp[f.owner]
	v := make(map[string]string, len(f.d.v)+5)
	for k, x := range f.d.v {
		v[k] = x
	}
	q := Question{Conv: conv, Fact: f.ft.name, Evidence: []string{f.sayID}}
	if f.thenID != "" {
		q.Evidence = append(q.Evidence, f.thenID)
		q.Tags = append(q.Tags, "multi")
	}
	if f.d.synonym && strings.Contains(tpl, "Q}") {
		q.Tags = append(q.Tags, "synonym")
	}
	v["P"], v["P's"], v["O"] = owner.name, owner.name+"'s", sp[1-f.owner].name
	v["Pobj"], v["Pposs"] = "him", "his"
	if owner.female {
		v["Pobj"], v["Pposs"] = "her", "her"
	}
	pronoun := !f.ft.thenOther && r.Float64() < pronounShare
	if pronoun {
		v["P"], v["P's"] = "he", "his"
		if owner.female {
			v["P"], v["P's"] = "she", "her"
		}
		q.Tags = append(q.Tags, "pronoun")
	}
	q.Text = upperFirst(fill(tpl, v))
	// A keyword query keeps the name: without it nothing says whom it is about.
	if r.Float64() < keywordsShare && !pronoun {
		q.Text = keywords(q.Text)
		q.Tags = append(q.Tags, "keywords")
	}
	if r.Float64() < typoShare {
		if t, ok := typo(r, q.Text); ok {
			q.Text = t
			q.Tags = append(q.Tags, "typo")
		}
	}
	// Diagnostic only: does any word of the question other than the names
	// appear, as written, in the evidence?
	ev := map[string]bool{}
	for _, id := range q.Evidence {
		for _, w := range words(text[id]) {
			ev[w] = true
		}
	}
	names := map[string]bool{strings.ToLower(owner.name): true, strings.ToLower(sp[1-f.owner].name): true}
	overlap := false
	for _, w := range words(q.Text) {
		if !functionWords[w] && !names[w] && ev[w] {
			overlap = true
		}
	}
	if !overlap {
		q.Tags = append(q.Tags, "no_overlap")
	}
	slices.Sort(q.Tags)
	return q
}
