package evalset

// What the knowledge base is about: a company's services, teams, products,
// projects and people, and the on-chain contracts it integrates with. The
// names of public protocols and chains are common knowledge; every address,
// port, price, key and person is made up from the seed.

var kbServices = []string{"billing", "payments", "search", "auth", "notifications", "ledger", "inventory", "shipping",
	"analytics", "gateway", "checkout", "catalog", "recommendations", "email", "sms", "reporting", "identity",
	"fraud-detection", "pricing", "subscriptions", "orders", "media", "geocoding", "chat", "scheduler", "exports",
	"webhooks", "audit", "feature-flags", "translations"}

var kbEnvs = []string{"production", "staging", "development"}

// kbSettings: the setting, its key suffix, type and default.
var kbSettings = [][]string{
	{"database pool size", "DB_POOL_SIZE", "integer", "20"},
	{"request timeout", "REQUEST_TIMEOUT_MS", "milliseconds", "3000"},
	{"log level", "LOG_LEVEL", "debug|info|warn|error", "info"},
	{"cache TTL", "CACHE_TTL_SECONDS", "seconds", "300"},
	{"maximum retries", "MAX_RETRIES", "integer", "3"},
	{"worker concurrency", "WORKER_CONCURRENCY", "integer", "8"},
	{"per-client rate limit", "RATE_LIMIT_RPS", "requests per second", "50"},
	{"tracing sample rate", "TRACE_SAMPLE_RATE", "fraction 0-1", "0.1"},
}

var kbProcedures = []string{"rotate the database credentials", "restart the workers safely",
	"fail over to the secondary region", "replay the dead-letter queue"}

var kbTeams = []string{"Payments", "Billing", "Search", "Identity", "Growth", "Platform", "Data", "Mobile", "Web",
	"Security", "SRE", "Checkout", "Logistics", "Marketing Tech", "Developer Experience", "Infrastructure",
	"Machine Learning", "Support Tools", "Finance Systems", "Trust and Safety"}

var kbRoles = []string{"owner", "tech lead", "on-call escalation contact"}

var kbFirstNames = []string{"Priya", "Omar", "Lena", "Marcus", "Aiko", "Tomasz", "Fatima", "Diego", "Ingrid", "Kwame",
	"Sofia", "Raj", "Hana", "Lucas", "Nadia", "Ethan", "Chiara", "Yusuf", "Mei", "Jonas", "Amara", "Pedro", "Elif",
	"Sanjay", "Greta", "Malik", "Rosa", "Kenji", "Olga", "Samuel", "Leila", "Viktor", "Zainab", "Felipe", "Ana",
	"Bjorn", "Chloe", "Arjun", "Maya", "Tariq"}

var kbLastNames = []string{"Raman", "Haddad", "Fischer", "Okafor", "Tanaka", "Nowak", "Rahman", "Alvarez", "Lund",
	"Mensah", "Rossi", "Patel", "Kim", "Moreau", "Hussain", "Brooks", "Bianchi", "Demir", "Chen", "Weber", "Eze",
	"Costa", "Yilmaz", "Iyer", "Larsen", "Diallo", "Ortega", "Sato", "Ivanova", "Cohen", "Karimi", "Petrov",
	"Abubakar", "Silva", "Marin", "Holm", "Dubois", "Mehta", "Levi", "Farouk"}

var kbTitles = []string{"Staff Engineer", "Senior Software Engineer", "Engineering Manager", "Product Manager",
	"Site Reliability Engineer", "Data Scientist", "Security Engineer", "Designer", "Technical Program Manager",
	"Principal Engineer"}

var kbFocus = []string{"the payment retry pipeline", "search ranking", "the mobile release train", "SSO and SCIM",
	"the data warehouse migration", "incident tooling", "fraud models", "the new checkout UI", "Kafka consumers",
	"cost dashboards", "the public API gateway", "GDPR deletion requests", "the design system", "load testing",
	"the iOS app", "warehouse robotics integration", "the pricing engine", "email deliverability", "observability",
	"the ledger reconciliation jobs"}

var kbCities = []string{"Lisbon", "Berlin", "Austin", "Toronto", "Singapore", "Nairobi", "Warsaw", "Bangalore",
	"Dublin", "Sydney", "São Paulo", "Seoul", "Amsterdam", "Denver"}

