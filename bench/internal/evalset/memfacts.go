package evalset

import "math/rand/v2"

// A factType is one kind of thing people tell each other (a hobby, a trip, a
// new pet) and the questions it answers. A person of a conversation gets one
// fact of a type: draw picks its particulars (the slots), say is the turn
// that tells it (first person), and ask the questions about it (third
// person, about {P}). The other lists are what makes retrieval hard: near is
// the same person on the same topic in a later turn that does not answer
// the question, other is the other speaker on the topic, react is the other
// speaker's reaction right after the telling. None of near, other and react
// may hold an answer slot (the tests check it).
type factType struct {
	name  string
	group string // a person gets at most one fact of a group
	tone  tone
	draw  func(d *draw)
	// answers are the slots the questions ask for; every say template
	// holds all of them, unless then does (multi-turn facts).
	answers []string
	say     []string
	// then, when set, is a second turn, in a later session, without which
	// the questions cannot be answered: both turns are evidence. thenOther
	// gives it to the other speaker (a shared interest).
	then      []string
	thenOther bool
	ask       []string
	near      []string
	other     []string
	react     []string
}

type tone int

const (
	positive tone = iota
	negative
	neutral
)

// draw holds a fact's slots while it is drawn and expanded.
type draw struct {
	r     *rand.Rand
	v     map[string]string
	owner *person
	// synonym is set when a question slot names the evidence's word by
	// another word (kids / children).
	synonym bool
}

func (d *draw) set(k, v string)            { d.v[k] = v }
func (d *draw) pick(k string, xs []string) { d.v[k] = pick(d.r, xs) }

// tuple sets keys from one random row of rows.
func (d *draw) tuple(keys []string, rows [][]string) {
	row := pick(d.r, rows)
	for i, k := range keys {
		d.v[k] = row[i]
	}
}

// syn sets k to one word of a synonym pair for the evidence and qk to the
// word a question uses: the other one half the time.
func (d *draw) syn(k, qk string, pair [2]string) {
	i := d.r.IntN(2)
	d.v[k] = pair[i]
	if d.r.IntN(2) == 0 {
		d.v[qk] = pair[1-i]
		d.synonym = true
	} else {
		d.v[qk] = pair[i]
	}
}

// name draws a name of the pool other than the conversation's speakers.
func (d *draw) name(k string, female bool) {
	for {
		p := pick(d.r, people)
		if p.female == female && p.name != d.v["name"] && p.name != d.v["other"] {
			d.v[k] = p.name
			return
		}
	}
}

