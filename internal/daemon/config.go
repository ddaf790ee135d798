package daemon

import (
	"bufio"
	"crypto/ed25519"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/bus"
	"github.com/kura-memory/kura/internal/embed"
	"github.com/kura-memory/kura/internal/keys"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/store"
)

// Config is kurad's configuration. It is built from defaults, then an
// optional KEY=value file, then KURA_* environment variables, then flags.
type Config struct {
	DataDir string
	// DatabaseURL keeps the store in PostgreSQL instead of DataDir/kura.db.
	DatabaseURL string
	// PGDump is the pg_dump a backup on PostgreSQL runs (empty: found on
	// PATH or in /usr/lib/postgresql/*/bin).
	PGDump string
	// OutboxLease is how long the kurad publishing a shared database's
	// events keeps the lead unrenewed: after it crashes, another takes
	// over within this.
	OutboxLease   time.Duration
	HTTPAddr      string
	NATSAddr      string
	NATSUsersFile string
	// NATSAnonymous lets local NATS clients connect without a token while
	// kurad has tokens and no NATS users file (the opt-out of NATS
	// requiring tokens); loopback only.
	NATSAnonymous   bool
	LogLevel        string
	LogFormat       string
	Synchronous     string
	MaxBodyBytes    int64
	WriterMaxBatch  int
	WriterLinger    time.Duration
	ReadPool        int
	DefaultProject  string
	RecordTypes     []string
	KeyFile         string
	ShutdownTimeout time.Duration
	DebugAddr       string
	TurnDeadline    time.Duration
	ConfigFile      string
	// TokensFile names the tokens file (auth.ParseTokens); empty means the
	// tokenless loopback mode. RateLimit (requests/s per token identity, 0:
	// off) and RateBurst bound each caller.
	TokensFile string
	RateLimit  float64
	RateBurst  int
	// tokenCount is what Validate found in TokensFile.
	tokenCount   int
	StartupCheck string // quick (and full in the background), full or off: the database check at start
	// RetiredKeys are the public keys (ed25519:<hex>) this kurad signed
	// with before a key rotation: ledgers they signed vouch for the sys:
	// records of an import.
	RetiredKeys []string
	// PreviousKeyFile, during a key rotation, is the old signing key: it
	// signs every checkpoint beside the new one, so witnesses and clients
	// that pinned the old key learn the new one from a checkpoint both sign.
	PreviousKeyFile string
	// Witnesses are the base URLs of the witnesses kurad compares its log
	// with at start and every WitnessPoll.
	Witnesses   []string
	WitnessPoll time.Duration
	// LogOrigin names a new database's log; LogOff leaves events out of
	// the log (the benchmark's baseline; not for production).
	LogOrigin string
	LogOff    bool
	// BackupDir is where POST /v1/admin/backup may write; empty:
	// <data-dir>/backups (BackupPath).
	BackupDir string
	// HTTP server timeouts: slow clients (slow-loris headers or bodies)
	// are cut off, idle keep-alive connections closed.
	HTTPReadHeaderTimeout time.Duration
	HTTPReadTimeout       time.Duration
	HTTPWriteTimeout      time.Duration
	HTTPIdleTimeout       time.Duration

	// MaxInflightBodyBytes bounds the bytes of request bodies being read
	// or held by all requests at once (0: an eighth of the Go soft memory
	// limit, see InflightBodyBytes); MaxInflightBodyWait is how long a
	// request waits for room before it gets 503.
	MaxInflightBodyBytes int64
	MaxInflightBodyWait  time.Duration
	// MaxInflightContextBytes bounds the items (budget_bytes) of the
	// context previews, compiles and turn memory being served at once (0:
	// a sixteenth of the Go soft memory limit, see InflightContextBytes);
	// a request waits MaxInflightBodyWait for room before it gets 503.
	MaxInflightContextBytes int64

	// Embedder: an OpenAI-compatible embeddings endpoint for semantic
	// and hybrid memory search (empty URL: none, search is lexical).
	// EmbedderTimeout bounds each request of the embedding worker,
	// EmbedderQueryTimeout how long a search waits for its query's vector.
	EmbedderURL          string
	EmbedderModel        string
	EmbedderToken        string
	EmbedderTimeout      time.Duration
	EmbedderQueryTimeout time.Duration

	// NATS cluster: the embedded servers of several kurads joined by NATS
	// routes (see bus.Cluster). NATSClusterAddr empty: no cluster.
	NATSClusterAddr         string
	NATSRoutes              []string // nats-route://host:port
	NATSClusterName         string
	NATSClusterUser         string
	NATSClusterPasswordFile string
	NATSServerName          string // "" derives one unique among the peers

	// Now is the store's clock, for tests that move time (a turn's
	// deadline) rather than wait for it; nil: time.Now. It is no setting.
	Now func() time.Time
	// EmbedRetry is the first wait before the embedding worker asks a
	// failing embedder again (0: 1s), for tests. It is no setting.
	EmbedRetry time.Duration
	// StoreHooks are the store's test hooks (store.Hooks). No setting.
	StoreHooks store.Hooks
}

