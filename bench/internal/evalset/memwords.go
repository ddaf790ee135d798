package evalset

// The particulars facts are drawn from, and the small talk around them.

type person struct {
	name   string
	female bool
}

var people = []person{
	{"Caroline", true}, {"Melanie", true}, {"Gina", true}, {"Maria", true}, {"Joanna", true}, {"Audrey", true},
	{"Deborah", true}, {"Jolene", true}, {"Priya", true}, {"Lucia", true}, {"Fatima", true}, {"Amara", true},
	{"Hannah", true}, {"Zoe", true}, {"Elena", true}, {"Ingrid", true}, {"Aisha", true}, {"Nora", true},
	{"Chloe", true}, {"Yara", true}, {"Sofia", true}, {"Mira", true}, {"Lena", true}, {"Rosa", true},
	{"Keiko", true}, {"Dana", true}, {"Beatriz", true}, {"Tessa", true},
	{"Jon", false}, {"John", false}, {"Nate", false}, {"Tim", false}, {"Andrew", false}, {"Evan", false},
	{"Sam", false}, {"Calvin", false}, {"Dave", false}, {"James", false}, {"Omar", false}, {"Kenji", false},
	{"Lars", false}, {"Diego", false}, {"Noah", false}, {"Ravi", false}, {"Marcus", false}, {"Tomas", false},
	{"Leo", false}, {"Felix", false}, {"Mateo", false}, {"Owen", false}, {"Ethan", false}, {"Hugo", false},
	{"Theo", false}, {"Malik", false}, {"Jorge", false}, {"Arjun", false},
}

