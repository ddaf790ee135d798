package evalset

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// KBConfig sizes a knowledge-base set: the entries are always the same
// (about 2,100 from the seed); Questions is how many questions to ask.
type KBConfig struct {
	Seed      uint64
	Questions int
}

// KBEntry is one knowledge-base entry and what it is about (Attrs, which
// decide which entries answer a question).
type KBEntry struct {
	Identifier string            `json:"identifier"`
	Keys       []string          `json:"keys"`
	Value      string            `json:"value"`
	Category   string            `json:"category"`
	Attrs      map[string]string `json:"attrs"`
}

// KBQuestion is a natural question and the identifiers of every entry
// that answers it (more than one when the question leaves something open,
// as "what is the uniswap router address" leaves the chain).
type KBQuestion struct {
	ID       string   `json:"id"`
	Text     string   `json:"text"`
	Relevant []string `json:"relevant"`
	Category string   `json:"category"`
	// Tags: "typo", "several" (more than one relevant entry),
	// "no_overlap" (no word of the question appears in a relevant entry's
	// identifier, keys or value, before any stemming).
	Tags []string `json:"tags,omitempty"`
}

// KBSet is the knowledge-base evaluation set.
type KBSet struct {
	Entries   []KBEntry    `json:"entries"`
	Questions []KBQuestion `json:"questions"`
}

const kbTypoShare = 0.03

type kbGen struct {
	r       *rand.Rand
	entries []KBEntry
	seen    map[string]bool
}

func (g *kbGen) add(cat, ident string, keys []string, value string, attrs map[string]string) {
	if g.seen[ident] {
		panic("evalset: duplicate knowledge-base identifier " + ident)
	}
	g.seen[ident] = true
	g.entries = append(g.entries, KBEntry{Identifier: ident, Keys: keys, Value: value, Category: cat, Attrs: attrs})
}

func svcName(s string) string {
	if s == "sms" {
		return "SMS"
	}
	return upperFirst(strings.ReplaceAll(s, "-", " "))
}

func slug(s string) string {
	return strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return '-'
	}, s), "-")
}

// KB generates the knowledge-base set.
func KB(cfg KBConfig) *KBSet {
	g := &kbGen{r: rand.New(rand.NewPCG(cfg.Seed, 1)), seen: map[string]bool{}}
	g.build()
	s := &KBSet{Entries: g.entries}
	s.Questions = kbQuestions(rand.New(rand.NewPCG(cfg.Seed, 2)), g.entries, cfg.Questions)
	return s
}