// DefaultConfig is what kurad runs with when nothing is configured.
func DefaultConfig() Config {
	return Config{
		DataDir:         "data",
		HTTPAddr:        "127.0.0.1:7700",
		NATSAddr:        "127.0.0.1:4222",
		NATSClusterName: bus.DefaultClusterName,
		LogLevel:        "info",
		LogFormat:       "text",
		Synchronous:     "FULL",
		MaxBodyBytes:    4 << 20,
		WriterMaxBatch:  256,
		WriterLinger:    500 * time.Microsecond,
		OutboxLease:     5 * time.Second,
		ReadPool:        4,
		DefaultProject:  "default",
		ShutdownTimeout: 15 * time.Second,
		TurnDeadline:    10 * time.Minute,
		WitnessPoll:     10 * time.Second,
		RateLimit:       200,
		RateBurst:       400,
		StartupCheck:    "quick",

		HTTPReadHeaderTimeout: 10 * time.Second,
		HTTPReadTimeout:       60 * time.Second,
		HTTPWriteTimeout:      120 * time.Second,
		HTTPIdleTimeout:       120 * time.Second,

		MaxInflightBodyWait: 5 * time.Second,

		EmbedderTimeout:      30 * time.Second,
		EmbedderQueryTimeout: 2 * time.Second,
	}
}

// setting is one configuration key, reachable as a flag, an environment
// variable and a config file line; all three go through set.
type setting struct {
	flag, env, usage string
	set              func(c *Config, v string) error
}