// kbChains are chain display names and their slugs.
var kbChains = [][]string{{"Ethereum mainnet", "ethereum"}, {"Arbitrum One", "arbitrum"}, {"Optimism", "optimism"},
	{"Base", "base"}, {"Polygon PoS", "polygon"}, {"BNB Chain", "bnb"}, {"Avalanche C-Chain", "avalanche"}}

// kbContracts: protocol, version ("" for none), contract name, kind, the
// chains (slugs) it is deployed on.
var kbContracts = []struct {
	protocol, version, contract, kind string
	chains                            []string
}{
	{"Uniswap", "V3", "SwapRouter", "router", []string{"ethereum", "arbitrum", "optimism", "base", "polygon", "bnb"}},
	{"Uniswap", "V3", "UniswapV3Factory", "factory", []string{"ethereum", "arbitrum", "optimism", "base", "polygon", "bnb"}},
	{"Uniswap", "V3", "QuoterV2", "quoter", []string{"ethereum", "arbitrum", "optimism", "base", "polygon"}},
	{"Uniswap", "V3", "NonfungiblePositionManager", "position manager", []string{"ethereum", "arbitrum", "optimism", "base", "polygon"}},
	{"Uniswap", "V2", "UniswapV2Router02", "router", []string{"ethereum", "arbitrum", "base", "polygon"}},
	{"Uniswap", "V2", "UniswapV2Factory", "factory", []string{"ethereum", "arbitrum", "base", "polygon"}},
	{"Aave", "V3", "Pool", "lending pool", []string{"ethereum", "arbitrum", "optimism", "base", "polygon", "avalanche"}},
	{"Aave", "V3", "PoolAddressesProvider", "addresses provider", []string{"ethereum", "arbitrum", "optimism", "base", "polygon", "avalanche"}},
	{"Aave", "V3", "AaveOracle", "oracle", []string{"ethereum", "arbitrum", "optimism", "polygon", "avalanche"}},
	{"Compound", "V3", "cUSDCv3 Comet", "USDC market", []string{"ethereum", "arbitrum", "base", "polygon"}},
	{"Compound", "V3", "CometRewards", "rewards", []string{"ethereum", "arbitrum", "base", "polygon"}},
	{"Curve", "", "3pool", "3pool", []string{"ethereum"}},
	{"Curve", "", "Router", "router", []string{"ethereum", "arbitrum", "polygon"}},
	{"Balancer", "V2", "Vault", "vault", []string{"ethereum", "arbitrum", "optimism", "base", "polygon", "avalanche"}},
	{"Lido", "", "stETH", "stETH token", []string{"ethereum"}},
	{"Lido", "", "wstETH", "wstETH token", []string{"ethereum", "arbitrum", "optimism", "base", "polygon"}},
	{"Chainlink", "", "ETH/USD price feed", "ETH/USD feed", []string{"ethereum", "arbitrum", "optimism", "base", "polygon", "bnb", "avalanche"}},
	{"Chainlink", "", "LINK token", "LINK token", []string{"ethereum", "arbitrum", "optimism", "base", "polygon", "bnb", "avalanche"}},
	{"MakerDAO", "", "DAI token", "DAI token", []string{"ethereum"}},
	{"MakerDAO", "", "PSM", "peg stability module", []string{"ethereum"}},
	{"1inch", "V5", "AggregationRouterV5", "router", []string{"ethereum", "arbitrum", "optimism", "base", "polygon", "bnb", "avalanche"}},
	{"GMX", "", "Router", "router", []string{"arbitrum", "avalanche"}},
	{"GMX", "", "Vault", "vault", []string{"arbitrum", "avalanche"}},
	{"PancakeSwap", "V3", "SmartRouter", "router", []string{"bnb", "ethereum", "arbitrum", "base"}},
	{"PancakeSwap", "V3", "PancakeV3Factory", "factory", []string{"bnb", "ethereum", "arbitrum", "base"}},
	{"SushiSwap", "", "RouteProcessor4", "router", []string{"ethereum", "arbitrum", "polygon", "bnb", "avalanche"}},
	{"Rocket Pool", "", "rETH", "rETH token", []string{"ethereum", "arbitrum", "optimism"}},
	{"Morpho", "", "Morpho Blue", "core contract", []string{"ethereum", "base"}},
	{"Pendle", "", "Router", "router", []string{"ethereum", "arbitrum", "bnb"}},
	{"Yearn", "V3", "yvUSDC", "USDC vault", []string{"ethereum", "polygon", "arbitrum"}},
	{"Stargate", "", "Router", "router", []string{"ethereum", "arbitrum", "optimism", "avalanche", "bnb", "polygon"}},
	{"Across", "", "SpokePool", "spoke pool", []string{"ethereum", "arbitrum", "optimism", "base", "polygon"}},
}