func (g *kbGen) build() {
	r := g.r
	for _, svc := range kbServices {
		name := svcName(svc)
		up := strings.ToUpper(strings.ReplaceAll(svc, "-", "_"))
		for _, env := range kbEnvs {
			short := map[string]string{"production": "prod", "staging": "stg", "development": "dev"}[env]
			g.add("logs", fmt.Sprintf("%s service log location (%s)", name, env), []string{svc, "logs", env},
				fmt.Sprintf("%s logs of the %s service go to /var/log/%s/%s on the %s hosts and are shipped to Loki with labels app=%s, env=%s. Retention: %d days.",
					upperFirst(env), svc, svc, pick(r, []string{"app.log", "service.log", "server.log"}), pick(r, []string{"app", "worker", "edge"}), svc, short, pick(r, []int{7, 14, 30, 90})),
				map[string]string{"service": svc, "env": env})
		}
		for _, st := range kbSettings {
			tpl := pick(r, []string{"%s config key for the %s", "%s service: %s setting"})
			g.add("config", fmt.Sprintf(tpl, name, st[0]), []string{svc, "config", strings.ToLower(st[1])},
				fmt.Sprintf("%s_%s (%s, default %s). Set it in the service's Helm values under env; a change needs a rolling restart of %s.", up, st[1], st[2], st[3], svc),
				map[string]string{"service": svc, "setting": st[0]})
		}
		port := 8000 + r.IntN(1000)
		g.add("port", name+" service default port", []string{svc, "port", "networking"},
			fmt.Sprintf("%d (HTTP/JSON API); Prometheus metrics on %d at /metrics; gRPC on %d.", port, port+1000, 50000+r.IntN(1000)),
			map[string]string{"service": svc})
		for _, env := range kbEnvs[:2] {
			g.add("dashboard", fmt.Sprintf("%s Grafana dashboard (%s)", name, env), []string{svc, "dashboard", "grafana", env},
				fmt.Sprintf("https://grafana.acme.internal/d/%08x/%s-%s — panels: request rate, p99 latency, error ratio and saturation; alerts link to the %s runbooks.", r.Uint32(), svc, env, svc),
				map[string]string{"service": svc, "env": env})
		}
		g.add("repo", name+" source code repository", []string{svc, "repository", "github"},
			fmt.Sprintf("github.com/acme/%s-svc (default branch main; CODEOWNERS: @acme/%s-team; CI on GitHub Actions).", svc, slug(pick(r, kbTeams))),
			map[string]string{"service": svc})
		for _, i := range r.Perm(len(kbProcedures))[:3+r.IntN(2)] {
			proc := kbProcedures[i]
			tpl := pick(r, []string{"Runbook: %[2]s for %[1]s", "How to %[2]s (%[1]s)"})
			steps := []string{
				"1. Create the new secret in Vault at secret/%[1]s/db. 2. Run `kubectl rollout restart deploy/%[1]s`. 3. Watch the %[1]s dashboard for connection errors. 4. Revoke the old credentials after 24 hours.",
				"1. Drain the %[1]s queue consumers with `acmectl drain %[1]s`. 2. Restart one pod at a time. 3. Watch the error ratio and stop if it rises above 1%%.",
				"1. Freeze deploys. 2. Promote the replica in the secondary region with `acmectl promote %[1]s --region eu-west-1`. 3. Flip DNS. 4. Announce it in the incident channel.",
				"1. List the dead letters with `acmectl dlq list %[1]s`. 2. Fix the cause first. 3. Replay with `acmectl dlq replay %[1]s --since 24h`.",
			}
			g.add("runbook", fmt.Sprintf(tpl, name, proc), []string{svc, "runbook", []string{"credentials", "restart", "failover", "dlq"}[i]},
				fmt.Sprintf(steps[i], svc), map[string]string{"service": svc, "proc": proc})
		}
		for _, rt := range pickN(r, kbRuntimes, 3) {
			v := map[string]string{"Go": "1.22.%d", "Node.js": "20.%d.0", "PostgreSQL": "15.%d", "Redis": "7.2.%d", "Kafka": "3.6.%d", "Python": "3.11.%d", "Java": "21.0.%d"}[rt]
			g.add("version", fmt.Sprintf("%s %s version in production", name, rt), []string{svc, "version", slug(rt)},
				fmt.Sprintf("%s %s; the upgrade to the next major version is tracked in PLAT-%d.", rt, fmt.Sprintf(v, 1+r.IntN(8)), 1000+r.IntN(9000)),
				map[string]string{"service": svc, "runtime": rt})
		}
		g.add("sla", name+" availability SLA", []string{svc, "sla"},
			fmt.Sprintf("%s monthly uptime, measured at the load balancer; a missed month gives internal teams a priority slot in the next planning.", pick(r, []string{"99.9%", "99.95%", "99.99%"})),
			map[string]string{"service": svc, "fact": "availability"})
		g.add("sla", name+" latency SLO", []string{svc, "slo", "latency"},
			fmt.Sprintf("p99 under %d ms and p50 under %d ms over 28 days, for requests that reach the %s service.", 100*(2+r.IntN(8)), 10*(2+r.IntN(8)), svc),
			map[string]string{"service": svc, "fact": "latency"})
		g.add("cron", name+" nightly job schedule", []string{svc, "cron", "batch"},
			fmt.Sprintf("Runs at %02d:%02d UTC via the scheduler (job %s-nightly) and takes about %d minutes; failures page the owning team.", r.IntN(6), 5*r.IntN(12), svc, 5+r.IntN(55)),
			map[string]string{"service": svc})
		for _, f := range pickN(r, kbFlagFeatures, 3) {
			g.add("flag", fmt.Sprintf("%s feature flag for %s", name, f), []string{svc, "feature-flag"},
				fmt.Sprintf("Flag `%s.%s`: off in production, on in staging. Roll out by percentage in the flags console.", svc, strings.ReplaceAll(slug(f), "-", "_")),
				map[string]string{"service": svc, "feature": f})
		}
		team := pick(r, kbTeams)
		g.add("team", name+" service owning team", []string{svc, "owner", slug(team)},
			fmt.Sprintf("Owned by the %s team; escalate through #%s-incidents.", team, slug(team)),
			map[string]string{"service": svc})
		g.add("cost", name+" monthly cloud cost", []string{svc, "cost", "finops"},
			fmt.Sprintf("About $%d,%03d a month on AWS, %d%% of it compute; reviewed in the quarterly FinOps meeting.", 1+r.IntN(40), r.IntN(1000), 40+r.IntN(50)),
			map[string]string{"service": svc})
		deps := pickN(r, slices.DeleteFunc(slices.Clone(kbServices), func(s string) bool { return s == svc }), 3)
		g.add("deps", name+" service upstream dependencies", []string{svc, "dependencies"},
			fmt.Sprintf("Calls %s, %s and %s; an outage of %s degrades it, the others are retried with backoff.", deps[0], deps[1], deps[2], deps[0]),
			map[string]string{"service": svc})
	}

	people := map[string]bool{}
	person := func() (string, string) {
		for {
			f, l := pick(r, kbFirstNames), pick(r, kbLastNames)
			if !people[f+" "+l] {
				people[f+" "+l] = true
				return f, l
			}
		}
	}
	for _, team := range kbTeams {
		for _, role := range kbRoles {
			f, l := person()
			var what string
			switch role {
			case "owner":
				what = fmt.Sprintf("Engineering Manager since %d", 2019+r.IntN(6))
			case "tech lead":
				what = fmt.Sprintf("Staff Engineer and tech lead since %d", 2019+r.IntN(6))
			default:
				what = "the escalation point this quarter; page with /page " + slug(team)
			}
			g.add("owner", fmt.Sprintf("%s team %s", team, role), []string{slug(team), "people", role},
				fmt.Sprintf("%s %s (%s.%s@acme.io), %s. Reach out on Slack @%s%s.", f, l, strings.ToLower(f), strings.ToLower(l), what, strings.ToLower(f), strings.ToLower(l[:1])),
				map[string]string{"team": team, "role": role})
		}
		g.add("slack", fmt.Sprintf("Slack channel for %s incidents", team), []string{slug(team), "slack", "incidents"},
			fmt.Sprintf("#%s-incidents — page the on-call with /page %s if nobody answers within 15 minutes.", slug(team), slug(team)),
			map[string]string{"team": team, "purpose": "incidents"})
		g.add("slack", fmt.Sprintf("Slack channel for questions to the %s team", team), []string{slug(team), "slack", "questions"},
			fmt.Sprintf("#ask-%s — the team answers within one working day; tag @%s-oncall for anything urgent.", slug(team), slug(team)),
			map[string]string{"team": team, "purpose": "questions"})
	}

	explorers := map[string]string{"ethereum": "Etherscan", "arbitrum": "Arbiscan", "optimism": "Optimistic Etherscan", "base": "Basescan",
		"polygon": "Polygonscan", "bnb": "BscScan", "avalanche": "Snowtrace"}
	chainName := map[string]string{}
	for _, c := range kbChains {
		chainName[c[1]] = c[0]
	}
	for _, c := range kbContracts {
		for _, ch := range c.chains {
			name := strings.Join(strings.Fields(c.protocol+" "+c.version+" "+c.contract), " ")
			var hex strings.Builder
			for range 5 {
				fmt.Fprintf(&hex, "%08x", r.Uint32())
			}
			g.add("contract", fmt.Sprintf("%s contract address on %s", name, chainName[ch]), []string{slug(c.protocol), "contract-address", ch, c.kind},
				fmt.Sprintf("0x%s — verified on %s; deployed in block %d.", hex.String(), explorers[ch], 10_000_000+r.IntN(9_000_000)),
				map[string]string{"protocol": c.protocol, "version": c.version, "contract": c.contract, "kind": c.kind, "chain": chainName[ch]})
		}
	}

	for _, op := range kbOps {
		tpl := pick(r, []string{"%s API: %s endpoint", "%s API endpoint to %s"})
		scope := "write"
		if op[2] == "GET" {
			scope = "read"
		}
		g.add("api", fmt.Sprintf(tpl, svcName(op[0]), op[1]), []string{op[0], "api", strings.ToLower(op[2])},
			fmt.Sprintf("%s https://api.acme.io/%s%s — body: %s. Needs the %s:%s scope.", op[2], op[0], op[3], op[4], op[0], scope),
			map[string]string{"service": op[0], "op": op[1]})
	}

	for pi, p := range kbProducts {
		for i, plan := range kbPlans {
			for _, fact := range kbPlanFacts {
				var v string
				switch fact {
				case "monthly price":
					v = []string{"$0, free forever for up to 3 users.", fmt.Sprintf("$%d per user per month billed annually ($%d month to month).", 8+pi%5, 10+pi%5),
						fmt.Sprintf("$%d per user per month billed annually; volume discounts from 100 seats.", 18+pi%7), "Custom pricing; contact sales for a quote."}[i]
				case "storage limit":
					v = fmt.Sprintf("%d GB per workspace; extra storage costs $5 per 100 GB.", []int{5, 100, 1000, 10000}[i]*(1+pi%3))
				case "maximum users":
					v = []string{"Up to 3 members per workspace.", "Up to 50 members per workspace.", "Up to 500 members per workspace.", "Unlimited members, SSO required."}[i]
				case "API rate limit":
					v = fmt.Sprintf("%d requests per minute per token; bursts up to %d.", []int{60, 600, 3000, 10000}[i], 2*[]int{60, 600, 3000, 10000}[i])
				default:
					v = []string{"Community forum only.", "Email support, first answer within 24 hours.", "Email and chat support, first answer within 4 hours.", "24/7 phone support with a 30-minute response for P1 incidents."}[i]
				}
				g.add("plan", fmt.Sprintf("%s %s plan %s", p, plan, fact), []string{slug(p), strings.ToLower(plan), slug(fact)}, v,
					map[string]string{"product": p, "plan": plan, "fact": fact})
			}
		}
	}

	actions := []string{"re-sign the request with the current key", "send a new idempotency key", "check the id and the environment",
		"ask an admin for the scope", "retry with backoff", "slow down and honour Retry-After", "convert to a supported currency first",
		"contact support to reinstate the account", "add the field named in details", "reload the record and retry",
		"split the payload in smaller batches", "ask for at most 90 days at a time"}
	for _, es := range kbErrorServices {
		for _, mi := range r.Perm(len(kbErrorMeanings))[:10] {
			num := fmt.Sprint(1000 + r.IntN(9000))
			code := es[1] + "-" + num
			g.add("error", fmt.Sprintf("%s error code %s", svcName(es[0]), code), []string{es[0], "error-code", strings.ToLower(code)},
				fmt.Sprintf("%s means %s. What to do: %s.", code, kbErrorMeanings[mi], actions[mi]),
				map[string]string{"service": es[0], "code": code, "num": num, "meaning": kbErrorMeanings[mi]})
		}
	}

	monthNames := []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
	for _, p := range kbProjects {
		team := pick(r, kbTeams)
		g.add("project", fmt.Sprintf("Project %s launch date", p), []string{strings.ToLower(p), "project", "launch"},
			fmt.Sprintf("Beta on %d %s 2027, general availability planned for Q%d 2027. Owned by the %s team.", 1+r.IntN(28), pick(r, monthNames), 2+r.IntN(3), team),
			map[string]string{"project": p, "fact": "launch"})
		g.add("project", fmt.Sprintf("Project %s goals and scope", p), []string{strings.ToLower(p), "project", "scope"},
			fmt.Sprintf("Replaces the legacy %s pipeline with an event-driven design on %s; success means halving the %s p99 latency and the on-call load.", pick(r, kbServices), pick(r, kbRuntimes), pick(r, kbServices)),
			map[string]string{"project": p, "fact": "scope"})
	}

	for range 240 {
		f, l := person()
		team := pick(r, kbTeams)
		focus := pick(r, kbFocus)
		g.add("person", fmt.Sprintf("%s %s: role and team", f, l), []string{strings.ToLower(f), strings.ToLower(l), slug(team), "people"},
			fmt.Sprintf("%s on the %s team, based in %s. Works on %s. Prefers Slack over email.", pick(r, kbTitles), team, pick(r, kbCities), focus),
			map[string]string{"person": f + " " + l, "first": f, "team": team, "focus": focus})
	}

	for _, c := range kbCities {
		g.add("office", c+" office guest Wi-Fi", []string{slug(c), "office", "wifi"},
			fmt.Sprintf("Network acme-guest, password %s-%04d; it rotates on the first Monday of each quarter.", strings.ToLower(pick(r, kbProjects)), r.IntN(10000)),
			map[string]string{"city": c, "fact": "wifi"})
		g.add("office", c+" office address", []string{slug(c), "office", "address"},
			fmt.Sprintf("%d %s Street, floor %d; visitors sign in at reception with a photo ID.", 1+r.IntN(300), pick(r, kbLastNames), 1+r.IntN(12)),
			map[string]string{"city": c, "fact": "address"})
		g.add("office", c+" office opening hours", []string{slug(c), "office", "hours"},
			fmt.Sprintf("Open %d:00 to %d:00 on weekdays; badge access only on weekends.", 7+r.IntN(2), 18+r.IntN(4)),
			map[string]string{"city": c, "fact": "hours"})
	}
}