func settings() []setting {
	str := func(dst func(*Config) *string) func(*Config, string) error {
		return func(c *Config, v string) error { *dst(c) = v; return nil }
	}
	integer := func(name string, dst func(*Config) *int) func(*Config, string) error {
		return func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s: %q is not an integer", name, v)
			}
			*dst(c) = n
			return nil
		}
	}
	duration := func(name string, dst func(*Config) *time.Duration) func(*Config, string) error {
		return func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%s: %q is not a duration", name, v)
			}
			*dst(c) = d
			return nil
		}
	}
	return []setting{
		{"http-read-header-timeout", "KURA_HTTP_READ_HEADER_TIMEOUT", "how long a client may take to send its request headers", duration("http-read-header-timeout", func(c *Config) *time.Duration { return &c.HTTPReadHeaderTimeout })},
		{"http-read-timeout", "KURA_HTTP_READ_TIMEOUT", "how long a client may take to send a whole request, body included", duration("http-read-timeout", func(c *Config) *time.Duration { return &c.HTTPReadTimeout })},
		{"http-write-timeout", "KURA_HTTP_WRITE_TIMEOUT", "how long an answer may take (event streams, long polls and backups set their own)", duration("http-write-timeout", func(c *Config) *time.Duration { return &c.HTTPWriteTimeout })},
		{"http-idle-timeout", "KURA_HTTP_IDLE_TIMEOUT", "how long an idle keep-alive connection stays open", duration("http-idle-timeout", func(c *Config) *time.Duration { return &c.HTTPIdleTimeout })},
		{"data-dir", "KURA_DATA_DIR", "directory for kura.db, kurad.addr and kurad.key", str(func(c *Config) *string { return &c.DataDir })},
		{"database-url", "KURA_DATABASE_URL", "PostgreSQL (15 or later) to keep everything in instead of kura.db, postgres://user@host/db; several kurads may share it", str(func(c *Config) *string { return &c.DatabaseURL })},
		{"pg-dump", "KURA_PG_DUMP", "the pg_dump backups of a PostgreSQL store run, of the server's version or newer (default: pg_dump on PATH, else the newest /usr/lib/postgresql/*/bin/pg_dump)", str(func(c *Config) *string { return &c.PGDump })},
		{"http-addr", "KURA_HTTP_ADDR", "HTTP listen address (port 0 picks a free port)", str(func(c *Config) *string { return &c.HTTPAddr })},
		{"nats-addr", "KURA_NATS_ADDR", "embedded NATS listen address (port 0 picks a free port)", str(func(c *Config) *string { return &c.NATSAddr })},
		{"nats-users-file", "KURA_NATS_USERS_FILE", "NATS users (`<user> <bcrypt-hash> <projects>` or `<nkey> - <projects>` a line); required when nats-addr is not loopback", str(func(c *Config) *string { return &c.NATSUsersFile })},
		{"nats-anonymous", "KURA_NATS_ANONYMOUS", "on: with tokens and no nats-users-file, local NATS clients connect without a Kura token and hear every project, as without tokens (loopback only; no client ever publishes on oclaw.v1.>); off (default): NATS clients present a Kura token", func(c *Config, v string) error {
			switch strings.ToLower(v) {
			case "on", "true", "1":
				c.NATSAnonymous = true
			case "off", "false", "0":
				c.NATSAnonymous = false
			default:
				return fmt.Errorf("nats-anonymous: %q is not on or off", v)
			}
			return nil
		}},
		{"nats-cluster-addr", "KURA_NATS_CLUSTER_ADDR", "host:port the embedded NATS server listens on for routes from other kurads (a NATS cluster; port 0 picks a free port); empty: no cluster. Beyond loopback it needs tokens and nats-cluster-user", str(func(c *Config) *string { return &c.NATSClusterAddr })},
		{"nats-routes", "KURA_NATS_ROUTES", "comma-separated nats-route://host:port of the other kurads' nats-cluster-addr (listing this kurad too is harmless); peers that are down are retried", func(c *Config, v string) error {
			us, err := bus.ParseRoutes(v)
			if err != nil {
				return fmt.Errorf("nats-routes: %w", err)
			}
			c.NATSRoutes = nil
			for _, u := range us {
				c.NATSRoutes = append(c.NATSRoutes, u.String())
			}
			return nil
		}},
		{"nats-cluster-name", "KURA_NATS_CLUSTER_NAME", "NATS cluster name, the same on every kurad of the cluster", str(func(c *Config) *string { return &c.NATSClusterName })},
		{"nats-cluster-user", "KURA_NATS_CLUSTER_USER", "user every route of the NATS cluster authenticates as, both ways (the same on every kurad); required when nats-cluster-addr or a route is not loopback", str(func(c *Config) *string { return &c.NATSClusterUser })},
		{"nats-cluster-password-file", "KURA_NATS_CLUSTER_PASSWORD_FILE", "file holding the route password of nats-cluster-user (one line, at least 16 characters, the same on every kurad; keep it 0600)", str(func(c *Config) *string { return &c.NATSClusterPasswordFile })},
		{"nats-server-name", "KURA_NATS_SERVER_NAME", "this kurad's NATS server name, unique in the cluster (default kurad alone, kurad-<hostname>-<cluster port> in a cluster)", str(func(c *Config) *string { return &c.NATSServerName })},
		{"log-level", "KURA_LOG_LEVEL", "debug, info, warn or error", str(func(c *Config) *string { return &c.LogLevel })},
		{"log-format", "KURA_LOG_FORMAT", "text or json", str(func(c *Config) *string { return &c.LogFormat })},
		{"synchronous", "KURA_SYNCHRONOUS", "SQLite synchronous mode: FULL (acknowledged = durable) or NORMAL", str(func(c *Config) *string { return &c.Synchronous })},
		{"max-body-bytes", "KURA_MAX_BODY_BYTES", "largest request body accepted", func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("max-body-bytes: %q is not an integer", v)
			}
			c.MaxBodyBytes = n
			return nil
		}},
		{"max-inflight-body-bytes", "KURA_MAX_INFLIGHT_BODY_BYTES", "most bytes of request bodies all requests may hold at once (0: an eighth of the Go soft memory limit, at least 2 x max-body-bytes)", func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("max-inflight-body-bytes: %q is not an integer", v)
			}
			c.MaxInflightBodyBytes = n
			return nil
		}},
		{"max-inflight-context-bytes", "KURA_MAX_INFLIGHT_CONTEXT_BYTES", "most bytes of items (budget_bytes) the context previews, compiles and turn memory being served may reserve at once (0: a sixteenth of the Go soft memory limit, at least 16 MiB)", func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("max-inflight-context-bytes: %q is not an integer", v)
			}
			c.MaxInflightContextBytes = n
			return nil
		}},
		{"max-inflight-body-wait", "KURA_MAX_INFLIGHT_BODY_WAIT", "how long a request waits for room under max-inflight-body-bytes before it gets 503", duration("max-inflight-body-wait", func(c *Config) *time.Duration { return &c.MaxInflightBodyWait })},
		{"writer-max-batch", "KURA_WRITER_MAX_BATCH", "most write requests grouped into one transaction", integer("writer-max-batch", func(c *Config) *int { return &c.WriterMaxBatch })},
		{"writer-linger", "KURA_WRITER_LINGER", "how long the writer may wait for more concurrent writes before committing (0 turns it off)", func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("writer-linger: %q is not a duration", v)
			}
			c.WriterLinger = d
			return nil
		}},
		{"outbox-lease", "KURA_OUTBOX_LEASE", "with a shared PostgreSQL database, how long the kurad publishing events keeps the lead unrenewed; after it dies another takes over within this", duration("outbox-lease", func(c *Config) *time.Duration { return &c.OutboxLease })},
		{"read-pool", "KURA_READ_POOL", "read-only database connections", integer("read-pool", func(c *Config) *int { return &c.ReadPool })},
		{"default-project", "KURA_DEFAULT_PROJECT", "event project for records without metadata.project_id and for ledgers", str(func(c *Config) *string { return &c.DefaultProject })},
		{"record-types", "KURA_RECORD_TYPES", "comma-separated record types added to the vocabulary", func(c *Config, v string) error {
			c.RecordTypes = nil
			for _, t := range strings.Split(v, ",") {
				if t = strings.TrimSpace(t); t != "" {
					c.RecordTypes = append(c.RecordTypes, t)
				}
			}
			return nil
		}},
		{"key-file", "KURA_KEY_FILE", "Ed25519 signing key file (default: the systemd credential $CREDENTIALS_DIRECTORY/kurad.key when there is one, else <data-dir>/kurad.key)", str(func(c *Config) *string { return &c.KeyFile })},
		{"debug-addr", "KURA_DEBUG_ADDR", "loopback address for Go's pprof profiles (empty: off)", str(func(c *Config) *string { return &c.DebugAddr })},
		{"turn-deadline", "KURA_TURN_DEADLINE", "deadline of turns opened without deadline_seconds; kurad closes them as timeout after it", func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("turn-deadline: %q is not a duration", v)
			}
			c.TurnDeadline = d
			return nil
		}},
		{"tokens-file", "KURA_TOKENS_FILE", "tokens file: one '<sha256 hex> <identity> <role> <scopes> <projects>' a line (kura token new); reloaded on SIGHUP; empty: tokenless loopback mode", str(func(c *Config) *string { return &c.TokensFile })},
		{"rate-limit", "KURA_RATE_LIMIT", "requests per second allowed to each token identity (0 turns the limit off)", func(c *Config, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("rate-limit: %q is not a number", v)
			}
			c.RateLimit = f
			return nil
		}},
		{"rate-burst", "KURA_RATE_BURST", "requests a token identity may send at once above rate-limit", integer("rate-burst", func(c *Config) *int { return &c.RateBurst })},
		{"retired-keys", "KURA_RETIRED_KEYS", "comma-separated public keys (ed25519:<hex>) kurad signed with before a key rotation: ledgers they signed vouch for kurad's own (sys:) records on import; never list a stolen key", func(c *Config, v string) error {
			c.RetiredKeys = nil
			for _, k := range strings.Split(v, ",") {
				if k = strings.TrimSpace(k); k != "" {
					c.RetiredKeys = append(c.RetiredKeys, k)
				}
			}
			return nil
		}},
		{"previous-key-file", "KURA_PREVIOUS_KEY_FILE", "during a key rotation, the old signing key: it co-signs every log checkpoint so witnesses and clients that pinned it learn the new key (docs/log.md)", str(func(c *Config) *string { return &c.PreviousKeyFile })},
		{"witnesses", "KURA_WITNESSES", "comma-separated witness base URLs (kura witness): kurad compares its log with what they cosigned at start and every witness-poll, and refuses writes on a rollback or fork", func(c *Config, v string) error {
			c.Witnesses = nil
			for _, u := range strings.Split(v, ",") {
				if u = strings.TrimSpace(u); u != "" {
					pu, err := url.Parse(u)
					if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
						return fmt.Errorf("witnesses: %q is not an http(s) URL", u)
					}
					c.Witnesses = append(c.Witnesses, strings.TrimRight(u, "/"))
				}
			}
			return nil
		}},
		{"witness-poll", "KURA_WITNESS_POLL", "how often kurad asks its witnesses what they cosigned", duration("witness-poll", func(c *Config) *time.Duration { return &c.WitnessPoll })},
		{"log-origin", "KURA_LOG_ORIGIN", "the name of a new database's log, its checkpoints' first line (default kura/<random>); an existing database keeps its own", str(func(c *Config) *string { return &c.LogOrigin })},
		{"log", "KURA_LOG", "on (default) or off: off leaves events out of the Merkle log, for a benchmark's baseline only; the next start with it on appends what was missed", func(c *Config, v string) error {
			switch strings.ToLower(v) {
			case "on", "true", "1":
				c.LogOff = false
			case "off", "false", "0":
				c.LogOff = true
			default:
				return fmt.Errorf("log: %q is not on or off", v)
			}
			return nil
		}},
		{"backup-dir", "KURA_BACKUP_DIR", "the directory backups go into (POST /v1/admin/backup, kura backup): a backup's path must lie inside it, and one without a path gets a new subdirectory named from the time (default <data-dir>/backups; created 0700)", str(func(c *Config) *string { return &c.BackupDir })},
		{"startup-check", "KURA_STARTUP_CHECK", "database check at start: quick (every page before serving, every index in the background, writes refused until it passes), full (both before serving) or off (huge databases)", str(func(c *Config) *string { return &c.StartupCheck })},
		{"embedder-url", "KURA_EMBEDDER_URL", "OpenAI-compatible embeddings endpoint for semantic and hybrid memory search (Ollama: http://127.0.0.1:11434; a /v1 or /v1/embeddings ending is fine); empty: search by words only", str(func(c *Config) *string { return &c.EmbedderURL })},
		{"embedder-model", "KURA_EMBEDDER_MODEL", "the embedding model to ask for (all-minilm, nomic-embed-text, text-embedding-3-small); a change re-embeds every node in the background", str(func(c *Config) *string { return &c.EmbedderModel })},
		{"embedder-token", "KURA_EMBEDDER_TOKEN", "bearer token for the embedder (OpenAI); prefer the environment or the config file to the flag, which other users can see", str(func(c *Config) *string { return &c.EmbedderToken })},
		{"embedder-timeout", "KURA_EMBEDDER_TIMEOUT", "how long one request of the embedding worker may take", duration("embedder-timeout", func(c *Config) *time.Duration { return &c.EmbedderTimeout })},
		{"embedder-query-timeout", "KURA_EMBEDDER_QUERY_TIMEOUT", "how long a search waits for its query's vector before it answers by words, with a warning", duration("embedder-query-timeout", func(c *Config) *time.Duration { return &c.EmbedderQueryTimeout })},
		{"shutdown-timeout", "KURA_SHUTDOWN_TIMEOUT", "how long a graceful shutdown may take", func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("shutdown-timeout: %q is not a duration", v)
			}
			c.ShutdownTimeout = d
			return nil
		}},
	}
}