var factTypes = []factType{
	{
		name: "paint", group: "paint",
		draw:    func(d *draw) { d.pick("subj", paintSubjects) },
		answers: []string{"subj"},
		say: []string{
			"I've been painting {subj} lately, it really calms me down.",
			"Finally finished my painting of {subj}! It took me three weekends.",
			"Painting {subj} has become my favorite way to spend a Sunday morning.",
		},
		ask:   []string{"What does {P} paint?", "What has {P} been painting lately?", "What subject does {P} like to paint?", "What was {P's} latest painting of?"},
		near:  []string{"I didn't get any painting done this week, work was too busy.", "I need new brushes, mine are falling apart.", "Someone at the art fair asked if my paintings were for sale!"},
		other: []string{"I tried painting once and it was a total disaster, haha.", "Do you ever sell your paintings?"},
		react: []string{"That sounds so relaxing! I'd love to see it sometime.", "You're so talented, {name}!"},
	},
	{
		name: "event", group: "event",
		draw: func(d *draw) {
			d.pick("event", events)
			d.pick("when", whens)
			d.pick("adj", eventAdjs)
		},
		answers: []string{"when", "adj"},
		say: []string{
			"I went to the {event} {when}, it was so {adj}.",
			"{When} I finally made it to the {event}. Honestly, it was {adj}.",
			"Went to the {event} {when} and it was {adj}, I'm still thinking about it.",
		},
		ask:   []string{"When did {P} go to the {event}?", "When did {P} attend the {event}?", "How did {P} feel about the {event}?", "What did {P} think of the {event}?"},
		near:  []string{"I almost didn't go to the {event}, I was so nervous beforehand.", "There's another {event} next month, I think I'll bring a friend."},
		other: []string{"I keep meaning to check out the {event} near me."},
		react: []string{"I'm so glad you went, {name}. That takes courage.", "That sounds amazing!"},
	},
	{
		name: "pet", group: "pet",
		draw: func(d *draw) {
			d.tuple([]string{"kind", "young"}, [][]string{{"dog", "puppy"}, {"cat", "kitten"}})
			if d.v["kind"] == "dog" {
				d.pick("breed", dogBreeds)
			} else {
				d.pick("breed", catBreeds)
			}
			d.pick("pet", petNames)
			d.pick("petobj", []string{"her", "him"})
			d.v["kindQ"] = pick(d.r, []string{d.v["kind"], d.v["young"]})
			d.synonym = d.v["kindQ"] == d.v["kind"]
		},
		answers: []string{"pet", "breed"},
		say: []string{
			"We adopted a {breed} {young} named {pet} last month, and {pet} already rules the house!",
			"Meet {pet}, our new {breed} {young}! We brought {petobj} home from the shelter on Saturday.",
		},
		ask:   []string{"What is the name of {P's} {kindQ}?", "What breed is {P's} {kindQ}?", "What did {P} name {Pposs} new {kindQ}?", "What kind of {kindQ} did {P} adopt?"},
		near:  []string{"The vet visit went fine, all the shots are done.", "Training a {young} is harder than I thought.", "I never thought I'd spend so much money on {kind} toys."},
		other: []string{"I've always wanted a {kind}, but my landlord doesn't allow pets."},
		react: []string{"Aww, I need pictures right now!", "A new family member! Congrats, {name}!"},
	},
	{
		name: "job", group: "job",
		draw: func(d *draw) {
			d.pick("job", jobs)
			d.set("a_job", article(d.v["job"]))
			d.pick("company", companies)
		},
		answers: []string{"job", "company"},
		say: []string{
			"I just started a new job as {a_job} at {company}!",
			"Big news: I got the {job} position at {company}. I start Monday!",
		},
		ask:   []string{"Where does {P} work?", "What is {P's} new job?", "What does {P} do for work?", "Which company hired {P}?", "What is {P's} occupation?"},
		near:  []string{"Work has been so stressful, my manager keeps moving deadlines.", "The commute to the new office is killing me.", "First week at the new job done, I'm exhausted."},
		other: []string{"My job has been so boring lately, I envy you."},
		react: []string{"Congratulations!! That's huge!", "They're lucky to have you, {name}."},
	},
	{
		name: "trip_back", group: "trip_back",
		draw:    func(d *draw) { d.tuple([]string{"city", "country", "feature"}, tripPlaces) },
		answers: []string{"city", "feature"},
		say: []string{
			"I just got back from {city}, the {feature} were unreal.",
			"We spent a week in {city}. The {feature} alone were worth the trip!",
		},
		ask:   []string{"Where did {P} travel recently?", "Which city did {P} visit?", "What country did {P} go to on vacation?", "What did {P} love about {Pposs} trip?"},
		near:  []string{"Jet lag is hitting me hard this week.", "I still haven't unpacked my suitcase from the trip.", "I already miss being on vacation."},
		other: []string{"I haven't taken a real vacation in years."},
		react: []string{"So jealous! Send me your photos.", "Welcome back, {name}!"},
	},
	{
		name: "trip_plan", group: "trip_plan",
		draw: func(d *draw) {
			d.pick("city", planCities)
			d.pick("month", months)
			d.pick("reason", tripReasons)
		},
		answers: []string{"city", "month", "reason"},
		say: []string{
			"We're flying to {city} in {month} for {reason}.",
			"Guess what, we booked flights to {city} for {reason}! We leave in {month}.",
		},
		ask:   []string{"Where is {P} flying in {month}?", "Why is {P} traveling to {city}?", "When is {P} going to {city}?", "What trip is {P} taking in {month}?"},
		near:  []string{"I hate packing, I always forget something important.", "Flights were so expensive this year."},
		other: []string{"I need to plan a trip soon, I'm going stir crazy."},
		react: []string{"That's so exciting!", "Have the best time, {name}!"},
	},
	{
		name: "purchase", group: "purchase",
		draw:    func(d *draw) { d.tuple([]string{"item", "purpose"}, purchases) },
		answers: []string{"item", "purpose"},
		say: []string{
			"I finally bought {item} {purpose}!",
			"So I caved and bought {item}, {purpose}.",
		},
		ask:   []string{"What did {P} buy recently?", "What did {P} purchase?", "Why did {P} buy {item}?", "What big purchase did {P} make?"},
		near:  []string{"I've been reading way too many online reviews before buying anything.", "My credit card statement this month is scary."},
		other: []string{"I keep adding things to my cart and never checking out, haha."},
		react: []string{"Nice! That's a great investment.", "Ooh, fancy! Let me know how you like it."},
	},
	{
		name: "book", group: "book",
		draw:    func(d *draw) { d.tuple([]string{"book", "author"}, books) },
		answers: []string{"book", "author"},
		say: []string{
			"I'm reading {book} by {author} and I can't put it down.",
			"Just finished {book} by {author}. What an ending!",
		},
		ask:   []string{"What book is {P} reading?", "Which novel did {P} just finish?", "Who wrote the book {P} is reading?", "What is {P} reading these days?"},
		near:  []string{"I've been trying to read before bed instead of scrolling on my phone.", "My book club picked something I really didn't like this month."},
		other: []string{"I need a good book recommendation, I'm in a reading slump."},
		react: []string{"I've heard great things about that one!", "Adding it to my list!"},
	},
	{
		name: "cook", group: "cook",
		draw:    func(d *draw) { d.tuple([]string{"cuisine", "dish"}, dishes) },
		answers: []string{"dish", "cuisine"},
		say: []string{
			"Last night I made {dish} from scratch, my first real try at {cuisine} cooking!",
			"I've been cooking a lot of {cuisine} food lately. Tonight it's {dish}.",
		},
		ask:   []string{"What dish did {P} cook?", "What kind of food has {P} been making?", "What cuisine is {P} learning to cook?", "What did {P} make for dinner?"},
		near:  []string{"I burned dinner again, we ended up ordering pizza.", "I bought way too many spices at the market this weekend."},
		other: []string{"I can barely make toast, honestly."},
		react: []string{"Yum, save me some!", "Look at you, {name}, a real chef!"},
	},
	{
		name: "injury", group: "injury", tone: negative,
		draw:    func(d *draw) { d.tuple([]string{"part", "activity"}, injuries) },
		answers: []string{"activity"},
		say: []string{
			"I hurt my {part} while {activity} last week, so I'm taking it easy.",
			"Ugh, I twisted my {part} while {activity}. The doctor says two weeks of rest.",
		},
		ask:   []string{"How did {P} injure {Pposs} {part}?", "What happened to {P's} {part}?", "How did {P} get hurt?"},
		near:  []string{"My physical therapist says I need to stretch more.", "Doctor's appointment tomorrow, fingers crossed.", "Being stuck on the couch is driving me nuts."},
		other: []string{"Be careful, I hurt my back last year and it took months to heal."},
		react: []string{"Oh no! Feel better soon.", "Ouch, take care of yourself, {name}."},
	},
	{
		name: "move", group: "move",
		draw: func(d *draw) {
			d.pick("city", moveCities)
			d.pick("month", months)
			d.pick("reason", moveReasons)
		},
		answers: []string{"city", "month", "reason"},
		say: []string{
			"We're moving to {city} in {month} because {reason}.",
			"It's official: we're moving to {city} in {month}, since {reason}.",
		},
		ask:   []string{"Where is {P} moving?", "Why is {P} relocating to {city}?", "When is {P} moving to {city}?", "Where is {P's} family relocating?"},
		near:  []string{"Packing up the whole apartment is a nightmare.", "We still need to find a place with a yard."},
		other: []string{"Moving is the worst, I never want to do it again."},
		react: []string{"Wow, big change! I'll miss you.", "That's exciting, {name}!"},
	},
	{
		name: "kids", group: "kids",
		draw: func(d *draw) {
			d.pick("act", kidActivities)
			d.syn("kids", "kidsQ", [2]string{"kids", "children"})
		},
		answers: []string{"act"},
		say: []string{
			"My {kids} are obsessed with {act}, we go every weekend.",
			"Every Saturday the {kids} drag me to {act}, they never get tired of it.",
		},
		ask:   []string{"What do {P's} {kidsQ} love to do?", "What activity do {P's} {kidsQ} enjoy?", "Where does {P} take {Pposs} {kidsQ} on weekends?"},
		near:  []string{"The {kids} have a cold, so we're staying in all weekend.", "Bedtime with the {kids} was chaos tonight."},
		other: []string{"Your {kids} sound like so much fun."},
		react: []string{"That's adorable!", "Sounds like a great family tradition, {name}."},
	},
	{
		name: "sibling", group: "sibling",
		draw: func(d *draw) {
			d.tuple([]string{"sib", "sibf"}, [][]string{{"sister", "f"}, {"brother", "m"}})
			d.name("sname", d.v["sibf"] == "f")
			d.pick("city", planCities)
		},
		answers: []string{"sname", "city"},
		say: []string{
			"My {sib} {sname} is visiting from {city} this weekend, I can't wait!",
			"{Sname}, my little {sib}, flies in from {city} on Friday for the weekend.",
		},
		ask:   []string{"Who is visiting {P} this weekend?", "Where does {P's} {sib} live?", "What is the name of {P's} {sib}?"},
		near:  []string{"My {sib} and I used to fight all the time as kids.", "I need to clean the guest room before Friday."},
		other: []string{"I wish my family lived closer."},
		react: []string{"Have so much fun together!", "Family time, love that."},
	},
	{
		name: "instrument", group: "instrument",
		draw:    func(d *draw) { d.pick("instrument", instruments) },
		answers: []string{"instrument"},
		say: []string{
			"I've been learning to play the {instrument}, I practice every evening.",
			"I finally signed up for {instrument} lessons! Practicing every night after dinner.",
		},
		ask:   []string{"What instrument is {P} learning?", "Which instrument does {P} play?", "What does {P} practice every evening?"},
		near:  []string{"My neighbors must hate me, practicing is loud.", "My fingers are so sore from practicing."},
		other: []string{"I played in the school band as a kid, but I forgot everything."},
		react: []string{"That's awesome, you'll have to play for me!", "So cool, {name}!"},
	},
	{
		name: "sport", group: "sport",
		draw: func(d *draw) {
			d.pick("sport", sports)
			d.set("a_sport", article(d.v["sport"]))
		},
		answers: []string{"sport"},
		say: []string{
			"I joined {a_sport} league at the community center, we play on Thursdays.",
			"Guess who's on {a_sport} team now? Games are every Thursday night.",
		},
		ask:   []string{"What sport does {P} play?", "Which team did {P} join?", "What does {P} do on Thursday nights?"},
		near:  []string{"I'm so sore after last night's game.", "We lost again, but the team is so fun."},
		other: []string{"I haven't played a team sport since high school."},
		react: []string{"That sounds like a blast!", "Go team!"},
	},
	{
		name: "car", group: "car", tone: negative,
		draw: func(d *draw) {
			d.pick("carEvent", carEvents)
			d.pick("when", whens)
			d.set("car", "car")
			d.v["carQ"] = pick(d.r, []string{"car", "vehicle"})
			d.synonym = d.v["carQ"] == "vehicle"
		},
		answers: []string{"carEvent"},
		say: []string{
			"My {car} {carEvent} {when}, what a mess.",
			"Ugh, so my {car} {carEvent}. I'm taking the bus for now.",
		},
		ask:   []string{"What happened to {P's} {carQ}?", "What went wrong with {P's} {carQ}?"},
		near:  []string{"Car insurance paperwork is the worst.", "I really need to get my oil changed."},
		other: []string{"My car is so old, I'm amazed it still runs."},
		react: []string{"Oh no, I'm sorry! Was anyone hurt?", "That's so stressful, {name}."},
	},
	{
		name: "volunteer", group: "volunteer",
		draw:    func(d *draw) { d.tuple([]string{"vplace", "task"}, volunteering) },
		answers: []string{"vplace", "task"},
		say: []string{
			"I volunteer at {vplace} on Saturdays, mostly {task}.",
			"Saturday mornings are for {vplace} now, I spend them {task}.",
		},
		ask:   []string{"Where does {P} volunteer?", "What does {P} do on Saturdays?", "Where does {P} help out on weekends?"},
		near:  []string{"Volunteering really puts things in perspective.", "We're always short on volunteers, you should come sometime!"},
		other: []string{"I keep meaning to volunteer somewhere."},
		react: []string{"That's so kind of you, {name}.", "Love that you do that."},
	},
	{
		name: "course", group: "course",
		draw:    func(d *draw) { d.pick("subject", subjects) },
		answers: []string{"subject"},
		say: []string{
			"I signed up for an online course in {subject}, the first assignment is due Friday.",
			"I'm taking a night class in {subject}, it's harder than I expected.",
		},
		ask:   []string{"What subject is {P} studying?", "What course is {P} taking?", "What class did {P} enroll in?"},
		near:  []string{"Homework as an adult is so weird.", "I stayed up way too late studying last night."},
		other: []string{"I've been thinking about going back to school too."},
		react: []string{"Good for you, {name}!", "That's so cool, learning something new."},
	},
	{
		name: "garden", group: "garden",
		draw:    func(d *draw) { d.pick("veg", vegetables) },
		answers: []string{"veg"},
		say: []string{
			"The {veg} in my garden finally came in, I have way too many!",
			"My garden is overflowing with {veg} this year.",
		},
		ask:   []string{"What is {P} growing in {Pposs} garden?", "What vegetables does {P} grow?", "What did {P} harvest from the garden?"},
		near:  []string{"Rabbits keep getting into my garden, it's a war out there.", "I spent all Sunday weeding."},
		other: []string{"I can't keep a single plant alive."},
		react: []string{"Save some for me!", "Homegrown is the best."},
	},
	{
		name: "concert", group: "concert",
		draw:    func(d *draw) { d.pick("band", bands) },
		answers: []string{"band"},
		say: []string{
			"We saw {band} live on Friday, they played all the old songs!",
			"Still buzzing from the {band} show last night.",
		},
		ask:   []string{"Which band did {P} see live?", "What concert did {P} go to?", "Who did {P} see perform?"},
		near:  []string{"My ears are still ringing from the concert.", "Concert tickets are so expensive now."},
		other: []string{"I haven't been to a concert in ages."},
		react: []string{"No way, I love them!", "Sounds like an amazing night."},
	},
	{
		name: "kid_birthday", group: "kid_birthday",
		draw: func(d *draw) {
			d.pick("child", []string{"daughter", "son"})
			d.pick("age", []string{"five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"})
			d.pick("theme", partyThemes)
			d.set("a_theme", article(d.v["theme"]))
		},
		answers: []string{"age", "theme"},
		say: []string{
			"My {child} turns {age} next week, we're throwing {a_theme} party.",
			"Planning {a_theme} party this month, my {child} is turning {age}!",
		},
		ask:   []string{"How old is {P's} {child} turning?", "What theme is {P's} {child}'s birthday party?", "What is {P} planning for {Pposs} {child}'s birthday?"},
		near:  []string{"Party planning is taking over my life.", "I've made about two hundred cupcakes this week."},
		other: []string{"Kids' birthday parties are so much work."},
		react: []string{"Happy early birthday to the little one!", "That's going to be so cute."},
	},
	{
		name: "movie", group: "movie",
		draw: func(d *draw) {
			d.pick("movie", movies)
			d.syn("film", "filmQ", [2]string{"movie", "film"})
		},
		answers: []string{"movie"},
		say: []string{
			"I rewatched {movie} last night, still my favorite {film} ever.",
			"Nothing beats {movie}, best {film} ever made. I must have seen it twenty times.",
		},
		ask:   []string{"What is {P's} favorite {filmQ}?", "Which {filmQ} does {P} love the most?"},
		near:  []string{"We had a movie night but I fell asleep halfway through.", "The theater near us finally reopened."},
		other: []string{"I never have time for movies anymore."},
		react: []string{"Such a classic!", "Great taste, {name}."},
	},
	{
		name: "allergy", group: "allergy", tone: negative,
		draw:    func(d *draw) { d.tuple([]string{"allergen", "avoid"}, allergies) },
		answers: []string{"allergen"},
		say: []string{
			"Turns out I'm allergic to {allergen}, so no more {avoid} for me.",
			"The doctor confirmed it: I'm allergic to {allergen}. Goodbye, {avoid}.",
		},
		ask:   []string{"What is {P} allergic to?", "What food allergy does {P} have?", "What does {P} have to avoid eating?"},
		near:  []string{"Reading every food label now is exhausting.", "Spring allergies are also killing me this year."},
		other: []string{"My cousin has a bad allergy too, it's scary."},
		react: []string{"Oh no, that must be hard.", "Better to know now, {name}."},
	},
	{
		name: "race", group: "race",
		draw:    func(d *draw) { d.tuple([]string{"race", "time"}, races) },
		answers: []string{"race", "time"},
		say: []string{
			"I ran my first {race} on Sunday and finished in {time}!",
			"Crossed the finish line of my first {race} in {time}. My legs are jelly.",
		},
		ask:   []string{"What race did {P} run?", "How long did it take {P} to finish {Pposs} race?", "What was {P's} finishing time?", "What distance did {P} run on Sunday?"},
		near:  []string{"My running shoes are completely worn out.", "Training in this heat is brutal."},
		other: []string{"I get tired running to the bus, haha."},
		react: []string{"That's incredible, congrats!", "So proud of you, {name}!"},
	},
	{
		name: "work_project", group: "work_project",
		draw:    func(d *draw) { d.pick("product", products) },
		answers: []string{"product"},
		say: []string{
			"My team is launching {product} next quarter, and I'm leading the design.",
			"Big week at work: we're finally launching {product}, I've been the lead on it for months.",
		},
		ask:   []string{"What product is {P's} team launching?", "What project is {P} leading at work?", "What is {P's} team releasing?"},
		near:  []string{"Back-to-back meetings all day, I'm fried.", "The launch date keeps slipping."},
		other: []string{"My team never finishes anything, honestly."},
		react: []string{"That's a big deal! Good luck.", "You'll crush it, {name}."},
	},
	{
		name: "wedding", group: "wedding",
		draw: func(d *draw) {
			d.name("friend", d.r.IntN(2) == 0)
			d.pick("wplace", weddingPlaces)
			if d.owner.female {
				d.pick("role", []string{"bridesmaid", "maid of honor"})
			} else {
				d.pick("role", []string{"groomsman", "best man"})
			}
		},
		answers: []string{"friend", "wplace", "role"},
		say: []string{
			"I'm going to be the {role} in {friend}'s wedding in {wplace} next month!",
			"{Friend} asked me to be the {role} at the wedding in {wplace}, I cried.",
		},
		ask:   []string{"Whose wedding is {P} in?", "Where is the wedding {P} is going to?", "What role does {P} have in the wedding?"},
		near:  []string{"I still haven't found something to wear to the wedding.", "Wedding season is expensive!"},
		other: []string{"I love weddings, I always cry."},
		react: []string{"That's such an honor!", "Aww, you'll be perfect, {name}."},
	},
	{
		name: "language", group: "language",
		draw:    func(d *draw) { d.pick("language", languages) },
		answers: []string{"language"},
		say: []string{
			"I've been practicing {language} with an app every morning, I'm on a 90-day streak.",
			"Trying to learn {language} this year, I do a lesson every morning before work.",
		},
		ask:   []string{"What language is {P} learning?", "Which language does {P} practice every morning?", "What is {P} studying on the app?"},
		near:  []string{"Languages are so much harder to learn as an adult.", "I tried ordering in another language and totally froze."},
		other: []string{"I only speak English, it's embarrassing."},
		react: []string{"Impressive streak!", "You'll be fluent in no time, {name}."},
	},
	{
		name: "camping", group: "camping",
		draw: func(d *draw) {
			d.pick("park", parks)
			d.pick("animal", animals)
		},
		answers: []string{"park", "animal"},
		say: []string{
			"We went camping at {park} and saw a {animal} right by our tent!",
			"The camping trip to {park} was wild, a {animal} walked through our campsite.",
		},
		ask:   []string{"What animal did {P} see while camping?", "Where did {P} go camping?", "What wildlife did {P} spot on the camping trip?"},
		near:  []string{"I'm still finding sand in my sleeping bag.", "Next time I'm bringing a better tent."},
		other: []string{"I'm more of a hotel person, honestly."},
		react: []string{"That's terrifying and amazing!", "What an adventure, {name}!"},
	},
	{
		name: "grandma", group: "grandma",
		draw: func(d *draw) {
			d.pick("dish", familyDishes)
			d.syn("grandma", "grandmaQ", [2]string{"grandma", "grandmother"})
		},
		answers: []string{"dish"},
		say: []string{
			"My {grandma} taught me how to make {dish} when I was little, I still use her recipe.",
			"Made {dish} with my {grandma}'s recipe today, it tasted just like childhood.",
		},
		ask:   []string{"Who taught {P} to make {dish}?", "What did {P} learn to cook from {Pposs} {grandmaQ}?", "Whose recipe does {P} use for {dish}?"},
		near:  []string{"Family recipes are the best recipes.", "I called my {grandma} today, she's doing well."},
		other: []string{"My family never really cooked, we ate a lot of takeout."},
		react: []string{"That's so sweet.", "That's lovely, {name}."},
	},
	{
		name: "renovation", group: "renovation",
		draw:    func(d *draw) { d.tuple([]string{"room", "thing"}, renovations) },
		answers: []string{"room", "thing"},
		say: []string{
			"We're redoing the {room}, the {thing} gets installed on Monday.",
			"The {room} renovation is finally happening, the {thing} arrives next week!",
		},
		ask:   []string{"Which room is {P} renovating?", "What is being installed in {P's} house?", "What home project is {P} working on?"},
		near:  []string{"Living in a construction zone is exhausting.", "The contractor keeps showing up late."},
		other: []string{"We've been meaning to fix up our place for years."},
		react: []string{"Can't wait to see the before and after!", "That's going to look great, {name}."},
	},
	{
		name: "pottery", group: "pottery",
		draw:    func(d *draw) { d.pick("object", []string{"bowl", "mug", "vase", "plate", "teapot", "candle holder"}) },
		answers: []string{"object"},
		say: []string{
			"I took a pottery class and made my first {object}, it's a little lopsided.",
			"Look what I made at pottery class: a {object}! It's wonky but I love it.",
		},
		ask:   []string{"What did {P} make in pottery class?", "What did {P} create at the pottery studio?", "What was {P's} first pottery piece?"},
		near:  []string{"Clay gets absolutely everywhere, I'm still cleaning it off.", "The pottery wheel is so much harder than it looks."},
		other: []string{"I've always wanted to try pottery."},
		react: []string{"Lopsided is charming!", "I want one, {name}!"},
	},
	{
		name: "fear", group: "fear", tone: neutral,
		draw:    func(d *draw) { d.pick("fear", fears) },
		answers: []string{"fear"},
		say: []string{
			"I'm terrified of {fear}, always have been.",
			"I've been scared of {fear} since I was a kid.",
		},
		ask:   []string{"What is {P} afraid of?", "What scares {P}?", "What phobia does {P} have?"},
		near:  []string{"I'm trying to face my fears this year, one at a time.", "My therapist says avoidance makes it worse."},
		other: []string{"I'm scared of everything, honestly, haha."},
		react: []string{"That's totally understandable.", "You're braver than you think, {name}."},
	},
	{
		name: "grew_up", group: "grew_up", tone: neutral,
		draw:    func(d *draw) { d.tuple([]string{"town", "feature"}, hometowns) },
		answers: []string{"town"},
		say: []string{
			"I grew up in {town}, a tiny town by {feature}.",
			"Growing up in {town} meant summers by {feature} and not much else.",
		},
		ask:   []string{"Where did {P} grow up?", "What is {P's} hometown?", "Where is {P} originally from?"},
		near:  []string{"I haven't been back home in years.", "Small-town life wasn't for me."},
		other: []string{"I grew up in the suburbs, super boring."},
		react: []string{"That sounds idyllic!", "I'd love to visit someday."},
	},
	{
		name: "bake_sale", group: "bake_sale",
		draw: func(d *draw) {
			d.pick("cause", causes)
			d.pick("amount", []string{"$600", "$1,200", "over $900", "almost $2,000", "$450"})
		},
		answers: []string{"cause", "amount"},
		say: []string{
			"Last Saturday I ran a bake sale for {cause} and we raised {amount}!",
			"Our bake sale for {cause} raised {amount}, I'm so proud.",
		},
		ask:   []string{"How much did {P} raise at the bake sale?", "What cause was {P's} bake sale for?", "What charity did {P} raise money for?"},
		near:  []string{"I never want to see another cupcake again.", "Baking for a crowd is no joke."},
		other: []string{"I'd have bought everything, I love baked goods."},
		react: []string{"Amazing work!", "That's so generous of you, {name}."},
	},
	{
		name: "exam", group: "exam",
		draw:    func(d *draw) { d.pick("cert", exams) },
		answers: []string{"cert"},
		say: []string{
			"I passed {cert} this morning!!",
			"Just got the results: I passed {cert}!",
		},
		ask:   []string{"Which exam did {P} pass?", "What test did {P} pass?", "What certification did {P} get?"},
		near:  []string{"Studying for exams again feels like college.", "I was so nervous I didn't sleep the night before."},
		other: []string{"Tests always make me panic."},
		react: []string{"CONGRATULATIONS! We have to celebrate!", "All that studying paid off, {name}!"},
	},
	{
		name: "gift", group: "gift",
		draw: func(d *draw) {
			d.pick("gift", gifts)
			d.syn("mom", "momQ", [2]string{"mom", "mother"})
		},
		answers: []string{"gift"},
		say: []string{
			"I gave my {mom} {gift} for her birthday, she cried.",
			"For my {mom}'s birthday I got her {gift}, she loved it.",
		},
		ask:   []string{"What did {P} give {Pposs} {momQ} for her birthday?", "What birthday present did {P} get for {Pposs} {momQ}?"},
		near:  []string{"My {mom} called me three times today.", "Birthday shopping is so hard."},
		other: []string{"I never know what to get my parents."},
		react: []string{"That's so thoughtful!", "You're a good kid, {name}."},
	},
	{
		name: "partner", group: "partner",
		draw: func(d *draw) {
			d.tuple([]string{"partner", "pf"}, [][]string{{"wife", "f"}, {"husband", "m"}, {"partner", "f"}, {"partner", "m"}})
			d.name("pname", d.v["pf"] == "f")
			d.pick("job2", promotions)
		},
		answers: []string{"pname", "job2"},
		say: []string{
			"My {partner} {pname} just got promoted to {job2}!",
			"{Pname}, my {partner}, is officially {job2} as of today.",
		},
		ask:   []string{"What does {P's} {partner} do for a living?", "What was {P's} {partner} promoted to?", "Who got promoted in {P's} family?", "What is the name of {P's} {partner}?"},
		near:  []string{"My {partner} and I haven't had a date night in forever.", "We finally sat down to do our taxes together."},
		other: []string{"My partner would never survive your schedule."},
		react: []string{"Tell them congrats from me!", "Well deserved, I'm sure."},
	},
	{
		name: "tv", group: "tv",
		draw:    func(d *draw) { d.pick("show", shows) },
		answers: []string{"show"},
		say: []string{
			"I've been binge-watching {show} every night this week.",
			"Can't stop watching {show}, I'm already on the last season.",
		},
		ask:   []string{"What show is {P} watching?", "Which series is {P} binge-watching?", "What TV show has {P} been watching lately?"},
		near:  []string{"I really need to stop staying up so late watching TV.", "Streaming services are getting so expensive."},
		other: []string{"I never know what to watch anymore."},
		react: []string{"I love that show!", "No spoilers, please!"},
	},
	{
		name: "cafe", group: "cafe",
		draw: func(d *draw) {
			d.pick("cafe", cafes)
			d.pick("pastry", pastries)
		},
		answers: []string{"cafe", "pastry"},
		say: []string{
			"There's a little café near my place called {cafe} with the best {pastry}.",
			"{Cafe} has the best {pastry} in town, I go there every morning.",
		},
		ask:   []string{"What is {P's} favorite café?", "Where does {P} get {pastry}?", "What does {P} order at {cafe}?"},
		near:  []string{"I'm trying to spend less on coffee.", "I need my morning coffee before I can function."},
		other: []string{"I'm a tea person, but I'd go for the pastries."},
		react: []string{"Take me there next time!", "Yum."},
	},
	{
		name: "doctor", group: "doctor", tone: neutral,
		draw:    func(d *draw) { d.tuple([]string{"thing", "limit"}, cutbacks) },
		answers: []string{"thing"},
		say: []string{
			"My doctor told me to cut back on {thing}, so I'm down to {limit}.",
			"Cutting back on {thing} per doctor's orders. I'm down to {limit} and I'm grumpy.",
		},
		ask:   []string{"What did {P's} doctor tell {Pobj} to cut back on?", "What is {P} trying to cut down on?", "What did {P} give up for {Pposs} health?"},
		near:  []string{"My annual checkup is next week.", "Trying to drink more water too."},
		other: []string{"I should probably see a doctor too, it's been years."},
		react: []string{"That's tough, but good for you.", "You can do it, {name}."},
	},
	{
		name: "photo", group: "photo",
		draw: func(d *draw) {
			d.pick("photo", photoSubjects)
			d.pick("prize", []string{"second place", "first place", "an honorable mention", "the people's choice award"})
		},
		answers: []string{"photo", "prize"},
		say: []string{
			"I entered my photo of {photo} in a contest and it won {prize}!",
			"My photo of {photo} got {prize} in the county photography contest!",
		},
		ask:   []string{"What photo did {P} enter in the contest?", "What did {P's} photo win?", "Which of {P's} pictures won a prize?"},
		near:  []string{"I'm thinking about upgrading my camera.", "Editing photos takes me forever."},
		other: []string{"All my photos are blurry, haha."},
		react: []string{"That's amazing, congrats!", "You have such a good eye, {name}."},
	},
	{
		name: "house", group: "house",
		draw: func(d *draw) {
			d.pick("feature", houseFeatures)
			d.syn("house", "houseQ", [2]string{"house", "home"})
		},
		answers: []string{"feature"},
		say: []string{
			"We closed on our first {house}! It has {feature}.",
			"We finally bought a {house}, and it has {feature}, I'm in love.",
		},
		ask:   []string{"What does {P} love about {Pposs} new {houseQ}?", "What special feature does {P's} new {houseQ} have?"},
		near:  []string{"Mortgage paperwork is endless.", "We still have boxes everywhere."},
		other: []string{"We're still renting, prices are crazy."},
		react: []string{"Congratulations, homeowner!", "Housewarming party when?"},
	},

	// Facts told in two turns: the questions need both.
	{
		name: "pet_mishap", group: "pet",
		draw: func(d *draw) {
			d.tuple([]string{"kind", "young"}, [][]string{{"dog", "puppy"}, {"cat", "kitten"}})
			d.pick("pet", petNames)
			d.pick("thing", []string{"my favorite plant", "a full glass of wine", "the Christmas tree", "my laptop", "a whole bowl of pasta"})
			d.v["kindQ"] = pick(d.r, []string{d.v["kind"], d.v["young"]})
			d.synonym = d.v["kindQ"] == d.v["kind"]
		},
		answers: []string{"thing", "pet"},
		say:     []string{"We adopted a {young} named {pet}, it's been total chaos already.", "Say hi to {pet}, our new {young}! Nobody in this house is sleeping."},
		then:    []string{"{Pet} knocked over {thing} again, I swear it's on purpose.", "Guess who knocked over {thing} this morning? {Pet}, of course."},
		ask:     []string{"What did {P's} {kindQ} knock over?", "What did {P's} new {kindQ} break?"},
		near:    []string{"I should have pet-proofed the apartment first."},
		react:   []string{"Aww, congrats on the new baby!", "Pictures, please!"},
	},
	{
		name: "sibling_job", group: "sibling",
		draw: func(d *draw) {
			d.tuple([]string{"sib", "sibf"}, [][]string{{"sister", "f"}, {"brother", "m"}})
			d.name("sname", d.v["sibf"] == "f")
			d.pick("job", jobs)
			d.set("a_job", article(d.v["job"]))
		},
		answers: []string{"job", "sname"},
		say:     []string{"My {sib} {sname} is coming to stay with us next week.", "{Sname}, my older {sib}, is moving in with us for a while."},
		then:    []string{"{Sname} just got hired as {a_job}, we're so proud.", "Great news from {sname}: hired as {a_job}!"},
		ask:     []string{"What job did {P's} {sib} get?", "What is {P's} {sib} working as now?"},
		near:    []string{"Having family stay over is a lot, but it's nice."},
		react:   []string{"That'll be nice!", "Fun, a full house!"},
	},
	{
		name: "trip_days", group: "trip_days",
		draw: func(d *draw) {
			d.pick("city", planCities)
			d.pick("activity", tripActivities)
		},
		answers: []string{"city", "activity"},
		say:     []string{"I'm heading to {city} next week, my first vacation in two years!", "Booked a last-minute trip to {city}, I leave Thursday!"},
		then:    []string{"Back from the trip! Every morning we {activity}, it was perfect.", "Home again. The best part was that we {activity} every single morning."},
		ask:     []string{"What did {P} do every morning in {city}?", "What did {P} do on {Pposs} trip to {city}?"},
		near:    []string{"Vacations always go by too fast."},
		react:   []string{"You deserve it!", "Have fun!"},
	},
	{
		name: "shared_hobby", group: "shared_hobby", thenOther: true,
		draw:    func(d *draw) { d.pick("hobby", hobbies) },
		answers: []string{"hobby"},
		say:     []string{"I've been getting into {hobby} lately, it's become my thing.", "New obsession: {hobby}. I can't believe I didn't start sooner."},
		then:    []string{"Guess what, I started {hobby} too! I get why you love it.", "You inspired me, I tried {hobby} this weekend and I'm hooked."},
		ask:     []string{"What hobby do {P} and {O} have in common?", "What activity do both {P} and {O} enjoy?"},
		near:    []string{"I spent way too much money on gear this month."},
		react:   []string{"Oh fun, tell me more!", "That sounds great."},
	},
}