// kbOps are API operations: service, operation, method, path, what the
// body holds.
var kbOps = [][]string{
	{"billing", "create an invoice", "POST", "/v2/invoices", "customer_id and line items"},
	{"billing", "void an invoice", "POST", "/v2/invoices/{id}/void", "a reason"},
	{"billing", "list the invoices of a customer", "GET", "/v2/customers/{id}/invoices", "no body; paginate with cursor"},
	{"payments", "capture a payment", "POST", "/v1/payments/{id}/capture", "the amount to capture"},
	{"payments", "refund a payment", "POST", "/v1/payments/{id}/refunds", "amount and reason"},
	{"payments", "get the status of a payment", "GET", "/v1/payments/{id}", "no body"},
	{"orders", "list orders", "GET", "/v3/orders", "no body; filter with status= and since="},
	{"orders", "cancel an order", "POST", "/v3/orders/{id}/cancel", "a reason code"},
	{"orders", "create an order", "POST", "/v3/orders", "cart_id and shipping address"},
	{"subscriptions", "cancel a subscription", "DELETE", "/v1/subscriptions/{id}", "no body; at_period_end=true to wait"},
	{"subscriptions", "change the plan of a subscription", "PATCH", "/v1/subscriptions/{id}", "the new plan_id"},
	{"subscriptions", "pause a subscription", "POST", "/v1/subscriptions/{id}/pause", "resume_at (optional)"},
	{"email", "send a transactional email", "POST", "/v1/messages", "template_id, to and variables"},
	{"email", "list bounced addresses", "GET", "/v1/bounces", "no body"},
	{"sms", "send a text message", "POST", "/v1/sms", "to and body (160 characters)"},
	{"sms", "check text message delivery status", "GET", "/v1/sms/{id}", "no body"},
	{"search", "query the product index", "GET", "/v2/products/search", "q, filters and page"},
	{"search", "trigger a full reindex", "POST", "/v2/admin/reindex", "the index name"},
	{"auth", "issue an access token", "POST", "/oauth/token", "client credentials grant"},
	{"auth", "revoke a token", "POST", "/oauth/revoke", "the token"},
	{"auth", "introspect a token", "POST", "/oauth/introspect", "the token"},
	{"notifications", "send a push notification", "POST", "/v1/push", "user_id, title and body"},
	{"notifications", "update notification preferences", "PUT", "/v1/users/{id}/preferences", "channel toggles"},
	{"shipping", "create a shipping label", "POST", "/v2/labels", "parcel dimensions and addresses"},
	{"shipping", "track a parcel", "GET", "/v2/parcels/{tracking}/events", "no body"},
	{"shipping", "get shipping rates", "POST", "/v2/rates", "origin, destination and weight"},
	{"inventory", "reserve stock", "POST", "/v1/reservations", "sku and quantity"},
	{"inventory", "adjust stock levels", "PATCH", "/v1/stock/{sku}", "delta and reason"},
	{"inventory", "get the stock of a SKU", "GET", "/v1/stock/{sku}", "no body"},
	{"catalog", "create a product", "POST", "/v1/products", "name, sku and attributes"},
	{"catalog", "update product prices", "PATCH", "/v1/products/{id}/prices", "a price list"},
	{"identity", "look up a user by email", "GET", "/v1/users?email=", "no body"},
	{"identity", "merge two user accounts", "POST", "/v1/users/{id}/merge", "the id of the account to absorb"},
	{"webhooks", "register a webhook endpoint", "POST", "/v1/endpoints", "url and event types"},
	{"webhooks", "replay a webhook delivery", "POST", "/v1/deliveries/{id}/replay", "no body"},
	{"exports", "start a CSV export", "POST", "/v1/exports", "dataset and date range"},
	{"exports", "download a finished export", "GET", "/v1/exports/{id}/file", "no body; follows a redirect"},
	{"pricing", "get a price quote for a cart", "POST", "/v1/quotes", "cart lines and currency"},
	{"geocoding", "geocode an address", "GET", "/v1/geocode?address=", "no body"},
	{"geocoding", "reverse geocode coordinates", "GET", "/v1/reverse?lat=&lng=", "no body"},
	{"media", "upload an image", "POST", "/v1/images", "multipart file"},
	{"media", "generate a thumbnail", "POST", "/v1/images/{id}/thumbnails", "width and height"},
	{"chat", "create a conversation", "POST", "/v1/conversations", "participant ids"},
	{"chat", "post a message to a conversation", "POST", "/v1/conversations/{id}/messages", "text"},
	{"scheduler", "schedule a job", "POST", "/v1/jobs", "cron expression and payload"},
	{"scheduler", "cancel a scheduled job", "DELETE", "/v1/jobs/{id}", "no body"},
	{"reporting", "run a report", "POST", "/v1/reports/{name}/runs", "parameters"},
	{"audit", "query the audit log", "GET", "/v1/events", "actor, action and time range"},
	{"feature-flags", "evaluate a flag", "POST", "/v1/evaluate", "flag key and user context"},
	{"feature-flags", "toggle a flag", "PATCH", "/v1/flags/{key}", "enabled and environment"},
	{"ledger", "post a journal entry", "POST", "/v1/journal", "balanced debit and credit lines"},
	{"ledger", "get an account balance", "GET", "/v1/accounts/{id}/balance", "no body"},
	{"fraud-detection", "score a transaction", "POST", "/v1/score", "transaction and device data"},
	{"checkout", "create a checkout session", "POST", "/v1/sessions", "cart_id and return URLs"},
	{"recommendations", "get recommendations for a user", "GET", "/v1/users/{id}/recommendations", "no body"},
	{"translations", "translate a string", "POST", "/v1/translate", "text, source and target language"},
	{"analytics", "send a batch of events", "POST", "/v1/batch", "up to 500 events"},
}