// LoadConfig builds the configuration from defaults, the config file
// (--config or KURA_CONFIG), the environment and args. It returns flag.ErrHelp
// for -h and reports the first bad value with its name.
func LoadConfig(args []string, getenv func(string) string, out *os.File) (Config, bool, error) {
	c := DefaultConfig()
	fs := flag.NewFlagSet("kurad", flag.ContinueOnError)
	if out != nil {
		fs.SetOutput(out)
	}
	flagVals := map[string]*string{}
	for _, s := range settings() {
		flagVals[s.flag] = fs.String(s.flag, "", s.usage+" (env "+s.env+")")
	}
	configFile := fs.String("config", "", "optional KEY=value config file (env KURA_CONFIG)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return c, false, err
	}
	if fs.NArg() > 0 {
		return c, false, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *showVersion {
		return c, true, nil
	}
	c.ConfigFile = getenv("KURA_CONFIG")
	if *configFile != "" {
		c.ConfigFile = *configFile
	}
	byEnv := map[string]setting{}
	byFlag := map[string]setting{}
	for _, s := range settings() {
		byEnv[s.env] = s
		byFlag[s.flag] = s
	}
	if c.ConfigFile != "" {
		if err := loadFile(&c, c.ConfigFile, byEnv); err != nil {
			return c, false, err
		}
	}
	for _, s := range settings() {
		if v := getenv(s.env); v != "" {
			if err := s.set(&c, v); err != nil {
				return c, false, fmt.Errorf("%s: %w", s.env, err)
			}
		}
	}
	var ferr error
	fs.Visit(func(f *flag.Flag) {
		if s, ok := byFlag[f.Name]; ok && ferr == nil {
			if err := s.set(&c, *flagVals[f.Name]); err != nil {
				ferr = fmt.Errorf("--%s: %w", f.Name, err)
			}
		}
	})
	if ferr != nil {
		return c, false, ferr
	}
	if c.KeyFile == "" {
		c.KeyFile = keys.DefaultPath(c.DataDir, getenv("CREDENTIALS_DIRECTORY"))
	}
	err := c.Validate()
	return c, false, err
}

// loadFile reads KEY=value lines (the same names as the environment, so the
// file doubles as a systemd EnvironmentFile); # starts a comment.
func loadFile(c *Config, path string, byEnv map[string]setting) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		k, v, ok := strings.Cut(t, "=")
		if !ok {
			return fmt.Errorf("config file %s:%d: want KEY=value", path, line)
		}
		k, v = strings.TrimSpace(k), strings.Trim(strings.TrimSpace(v), `"'`)
		if k == "KURA_CONFIG" {
			continue
		}
		s, ok := byEnv[k]
		if !ok {
			return fmt.Errorf("config file %s:%d: unknown setting %s", path, line, k)
		}
		if err := s.set(c, v); err != nil {
			return fmt.Errorf("config file %s:%d: %w", path, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("config file %s:%d: %w", path, line+1, err)
	}
	return nil
}

// Validate reports the first invalid field by name.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return fmt.Errorf("data-dir: must not be empty")
	}
	if c.OutboxLease < 100*time.Millisecond || c.OutboxLease > time.Hour {
		return fmt.Errorf("outbox-lease: %s must be between 100ms and 1h", c.OutboxLease)
	}
	if c.DatabaseURL != "" && !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		return fmt.Errorf("database-url: must be a postgres:// or postgresql:// URL")
	}
	if c.LogOrigin != "" && !store.ValidOrigin(c.LogOrigin) {
		return fmt.Errorf("log-origin: %q must be printable ASCII without spaces or '+' (it names the log in every checkpoint)", c.LogOrigin)
	}
	c.tokenCount = 0
	if c.TokensFile != "" {
		es, err := auth.LoadTokensFile(c.TokensFile)
		if err != nil {
			return fmt.Errorf("tokens-file: %w", err)
		}
		// An empty file is a mistake (a deployment that lost its
		// tokens, a template never filled in), not a request for the
		// tokenless admin mode: that mode is asked for by naming no file.
		if len(es) == 0 {
			return fmt.Errorf("tokens-file: %s", errNoTokens(c.TokensFile))
		}
		c.tokenCount = len(es)
	}
	if err := c.validateNATSAuth(); err != nil {
		return err
	}
	if _, err := c.NATSCluster(); err != nil {
		return err
	}
	addrs := [][2]string{{"http-addr", c.HTTPAddr}, {"nats-addr", c.NATSAddr}}
	if c.NATSClusterAddr != "" {
		addrs = append(addrs, [2]string{"nats-cluster-addr", c.NATSClusterAddr})
	}
	if c.DebugAddr != "" {
		addrs = append(addrs, [2]string{"debug-addr", c.DebugAddr})
	}
	for _, na := range addrs {
		name, a := na[0], na[1]
		// pprof has no authentication, so it stays on loopback whatever
		// the tokens; the API and NATS may leave it once tokens exist.
		loopbackOnly := !c.TokensConfigured() || name == "debug-addr"
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			return fmt.Errorf("%s: %q is not host:port", name, a)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			return fmt.Errorf("%s: port %q is not 0..65535", name, port)
		}
		if host == "" {
			return fmt.Errorf("%s: give a host (127.0.0.1 for loopback only)", name)
		}
		// Without tokens every caller is the local admin, which is only
		// safe while nobody but this host can connect.
		if loopbackOnly && name == "debug-addr" && !isLoopback(host) {
			return fmt.Errorf("%s: %s is not a loopback address; the profiler has no authentication, so it listens on loopback only", name, host)
		}
		if loopbackOnly && !isLoopback(host) {
			return fmt.Errorf("%s: %s is not a loopback address; without tokens (a --tokens-file) kurad serves anonymous callers with full rights, so it listens on loopback only (127.0.0.1, ::1 or localhost)", name, host)
		}
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return fmt.Errorf("log-level: %w", err)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("log-format: %q is not text or json", c.LogFormat)
	}
	c.Synchronous = strings.ToUpper(c.Synchronous)
	if c.Synchronous != "FULL" && c.Synchronous != "NORMAL" {
		return fmt.Errorf("synchronous: %q is not FULL or NORMAL", c.Synchronous)
	}
	if c.MaxBodyBytes < 1024 || c.MaxBodyBytes > 1<<30 {
		return fmt.Errorf("max-body-bytes: %d is outside 1024..1073741824", c.MaxBodyBytes)
	}
	if c.MaxInflightBodyBytes != 0 && (c.MaxInflightBodyBytes < c.MaxBodyBytes || c.MaxInflightBodyBytes > 1<<40) {
		return fmt.Errorf("max-inflight-body-bytes: %d is outside max-body-bytes (%d)..1099511627776, or 0 for the default", c.MaxInflightBodyBytes, c.MaxBodyBytes)
	}
	if c.MaxInflightContextBytes != 0 && (c.MaxInflightContextBytes < 1<<20 || c.MaxInflightContextBytes > 1<<40) {
		return fmt.Errorf("max-inflight-context-bytes: %d is outside 1048576..1099511627776, or 0 for the default", c.MaxInflightContextBytes)
	}
	if c.MaxInflightBodyWait < 0 || c.MaxInflightBodyWait > time.Minute {
		return fmt.Errorf("max-inflight-body-wait: %s is outside 0..1m", c.MaxInflightBodyWait)
	}
	if c.WriterMaxBatch < 1 || c.WriterMaxBatch > 10000 {
		return fmt.Errorf("writer-max-batch: %d is outside 1..10000", c.WriterMaxBatch)
	}
	if c.WriterLinger < 0 || c.WriterLinger > time.Second {
		return fmt.Errorf("writer-linger: %s is outside 0..1s", c.WriterLinger)
	}
	if c.ReadPool < 1 || c.ReadPool > 64 {
		return fmt.Errorf("read-pool: %d is outside 1..64", c.ReadPool)
	}
	if !kura.ValidSlug(c.DefaultProject) {
		return fmt.Errorf("default-project: %q is not a slug (^[a-z0-9][a-z0-9_-]{0,63}$)", c.DefaultProject)
	}
	for _, t := range c.RecordTypes {
		if !kura.ValidTypeName(t) {
			return fmt.Errorf("record-types: %q is not a record type name (lowercase letters, digits, . _ -)", t)
		}
	}
	if c.TurnDeadline < time.Second || c.TurnDeadline > 7*24*time.Hour {
		return fmt.Errorf("turn-deadline: %s is outside 1s..168h", c.TurnDeadline)
	}
	if c.RateLimit < 0 || c.RateLimit > 1e6 {
		return fmt.Errorf("rate-limit: %g is outside 0..1000000 requests/s", c.RateLimit)
	}
	if c.RateLimit > 0 && (c.RateBurst < 1 || c.RateBurst > 1e6) {
		return fmt.Errorf("rate-burst: %d is outside 1..1000000", c.RateBurst)
	}
	if _, err := c.RetiredPublicKeys(); err != nil {
		return err
	}
	if c.StartupCheck != "quick" && c.StartupCheck != "full" && c.StartupCheck != "off" {
		return fmt.Errorf("startup-check: %q is not quick, full or off", c.StartupCheck)
	}
	for _, t := range []struct {
		name string
		d    time.Duration
	}{
		{"http-read-header-timeout", c.HTTPReadHeaderTimeout}, {"http-read-timeout", c.HTTPReadTimeout},
		{"http-write-timeout", c.HTTPWriteTimeout}, {"http-idle-timeout", c.HTTPIdleTimeout},
	} {
		// Zero would mean no timeout at all: a slow-loris client could hold
		// a connection for ever.
		if t.d < 100*time.Millisecond || t.d > 24*time.Hour {
			return fmt.Errorf("%s: %s is outside 100ms..24h", t.name, t.d)
		}
	}
	if c.HTTPReadHeaderTimeout > c.HTTPReadTimeout {
		return fmt.Errorf("http-read-header-timeout: %s is longer than http-read-timeout %s, which covers the headers too", c.HTTPReadHeaderTimeout, c.HTTPReadTimeout)
	}
	if c.ShutdownTimeout <= 0 {
		return fmt.Errorf("shutdown-timeout: must be positive")
	}
	return c.validateEmbedder()
}