var (
	paintSubjects = []string{"sunsets", "the lake at dawn", "wildflowers", "old barns", "portraits of my family",
		"the city skyline", "horses", "stormy seascapes", "lighthouses", "mountains in winter", "birds at the feeder"}
	events = []string{"LGBTQ support group", "grief support group", "pottery workshop", "charity 5K",
		"neighborhood cleanup", "town hall meeting", "job fair", "poetry reading", "parent-teacher conference",
		"community garden meetup", "blood drive", "salsa night at the community center", "open mic night"}
	whens     = []string{"yesterday", "last Friday", "this morning", "last weekend", "on Tuesday", "two days ago", "last night"}
	eventAdjs = []string{"powerful", "inspiring", "emotional", "fun", "exhausting", "eye-opening", "awkward at first but worth it"}
	dogBreeds = []string{"golden retriever", "beagle", "corgi", "border collie", "dachshund", "labrador", "husky"}
	catBreeds = []string{"tabby", "Maine Coon", "Siamese", "ragdoll", "black", "calico"}
	petNames  = []string{"Luna", "Max", "Biscuit", "Pepper", "Oliver", "Mochi", "Daisy", "Ziggy", "Bean", "Waffles", "Juniper", "Noodle"}
	jobs      = []string{"nurse", "data analyst", "high school teacher", "graphic designer", "software engineer", "paramedic",
		"pastry chef", "social worker", "architect", "physical therapist", "librarian", "accountant", "electrician"}
	companies = []string{"Northwind Health", "Brightline Studios", "Cedar Valley High", "Harbor Logistics", "Maple & Co",
		"Lumen Labs", "Riverside Hospital", "Orchard Bank", "Bluepeak Software", "Greenway Transit", "Foxglove Bakery"}
	tripPlaces = [][]string{
		{"Lisbon", "Portugal", "tiled streets"}, {"Kyoto", "Japan", "temples"}, {"Reykjavik", "Iceland", "hot springs"},
		{"Mexico City", "Mexico", "food markets"}, {"Cape Town", "South Africa", "beaches"}, {"Rome", "Italy", "ruins"},
		{"Marrakech", "Morocco", "souks"}, {"Hanoi", "Vietnam", "street food stalls"}, {"Edinburgh", "Scotland", "castles"},
		{"Amsterdam", "the Netherlands", "canals"}, {"Buenos Aires", "Argentina", "tango clubs"},
	}
	planCities  = []string{"Chicago", "Denver", "Seattle", "Austin", "Boston", "Toronto", "Dublin", "Barcelona", "Vienna", "Sydney", "Nashville"}
	moveCities  = []string{"Portland", "Minneapolis", "Atlanta", "San Diego", "Philadelphia", "Montreal", "Raleigh", "Salt Lake City"}
	months      = []string{"January", "March", "April", "June", "July", "September", "October", "November"}
	tripReasons = []string{"my cousin's wedding", "a work conference", "my dad's 60th birthday", "a yoga retreat",
		"a college reunion", "a music festival"}
	moveReasons = []string{"my wife got a job there", "we want to be closer to family", "the rent here is insane",
		"I'm starting grad school there", "my husband's company is relocating"}
	purchases = [][]string{
		{"a used piano", "so the kids can take lessons"}, {"an electric bike", "so I can stop driving to work"},
		{"a standing desk", "for my home office"}, {"a telescope", "to look at Saturn this summer"},
		{"a sewing machine", "to make my own clothes"}, {"a kayak", "for weekends at the lake"},
		{"a pizza oven", "for the backyard"}, {"a 3D printer", "to make parts for my projects"},
		{"a record player", "for my old vinyl collection"}, {"an espresso machine", "because I was spending too much at cafés"},
	}
	books = [][]string{
		{"The Midnight Library", "Matt Haig"}, {"Project Hail Mary", "Andy Weir"}, {"Circe", "Madeline Miller"},
		{"Lessons in Chemistry", "Bonnie Garmus"}, {"The Night Circus", "Erin Morgenstern"}, {"Klara and the Sun", "Kazuo Ishiguro"},
		{"A Man Called Ove", "Fredrik Backman"}, {"Pachinko", "Min Jin Lee"}, {"The Martian", "Andy Weir"},
		{"Tomorrow, and Tomorrow, and Tomorrow", "Gabrielle Zevin"}, {"Anxious People", "Fredrik Backman"},
	}
	dishes = [][]string{
		{"Thai", "green curry"}, {"Italian", "fresh pasta"}, {"Indian", "butter chicken"}, {"Mexican", "mole"},
		{"Japanese", "ramen"}, {"Ethiopian", "injera with lentil stew"}, {"Korean", "kimchi stew"}, {"Lebanese", "tabbouleh and falafel"},
		{"French", "coq au vin"}, {"Greek", "moussaka"},
	}
	injuries = [][]string{
		{"ankle", "hiking in the rain"}, {"wrist", "skateboarding with my son"}, {"knee", "playing soccer"},
		{"back", "moving a couch"}, {"shoulder", "rock climbing"}, {"elbow", "playing tennis"}, {"foot", "dancing at a wedding"},
	}
	kidActivities = []string{"the climbing gym", "the aquarium", "swimming lessons", "the science museum", "the skate park",
		"the library's story hour", "the zoo", "the trampoline park", "the ice rink"}
	instruments  = []string{"piano", "guitar", "violin", "cello", "ukulele", "drums", "saxophone", "banjo"}
	sports       = []string{"volleyball", "pickleball", "basketball", "ultimate frisbee", "softball", "badminton", "water polo", "kickball"}
	carEvents    = []string{"got rear-ended at a red light", "broke down on the highway", "got a flat tire on the way to work", "got broken into outside the gym", "failed its inspection"}
	volunteering = [][]string{
		{"the animal shelter", "walking the dogs"}, {"the food bank", "sorting donations"},
		{"the children's hospital", "reading to the kids"}, {"the senior center", "teaching people to use their phones"},
		{"the public library", "shelving books"}, {"a soup kitchen", "serving lunch"},
	}
	subjects       = []string{"data science", "photography", "Spanish", "UX design", "accounting", "marine biology", "creative writing", "astronomy"}
	vegetables     = []string{"tomatoes", "zucchini", "peppers", "strawberries", "cucumbers", "pumpkins", "green beans", "carrots"}
	bands          = []string{"Coldplay", "Arctic Monkeys", "Fleetwood Mac's tribute band", "Norah Jones", "Bon Iver", "Florence and the Machine", "Kendrick Lamar", "The Killers", "Paramore"}
	partyThemes    = []string{"dinosaur", "unicorn", "outer space", "pirate", "superhero", "Harry Potter", "mermaid"}
	movies         = []string{"The Princess Bride", "Spirited Away", "Jurassic Park", "Amélie", "The Godfather", "Paddington 2", "Inception", "Mamma Mia"}
	allergies      = [][]string{{"peanuts", "peanut butter cookies"}, {"shellfish", "shrimp tacos"}, {"strawberries", "smoothies"}, {"sesame", "bagels"}, {"eggs", "omelets"}, {"tree nuts", "pesto"}}
	races          = [][]string{{"half marathon", "1 hour 58 minutes"}, {"10K", "52 minutes"}, {"marathon", "4 hours 10 minutes"}, {"trail race", "1 hour 21 minutes"}, {"5K", "27 minutes"}}
	products       = []string{"a budgeting app for students", "a new checkout flow", "a smart thermostat", "a recipe-sharing platform", "an electric scooter", "a meditation app", "a hiring dashboard"}
	weddingPlaces  = []string{"Napa", "Lake Como", "a barn in Vermont", "Savannah", "the Outer Banks", "Santorini"}
	languages      = []string{"Japanese", "Portuguese", "Italian", "Korean", "German", "Arabic", "Greek", "Mandarin"}
	parks          = []string{"Yosemite", "Big Sur", "the Smoky Mountains", "Banff", "Lake Tahoe", "Zion", "Acadia"}
	animals        = []string{"black bear", "moose", "family of deer", "bald eagle", "fox", "porcupine"}
	familyDishes   = []string{"pierogi", "tamales", "apple pie", "dumplings", "lasagna", "baklava", "gumbo"}
	renovations    = [][]string{{"kitchen", "new countertop"}, {"bathroom", "walk-in shower"}, {"basement", "new floor"}, {"living room", "fireplace"}, {"attic", "skylight"}}
	fears          = []string{"heights", "spiders", "deep water", "flying", "thunderstorms", "snakes", "the dentist"}
	hometowns      = [][]string{{"Bar Harbor", "the ocean"}, {"Taos", "the mountains"}, {"Stillwater", "the river"}, {"Marfa", "the desert"}, {"Duluth", "Lake Superior"}, {"Hood River", "the gorge"}}
	causes         = []string{"the animal shelter", "the school library", "the children's hospital", "wildfire relief", "the women's shelter"}
	exams          = []string{"the CPA exam", "the bar exam", "my AWS Solutions Architect exam", "the nursing boards", "my real estate license exam", "my driving test"}
	gifts          = []string{"a framed family photo", "a cooking class", "a weekend in Napa", "a hand-knit scarf", "a new tablet", "a pottery set"}
	promotions     = []string{"head nurse", "senior engineer", "store manager", "principal", "fire captain", "creative director"}
	shows          = []string{"Ted Lasso", "The Bear", "Succession", "The Great British Bake Off", "Stranger Things", "Only Murders in the Building", "Severance"}
	cafes          = []string{"Bluebird", "Little Fox", "Morning Glory", "Copper Kettle", "Sparrow & Co", "Daily Grind"}
	pastries       = []string{"almond croissants", "cinnamon rolls", "lemon tarts", "scones", "banana bread", "morning buns"}
	cutbacks       = [][]string{{"coffee", "one cup a day"}, {"sugar", "one dessert a week"}, {"salt", "almost nothing"}, {"soda", "none at all"}, {"red meat", "once a week"}}
	photoSubjects  = []string{"a heron at sunrise", "my grandfather's hands", "the harbor in fog", "a street musician in the rain", "a fox in the snow"}
	houseFeatures  = []string{"a big backyard", "a sunroom", "a wood-burning fireplace", "a porch swing", "a huge kitchen island"}
	tripActivities = []string{"took a cooking class", "rented bikes along the coast", "hiked up to the old lighthouse",
		"swam in the sea before breakfast", "went to the flower market", "did yoga on the beach"}
	hobbies = []string{"birdwatching", "rock climbing", "sourdough baking", "chess", "knitting", "trail running", "woodworking"}
)