var kbProducts = []string{"Acme Notes", "Acme Drive", "Acme Chat", "Acme Analytics", "Acme Mail", "Acme Forms",
	"Acme Calendar", "Acme Pay", "Acme Sign", "Acme Boards", "Acme Voice", "Acme Docs", "Acme Meet", "Acme Vault",
	"Acme Desk", "Acme Sites"}

var kbPlans = []string{"Free", "Pro", "Business", "Enterprise"}

var kbPlanFacts = []string{"monthly price", "storage limit", "maximum users", "API rate limit", "support response time"}

// kbErrorServices: service and error-code prefix; kbErrorMeanings are
// what their codes mean, one list per prefix.
var kbErrorServices = [][]string{{"payments", "PAY"}, {"billing", "BIL"}, {"auth", "AUTH"}, {"shipping", "SHP"},
	{"inventory", "INV"}, {"orders", "ORD"}, {"email", "EML"}, {"webhooks", "WHK"}, {"ledger", "LDG"},
	{"checkout", "CHK"}, {"subscriptions", "SUB"}, {"search", "SRC"}, {"identity", "IDN"}, {"media", "MED"},
	{"scheduler", "SCH"}}

var kbErrorMeanings = []string{"the request signature is invalid", "the idempotency key was reused with a different body",
	"the resource was not found", "the caller lacks the required scope", "the upstream provider timed out",
	"the request exceeds the rate limit", "the currency is not supported", "the account is suspended",
	"a required field is missing", "the record was modified concurrently", "the payload is too large",
	"the requested date range is too wide"}

var kbProjects = []string{"Aurora", "Basalt", "Cinder", "Driftwood", "Ember", "Fjord", "Granite", "Harbor", "Indigo",
	"Juniper", "Kestrel", "Lantern", "Meridian", "Nimbus", "Orchid", "Pioneer", "Quartz", "Redwood", "Sierra",
	"Tundra", "Umbra", "Vesper", "Willow", "Xenon", "Yarrow", "Zephyr", "Atlas", "Beacon", "Comet", "Delta"}

var kbRuntimes = []string{"Go", "Node.js", "PostgreSQL", "Redis", "Kafka", "Python", "Java"}

var kbFlagFeatures = []string{"the new UI", "async processing", "the v2 API", "bulk operations", "the new pricing rules",
	"multi-region writes", "request batching", "the beta export format"}