// validateEmbedder checks the embedder settings: a URL and a model go
// together, a token needs a URL.
func (c *Config) validateEmbedder() error {
	c.EmbedderURL, c.EmbedderModel = strings.TrimSpace(c.EmbedderURL), strings.TrimSpace(c.EmbedderModel)
	if c.EmbedderURL == "" {
		switch {
		case c.EmbedderModel != "":
			return fmt.Errorf("embedder-url: embedder-model is set but no embedder-url; give the embeddings endpoint (Ollama: http://127.0.0.1:11434)")
		case c.EmbedderToken != "":
			return fmt.Errorf("embedder-url: embedder-token is set but no embedder-url")
		}
		return nil
	}
	if _, err := embed.Endpoint(c.EmbedderURL); err != nil {
		return fmt.Errorf("embedder-url: %s", strings.TrimPrefix(err.Error(), "embedder url: "))
	}
	if c.EmbedderModel == "" {
		return fmt.Errorf("embedder-model: required with embedder-url (all-minilm, nomic-embed-text, ...)")
	}
	if len(c.EmbedderModel) > 256 || strings.ContainsFunc(c.EmbedderModel, unicode.IsControl) {
		return fmt.Errorf("embedder-model: %q is not a model name", c.EmbedderModel)
	}
	if c.EmbedderTimeout < 100*time.Millisecond || c.EmbedderTimeout > 10*time.Minute {
		return fmt.Errorf("embedder-timeout: %s is outside 100ms..10m", c.EmbedderTimeout)
	}
	if c.EmbedderQueryTimeout < 10*time.Millisecond || c.EmbedderQueryTimeout > time.Minute {
		return fmt.Errorf("embedder-query-timeout: %s is outside 10ms..1m", c.EmbedderQueryTimeout)
	}
	return nil
}