// Small talk. Between the turns that tell something, people greet, react,
// hand the conversation over and chat about nothing much, in the words the
// questions use too (work, weekend, dinner, kids): most turns of a real
// conversation answer no question.
var (
	greetings = []string{"Hey {other}! How's your week going?", "Hi {other}, long time no talk!",
		"Morning {other}! Got a minute to catch up?", "Hey! How have you been?", "{Other}! I was just thinking about you.",
		"Hi hi! Sorry I went quiet, life got busy."}
	greetingReplies = []string{"Hey {other}! Pretty good, busy as always. You?", "Hi! Doing well, thanks for asking.",
		"Oh hey! It's been a while, how are things?", "Good to hear from you! I'm hanging in there.",
		"Hey! All good here, just tired."}
	handovers = []string{"So what's new with you?", "Anything exciting going on with you?", "How's everything on your end?",
		"Enough about me, how are you?", "What have you been up to?", "Any news?"}
	closings = []string{"I have to run, talk soon!", "Okay, dinner's ready, catch you later!", "This was fun, let's talk again next week.",
		"Gotta go pick up the kids, bye!", "I should get some sleep, good night!", "My break's over, talk later!"}
	closingReplies = []string{"Bye {other}! Take care.", "Talk soon!", "Have a good night!", "Later! Say hi to everyone for me."}
	acks           = map[tone][]string{
		positive: {"That's great!", "Love that for you!", "Wow, amazing!", "Yay, so happy for you!", "That's awesome, {name}."},
		negative: {"Oh no, I'm sorry.", "That sounds rough.", "Ugh, that's the worst.", "Sending hugs, {name}."},
		neutral:  {"Interesting!", "Oh really? Tell me more.", "Huh, I didn't know that.", "Makes sense."},
	}
	smallTalk = []string{
		"Haha, that's so true.", "The weather has been so gloomy lately.", "I slept terribly last night.",
		"Work has been crazy this week.", "The weekend went by way too fast.", "We had pizza for dinner again, no shame.",
		"I need a vacation.", "Did you see the game last night?", "I've been drinking way too much coffee.",
		"Traffic this morning was a nightmare.", "I finally cleaned out my closet.", "My phone screen cracked again, ugh.",
		"I keep forgetting to call the dentist.", "It's been raining for three days straight.",
		"I started going to bed earlier, it's helping.", "Honestly, I'm just tired.", "Same here, it's been a long week.",
		"Totally agree.", "Right? I feel that.", "I tried a new recipe, it was okay.", "I'm thinking about getting bangs, thoughts?",
		"My neighbor's dog barks all night.", "Grocery prices are out of control.", "I listened to a great podcast on my commute.",
		"Do you have any plans for the holidays?", "I can't believe it's already this time of year.", "Haha, classic.",
		"I've been meaning to text you for days.", "We should get lunch sometime soon.", "I ordered too much stuff online again.",
		"The kids next door are learning trumpet, send help.", "I spent the whole Sunday doing laundry.",
		"My plants are not doing great.", "I've been trying to walk more, at least 8,000 steps a day.",
		"Ha! You always make me laugh.", "That's fair.", "I know what you mean.", "So true, so true.",
		"Our internet was down all day yesterday.", "I made a huge pot of soup, it'll last all week.",
		"I keep losing my keys lately.", "Are you still doing the early mornings?", "I finally fixed the leaky faucet myself!",
		"I'm so behind on emails.", "My mom keeps sending me recipes she finds online.", "The new season of my favorite show drops soon.",
		"I'm craving tacos, I don't know why.", "We rearranged the living room furniture, it feels like a new place.",
		"I've got a dentist appointment tomorrow, wish me luck.", "How is it already Thursday?",
		"I went for a long walk by the river this afternoon.", "I baked cookies and ate half the batch.",
		"My back hurts from sitting at my desk all day.", "I might take a nap, honestly.", "Ooh, good question.",
		"Let me think about that.", "No way!", "Exactly.", "I'm so glad we talk like this.", "You're the best.",
	}
)