// kbAliases are the other ways a question names a value, by attribute.
var kbAliases = map[string]map[string][]string{
	"service": {
		"fraud-detection": {"fraud detection", "fraud-detection", "fraud"}, "feature-flags": {"feature flags", "feature flag"},
		"auth": {"auth", "authentication"}, "email": {"email", "e-mail", "mail"}, "sms": {"sms", "SMS", "text messaging"},
		"geocoding": {"geocoding", "geocoder"}, "notifications": {"notifications", "notification"},
		"recommendations": {"recommendations", "recommendation", "recs"}, "subscriptions": {"subscriptions", "subscription"},
		"payments": {"payments", "payment"}, "orders": {"orders", "order"}, "translations": {"translations", "translation"},
		"webhooks": {"webhooks", "webhook"}, "exports": {"exports", "export"},
	},
	"env": {"production": {"production", "prod", "live"}, "staging": {"staging", "stage", "pre-prod"}, "development": {"development", "dev"}},
	"setting": {
		"database pool size":    {"db pool size", "database connection pool size", "connection pool"},
		"request timeout":       {"request timeout", "timeout"},
		"log level":             {"log level", "logging level", "log verbosity"},
		"cache TTL":             {"cache ttl", "cache expiry", "cache lifetime"},
		"maximum retries":       {"retry limit", "max retries", "number of retries"},
		"worker concurrency":    {"worker concurrency", "number of workers", "concurrency"},
		"per-client rate limit": {"per-client rate limit", "rate limit per client", "client rate limit"},
		"tracing sample rate":   {"trace sampling rate", "tracing sample rate", "sampling rate for traces"},
	},
	"proc": {
		"rotate the database credentials":   {"rotate the database credentials", "rotate the db password", "change the database password"},
		"restart the workers safely":        {"restart the workers safely", "restart the workers", "bounce the workers"},
		"fail over to the secondary region": {"fail over to the secondary region", "fail over to another region", "do a region failover"},
		"replay the dead-letter queue":      {"replay the dead-letter queue", "reprocess failed jobs", "replay the dlq"},
	},
	"team": {
		"Machine Learning": {"ml", "machine learning"}, "Developer Experience": {"devex", "developer experience", "dx"},
		"Trust and Safety": {"trust & safety", "trust and safety", "T&S"}, "SRE": {"sre", "site reliability"},
		"Marketing Tech": {"martech", "marketing tech"}, "Support Tools": {"support tools", "support tooling"},
		"Finance Systems": {"finance systems", "finance"},
	},
	"chain": {
		"Ethereum mainnet": {"mainnet", "ethereum", "eth mainnet", "Ethereum"}, "Arbitrum One": {"arbitrum", "arb", "Arbitrum One"},
		"Optimism": {"optimism", "op mainnet"}, "Base": {"base", "Base"}, "Polygon PoS": {"polygon", "matic", "Polygon"},
		"BNB Chain": {"bsc", "bnb chain", "binance smart chain"}, "Avalanche C-Chain": {"avalanche", "avax", "avalanche c-chain"},
	},
	"kind": {
		"router": {"router", "swap router"}, "position manager": {"position manager", "nft position manager", "positions nft"},
		"lending pool": {"pool", "lending pool"}, "addresses provider": {"addresses provider", "pool addresses provider"},
		"USDC market": {"usdc market", "comet usdc"}, "ETH/USD feed": {"eth/usd feed", "eth usd price feed", "eth price oracle"},
		"peg stability module": {"psm", "peg stability module"}, "stETH token": {"steth", "stETH token"},
		"wstETH token": {"wsteth", "wrapped steth"}, "rETH token": {"reth", "rETH token"}, "LINK token": {"link token", "LINK"},
		"DAI token": {"dai", "DAI token"}, "core contract": {"core contract", "blue contract"}, "USDC vault": {"usdc vault", "yvusdc"},
	},
	"plan":    {"Free": {"free", "free tier", "Free"}, "Pro": {"pro", "Pro"}, "Business": {"business", "Business"}, "Enterprise": {"enterprise", "Enterprise"}},
	"runtime": {"PostgreSQL": {"postgres", "postgresql", "pg"}, "Node.js": {"node", "nodejs", "node.js"}, "Go": {"go", "golang"}, "Java": {"java", "jvm"}},
	"role":    {"owner": {"owner", "manager"}, "tech lead": {"tech lead", "technical lead"}, "on-call escalation contact": {"on-call escalation contact", "escalation contact"}},
}