// InflightBodyBytes is the budget of request body bytes in flight:
// MaxInflightBodyBytes, else an eighth of the Go soft memory limit
// (GOMEMLIMIT; kurad's default is 256 MiB, so 32 MiB: eight bodies at the
// default 4 MiB limit), and never less than two bodies at the limit. A body
// costs a few times its size once it is read, copied and decoded, so an
// eighth keeps what bodies cost at about half the limit.
func (c *Config) InflightBodyBytes() int64 {
	if c.MaxInflightBodyBytes > 0 {
		return c.MaxInflightBodyBytes
	}
	limit := debug.SetMemoryLimit(-1)
	if limit <= 0 || limit == math.MaxInt64 {
		limit = 256 << 20 // no soft limit set: size for kurad's default one
	}
	return max(limit/8, 2*c.MaxBodyBytes)
}

// InflightContextBytes is the budget of context items in flight:
// MaxInflightContextBytes, else a sixteenth of the Go soft memory limit
// (16 MiB under kurad's default 256 MiB), and never less than the largest
// budget_bytes a request may ask (admission.MaxBudgetBytes). A compile
// holds its items five or six times over at its peak (the items, their
// JSON for the digest, its canonical form, the answer), so a sixteenth
// keeps what compiles hold to about a third of the limit.
func (c *Config) InflightContextBytes() int64 {
	if c.MaxInflightContextBytes > 0 {
		return c.MaxInflightContextBytes
	}
	limit := debug.SetMemoryLimit(-1)
	if limit <= 0 || limit == math.MaxInt64 {
		limit = 256 << 20 // no soft limit set: size for kurad's default one
	}
	return max(limit/16, admission.MaxBudgetBytes)
}