// pickN returns n different elements of xs in a random order.
func pickN[T any](r *rand.Rand, xs []T, n int) []T {
	out := make([]T, 0, n)
	for _, i := range r.Perm(len(xs))[:n] {
		out = append(out, xs[i])
	}
	return out
}

// kbAsk is a question template of a category: every {attr} is named in
// the question (in one of its aliases), fixed are the attributes its
// wording implies. The entries answering a question are those of its
// category that agree with the asked entry on both.
type kbAsk struct {
	cat   string
	tpl   string
	fixed map[string]string
}

func fx(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

var kbAsks = []kbAsk{
	{"logs", "where does the {service} service log to?", nil},
	{"logs", "where are the {service} logs in {env}?", nil},
	{"logs", "{service} {env} log file location", nil},
	{"logs", "how do i find the logs for {service}", nil},
	{"logs", "which loki labels do the {service} logs have in {env}?", nil},
	{"logs", "how long are {service} logs kept?", nil},
	{"config", "which env var sets the {service} {setting}?", nil},
	{"config", "how do i change the {setting} of the {service} service", nil},
	{"config", "what is the default {setting} for {service}?", nil},
	{"config", "{service} {setting} config key", nil},
	{"config", "what's the name of the setting for {setting} in {service}", nil},
	{"port", "what port does the {service} service listen on?", nil},
	{"port", "{service} port", nil},
	{"port", "which port is {service} running on", nil},
	{"port", "metrics port for {service}", nil},
	{"dashboard", "where is the dashboard for {service}?", nil},
	{"dashboard", "link to the {service} grafana in {env}", nil},
	{"dashboard", "{service} {env} monitoring dashboard url", nil},
	{"dashboard", "grafana for {service}", nil},
	{"repo", "where is the code for the {service} service?", nil},
	{"repo", "git repo of {service}", nil},
	{"repo", "which github repository has the {service} source", nil},
	{"runbook", "how do i {proc} for {service}?", nil},
	{"runbook", "steps to {proc} ({service})", nil},
	{"runbook", "runbook to {proc} on the {service} service", nil},
	{"runbook", "what runbooks exist for {service}?", nil},
	{"owner", "who owns the {team} team?", fx("role", "owner")},
	{"owner", "who is the manager of the {team} team", fx("role", "owner")},
	{"owner", "who leads the {team} team?", nil},
	{"owner", "tech lead of the {team} team?", fx("role", "tech lead")},
	{"owner", "who do i escalate to for {team} issues", fx("role", "on-call escalation contact")},
	{"owner", "who is the {role} of the {team} team?", nil},
	{"slack", "where do i report a {team} incident?", fx("purpose", "incidents")},
	{"slack", "{team} incident channel", fx("purpose", "incidents")},
	{"slack", "which channel do i ask the {team} team a question in", fx("purpose", "questions")},
	{"slack", "slack channel for the {team} team", nil},
	{"contract", "what is the {protocol} {kind} address", nil},
	{"contract", "{protocol} {kind} contract on {chain}", nil},
	{"contract", "address of the {protocol} {version} {kind} on {chain}?", nil},
	{"contract", "where is {protocol}'s {kind} deployed on {chain}", nil},
	{"contract", "{protocol} {version} {kind} {chain} address", nil},
	{"contract", "what's the contract address for {protocol} on {chain}", nil},
	{"contract", "{contract} address on {chain}", nil},
	{"api", "how do i {op} via the api", nil},
	{"api", "{service} endpoint to {op}", nil},
	{"api", "which url do i call to {op}?", nil},
	{"api", "api call to {op}", nil},
	{"api", "what http method is used to {op}?", nil},
	{"plan", "how much does {product} {plan} cost?", fx("fact", "monthly price")},
	{"plan", "price of the {plan} plan for {product}", fx("fact", "monthly price")},
	{"plan", "{product} pricing", fx("fact", "monthly price")},
	{"plan", "what's the storage limit on {product} {plan}", fx("fact", "storage limit")},
	{"plan", "how much storage do i get with {product} {plan}?", fx("fact", "storage limit")},
	{"plan", "how many users can a workspace on {product} {plan} have", fx("fact", "maximum users")},
	{"plan", "max seats on {product} {plan}", fx("fact", "maximum users")},
	{"plan", "rate limit for the {product} {plan} tier", fx("fact", "API rate limit")},
	{"plan", "{product} api limits", fx("fact", "API rate limit")},
	{"plan", "how fast does {product} support answer on {plan}?", fx("fact", "support response time")},
	{"error", "what does error {code} mean", nil},
	{"error", "{service} error {num}?", nil},
	{"error", "meaning of {code}", nil},
	{"error", "i'm getting {code} from the {service} api, what is it?", nil},
	{"error", "which {service} error code means {meaning}?", nil},
	{"project", "when does project {project} launch?", fx("fact", "launch")},
	{"project", "{project} release date", fx("fact", "launch")},
	{"project", "what is project {project} about", fx("fact", "scope")},
	{"project", "goal of {project}?", fx("fact", "scope")},
	{"project", "project {project}", nil},
	{"version", "which {runtime} version does {service} run", nil},
	{"version", "what {runtime} is the {service} service on?", nil},
	{"version", "{service} {runtime} version", nil},
	{"person", "who is {person}", nil},
	{"person", "what does {person} work on?", nil},
	{"person", "which team is {first} on", nil},
	{"person", "who works on {focus}?", nil},
	{"person", "where is {person} based", nil},
	{"office", "what's the wifi password at the {city} office", fx("fact", "wifi")},
	{"office", "guest wifi {city}", fx("fact", "wifi")},
	{"office", "where is the {city} office", fx("fact", "address")},
	{"office", "when is the {city} office open?", fx("fact", "hours")},
	{"sla", "what uptime does {service} guarantee", fx("fact", "availability")},
	{"sla", "{service} sla", nil},
	{"sla", "what is the latency slo of {service}", fx("fact", "latency")},
	{"cron", "when does the {service} nightly job run", nil},
	{"cron", "{service} cron schedule", nil},
	{"cron", "what time is the {service} batch job", nil},
	{"flag", "which flag turns on {feature} in {service}", nil},
	{"flag", "feature flag name for {feature} ({service})", nil},
	{"flag", "how do i enable {feature} for {service}", nil},
	{"team", "which team owns the {service} service?", nil},
	{"team", "who owns {service}?", nil},
	{"team", "{service} owning team", nil},
	{"cost", "how much does the {service} service cost per month?", nil},
	{"cost", "{service} cloud spend", nil},
	{"cost", "what is the aws bill for {service}", nil},
	{"deps", "what does {service} depend on?", nil},
	{"deps", "upstream dependencies of the {service} service", nil},
	{"deps", "which services does {service} call", nil},
}

// kbOpAliases are other ways of asking for some API operations.
var kbOpAliases = map[string][]string{
	"create an invoice": {"make a new invoice", "create an invoice"}, "refund a payment": {"issue a refund", "refund a charge", "refund a payment"},
	"cancel a subscription": {"cancel a subscription", "end a subscription", "cancelling a subscription"},
	"list orders":           {"get all orders", "list orders"}, "issue an access token": {"get an access token", "obtain an oauth token"},
	"send a transactional email": {"send an email", "send a transactional email"}, "track a parcel": {"track a package", "track a shipment"},
	"geocode an address": {"convert an address to coordinates", "geocode an address"}, "upload an image": {"upload a picture", "upload an image"},
	"schedule a job": {"create a cron job", "schedule a job"}, "toggle a flag": {"turn a feature flag on or off", "toggle a flag"},
	"revoke a token": {"invalidate an access token", "revoke a token"}, "send a text message": {"send an sms", "send a text message"},
}

// placeholders lists the {keys} of a template.
func placeholders(tpl string) []string {
	var out []string
	for {
		i := strings.IndexByte(tpl, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(tpl[i:], '}')
		out = append(out, tpl[i+1:i+j])
		tpl = tpl[i+j+1:]
	}
}

// render names an attribute value the way a question would.
func render(r *rand.Rand, key, v string) string {
	if key == "op" {
		if as := kbOpAliases[v]; len(as) > 0 {
			return pick(r, as)
		}
		return v
	}
	if as := kbAliases[key][v]; len(as) > 0 {
		return pick(r, as)
	}
	if r.IntN(5) < 3 {
		return strings.ToLower(v)
	}
	return v
}

func kbQuestions(r *rand.Rand, entries []KBEntry, n int) []KBQuestion {
	byCat := map[string][]*kbAsk{}
	for i := range kbAsks {
		byCat[kbAsks[i].cat] = append(byCat[kbAsks[i].cat], &kbAsks[i])
	}
	var out []KBQuestion
	seen := map[string]bool{}
	for tries := 0; len(out) < n && tries < 100*n; tries++ {
		e := &entries[r.IntN(len(entries))]
		var fits []*kbAsk
		for _, a := range byCat[e.Category] {
			ok := true
			for k, v := range a.fixed {
				ok = ok && e.Attrs[k] == v
			}
			for _, k := range placeholders(a.tpl) {
				ok = ok && e.Attrs[k] != ""
			}
			if ok {
				fits = append(fits, a)
			}
		}
		if len(fits) == 0 {
			continue
		}
		a := pick(r, fits)
		v := map[string]string{}
		keys := placeholders(a.tpl)
		for _, k := range keys {
			v[k] = render(r, k, e.Attrs[k])
		}
		text := fill(a.tpl, v)
		if seen[text] {
			continue
		}
		seen[text] = true
		q := KBQuestion{Text: text, Category: e.Category}
		ev := map[string]bool{}
		for i := range entries {
			o := &entries[i]
			if o.Category != e.Category {
				continue
			}
			match := true
			for _, k := range keys {
				match = match && o.Attrs[k] == e.Attrs[k]
			}
			for k, x := range a.fixed {
				match = match && o.Attrs[k] == x
			}
			if match {
				q.Relevant = append(q.Relevant, o.Identifier)
				for _, w := range words(o.Identifier + " " + strings.Join(o.Keys, " ") + " " + o.Value) {
					ev[w] = true
				}
			}
		}
		if len(q.Relevant) > 1 {
			q.Tags = append(q.Tags, "several")
		}
		if r.Float64() < kbTypoShare {
			if t, ok := typo(r, q.Text); ok {
				q.Text = t
				q.Tags = append(q.Tags, "typo")
			}
		}
		overlap := false
		for _, w := range words(q.Text) {
			if !functionWords[w] && ev[w] {
				overlap = true
			}
		}
		if !overlap {
			q.Tags = append(q.Tags, "no_overlap")
		}
		slices.Sort(q.Tags)
		q.ID = fmt.Sprintf("k%05d", len(out)+1)
		out = append(out, q)
	}
	return out
}