// RetiredPublicKeys parses RetiredKeys.
func (c *Config) RetiredPublicKeys() ([]ed25519.PublicKey, error) {
	var out []ed25519.PublicKey
	for _, k := range c.RetiredKeys {
		pub, err := keys.ParsePublicKey(k)
		if err != nil {
			return nil, fmt.Errorf("retired-keys: %w", err)
		}
		out = append(out, pub)
	}
	return out, nil
}

// BackupPath is the backup directory: BackupDir, else <data-dir>/backups.
func (c *Config) BackupPath() string {
	if c.BackupDir != "" {
		return c.BackupDir
	}
	return filepath.Join(c.DataDir, "backups")
}

// TokensConfigured reports whether callers must present a token: a tokens
// file is set and, when Validate read it, held at least one token
// (Validate refuses a file holding none).
func (c *Config) TokensConfigured() bool { return c.TokensFile != "" && c.tokenCount > 0 }

// errNoTokens is the refusal of a tokens file that names no token.
func errNoTokens(path string) error {
	return fmt.Errorf("%s holds no token (only blank lines or comments); add one (kura token new prints a token and its line), or give no tokens file for the tokenless loopback mode", path)
}

// validateNATSAuth refuses NATS beyond loopback without users: anyone who
// could connect would see every project's doorbell.
func (c *Config) validateNATSAuth() error {
	if c.NATSAnonymous && c.NATSUsersFile != "" {
		return fmt.Errorf("nats-anonymous: a NATS users file is given, and with one only its identities connect; drop one of the two")
	}
	host, _, err := net.SplitHostPort(c.NATSAddr)
	if err != nil || host == "" || isLoopback(host) || c.NATSUsersFile != "" {
		return nil // Validate names a malformed address itself
	}
	return fmt.Errorf("nats-addr: %s is not a loopback address and no NATS users are configured; beyond loopback NATS requires authentication: give --nats-users-file (env KURA_NATS_USERS_FILE), or listen on 127.0.0.1 (Kura tokens authenticate NATS clients on loopback only: beyond it they would cross the network in clear)", host)
}

// NATSCluster is the bus's cluster configuration, the route password read
// from its file; it reports what keeps the cluster from running
// (bus.CheckCluster's rules).
func (c *Config) NATSCluster() (bus.Cluster, error) {
	cl := bus.Cluster{Addr: c.NATSClusterAddr, Name: c.NATSClusterName, User: c.NATSClusterUser}
	for _, r := range c.NATSRoutes {
		us, err := bus.ParseRoutes(r)
		if err != nil {
			return cl, fmt.Errorf("nats-routes: %w", err)
		}
		cl.Routes = append(cl.Routes, us...)
	}
	if c.NATSClusterPasswordFile != "" {
		b, err := os.ReadFile(c.NATSClusterPasswordFile)
		if err != nil {
			return cl, fmt.Errorf("nats-cluster-password-file: %w", err)
		}
		if cl.Password = strings.TrimSpace(string(b)); cl.Password == "" || strings.ContainsAny(cl.Password, "\r\n") {
			return cl, fmt.Errorf("nats-cluster-password-file: %s must hold the password on one line", c.NATSClusterPasswordFile)
		}
	}
	if c.NATSServerName != "" && !bus.ValidServerName(c.NATSServerName) {
		return cl, fmt.Errorf("nats-server-name: %q: letters, digits, '.', '_' and '-' only, at most 64", c.NATSServerName)
	}
	if c.NATSClusterAddr == "" && (c.NATSClusterUser != "" || c.NATSClusterPasswordFile != "") {
		return cl, fmt.Errorf("nats-cluster-addr: nats-cluster-user or nats-cluster-password-file is set but no cluster address; give --nats-cluster-addr")
	}
	if err := bus.CheckCluster(cl); err != nil {
		return cl, err
	}
	return cl, nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(s))
	return l, err
}

// isLoopback reports whether host names only the local machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
