package daemon_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/daemon"
)

// env returns a getenv over m.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// devNull is where flag usage goes during tests.
func devNull(tb testing.TB) *os.File {
	tb.Helper()
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}

// writeConfigFile writes lines to a config file in a temp dir.
func writeConfigFile(tb testing.TB, lines ...string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "kurad.conf")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

func TestLoadConfig_Defaults(t *testing.T) {
	t.Parallel()
	got, version, err := daemon.LoadConfig(nil, env(nil), devNull(t))
	if err != nil {
		t.Fatalf("got error %v, want nil", err)
	}
	if version {
		t.Error("got version true, want false")
	}
	want := daemon.DefaultConfig()
	want.KeyFile = filepath.Join("data", "kurad.key")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	def := daemon.DefaultConfig()
	if err := def.Validate(); err != nil {
		t.Errorf("got DefaultConfig().Validate() %v, want nil", err)
	}
}

// TestConfig_Precedence checks each layer over the one below it:
// defaults → config file → environment → flags.
func TestConfig_Precedence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		flag, env string
		get       func(daemon.Config) any
		// values given at each layer, and what each should load as
		def                         any
		fileLine                    string // value as written in the file (may be quoted)
		fileVal, envIn, flagIn      string
		fromFile, fromEnv, fromFlag any
	}{
		{
			flag: "data-dir", env: "KURA_DATA_DIR", get: func(c daemon.Config) any { return c.DataDir },
			def: "data", fileLine: `"/from/file"`, fromFile: "/from/file",
			envIn: "/from/env", fromEnv: "/from/env", flagIn: "/from/flag", fromFlag: "/from/flag",
		},
		{
			flag: "http-addr", env: "KURA_HTTP_ADDR", get: func(c daemon.Config) any { return c.HTTPAddr },
			def: "127.0.0.1:7700", fileLine: "'127.0.0.1:1001'", fromFile: "127.0.0.1:1001",
			envIn: "[::1]:1002", fromEnv: "[::1]:1002", flagIn: "localhost:1003", fromFlag: "localhost:1003",
		},
		{
			flag: "synchronous", env: "KURA_SYNCHRONOUS", get: func(c daemon.Config) any { return c.Synchronous },
			def: "FULL", fileLine: "NORMAL", fromFile: "NORMAL",
			envIn: "FULL", fromEnv: "FULL", flagIn: "NORMAL", fromFlag: "NORMAL",
		},
		{
			flag: "max-body-bytes", env: "KURA_MAX_BODY_BYTES", get: func(c daemon.Config) any { return c.MaxBodyBytes },
			def: int64(4 << 20), fileLine: "2048", fromFile: int64(2048),
			envIn: "8192", fromEnv: int64(8192), flagIn: "1073741824", fromFlag: int64(1 << 30),
		},
		{
			flag: "writer-max-batch", env: "KURA_WRITER_MAX_BATCH", get: func(c daemon.Config) any { return c.WriterMaxBatch },
			def: 256, fileLine: `"1"`, fromFile: 1,
			envIn: "10000", fromEnv: 10000, flagIn: "17", fromFlag: 17,
		},
		{
			flag: "record-types", env: "KURA_RECORD_TYPES", get: func(c daemon.Config) any { return c.RecordTypes },
			def: []string(nil), fileLine: "a.one", fromFile: []string{"a.one"},
			envIn: " b.two , c.three,", fromEnv: []string{"b.two", "c.three"}, flagIn: "d.four", fromFlag: []string{"d.four"},
		},
		{
			flag: "embedder-query-timeout", env: "KURA_EMBEDDER_QUERY_TIMEOUT", get: func(c daemon.Config) any { return c.EmbedderQueryTimeout },
			def: 2 * time.Second, fileLine: "500ms", fromFile: 500 * time.Millisecond,
			envIn: "1s", fromEnv: time.Second, flagIn: "3s", fromFlag: 3 * time.Second,
		},
		{
			flag: "shutdown-timeout", env: "KURA_SHUTDOWN_TIMEOUT", get: func(c daemon.Config) any { return c.ShutdownTimeout },
			def: 15 * time.Second, fileLine: "1s", fromFile: time.Second,
			envIn: "1500ms", fromEnv: 1500 * time.Millisecond, flagIn: "2m", fromFlag: 2 * time.Minute,
		},
	}
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			file := writeConfigFile(t,
				"# kurad configuration",
				"",
				"  "+tt.env+" = "+tt.fileLine+"  ",
			)
			layers := []struct {
				name string
				args []string
				env  map[string]string
				want any
			}{
				{"Default", nil, nil, tt.def},
				{"FileByFlag", []string{"--config", file}, nil, tt.fromFile},
				{"FileByEnv", nil, map[string]string{"KURA_CONFIG": file}, tt.fromFile},
				{"FileFlagOverEnv", []string{"--config", file}, map[string]string{"KURA_CONFIG": "/does/not/exist"}, tt.fromFile},
				{"Env", nil, map[string]string{tt.env: tt.envIn}, tt.fromEnv},
				{"EnvOverFile", []string{"--config", file}, map[string]string{tt.env: tt.envIn}, tt.fromEnv},
				{"EmptyEnvIsUnset", []string{"--config", file}, map[string]string{tt.env: ""}, tt.fromFile},
				{"Flag", []string{"--" + tt.flag, tt.flagIn}, nil, tt.fromFlag},
				{"FlagOverFile", []string{"--config", file, "--" + tt.flag + "=" + tt.flagIn}, nil, tt.fromFlag},
				{"FlagOverEnvAndFile", []string{"-" + tt.flag, tt.flagIn, "-config", file}, map[string]string{tt.env: tt.envIn}, tt.fromFlag},
			}
			for _, l := range layers {
				t.Run(l.name, func(t *testing.T) {
					c, version, err := daemon.LoadConfig(l.args, env(l.env), devNull(t))
					if err != nil {
						t.Fatalf("got error %v, want nil", err)
					}
					if version {
						t.Error("got version true, want false")
					}
					if got := tt.get(c); !reflect.DeepEqual(got, l.want) {
						t.Errorf("got %s = %#v, want %#v", tt.flag, got, l.want)
					}
				})
			}
		})
	}
}

func TestConfig_ConfigFileSyntax(t *testing.T) {
	t.Parallel()
	file := writeConfigFile(t,
		"# comment line",
		"   # indented comment",
		"",
		"\t",
		"KURA_CONFIG=/ignored/inside/a/file",
		`KURA_DATA_DIR="/quoted/dir"`,
		"KURA_LOG_LEVEL='debug'",
		"KURA_LOG_FORMAT=json",
		"KURA_DEFAULT_PROJECT = hashi",
		"KURA_NATS_ADDR=127.0.0.1:0",
		"KURA_READ_POOL=8",
		"KURA_KEY_FILE=/keys/k=1.key", // only the first = separates
	)
	c, _, err := daemon.LoadConfig(nil, env(map[string]string{"KURA_CONFIG": file}), devNull(t))
	if err != nil {
		t.Fatalf("got error %v, want nil", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"ConfigFile", c.ConfigFile, file},
		{"DataDir", c.DataDir, "/quoted/dir"},
		{"LogLevel", c.LogLevel, "debug"},
		{"LogFormat", c.LogFormat, "json"},
		{"DefaultProject", c.DefaultProject, "hashi"},
		{"NATSAddr", c.NATSAddr, "127.0.0.1:0"},
		{"ReadPool", c.ReadPool, 8},
		{"KeyFile", c.KeyFile, "/keys/k=1.key"},
	}
	for _, ch := range checks {
		t.Run(ch.name, func(t *testing.T) {
			if !reflect.DeepEqual(ch.got, ch.want) {
				t.Errorf("got %#v, want %#v", ch.got, ch.want)
			}
		})
	}
}

func TestConfig_KeyFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"Default", nil, nil, filepath.Join("data", "kurad.key")},
		{"FollowsDataDirFlag", []string{"--data-dir", "/srv/kura"}, nil, "/srv/kura/kurad.key"},
		{"FollowsDataDirEnv", nil, map[string]string{"KURA_DATA_DIR": "/var/lib/kura"}, "/var/lib/kura/kurad.key"},
		{"Explicit", []string{"--data-dir", "/srv/kura", "--key-file", "/etc/kura/key"}, nil, "/etc/kura/key"},
		{"ExplicitEnv", nil, map[string]string{"KURA_KEY_FILE": "/run/k"}, "/run/k"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := daemon.LoadConfig(tt.args, env(tt.env), devNull(t))
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if c.KeyFile != tt.want {
				t.Errorf("got KeyFile %q, want %q", c.KeyFile, tt.want)
			}
		})
	}
}

func TestConfig_Version(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"Alone", []string{"-version"}, nil},
		{"DoubleDash", []string{"--version"}, nil},
		// -version answers before any file or value is looked at.
		{"IgnoresBadEnv", []string{"-version"}, map[string]string{"KURA_MAX_BODY_BYTES": "huge", "KURA_CONFIG": "/does/not/exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, version, err := daemon.LoadConfig(tt.args, env(tt.env), devNull(t))
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if !version {
				t.Error("got version false, want true")
			}
		})
	}

	t.Run("Help", func(t *testing.T) {
		_, _, err := daemon.LoadConfig([]string{"-h"}, env(nil), devNull(t))
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("got %v, want flag.ErrHelp", err)
		}
	})
}

func TestConfig_Invalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string // substrings of the error
	}{
		{"HTTPAddrNoPort", []string{"--http-addr", "nope"}, nil, []string{"http-addr", "host:port"}},
		{"HTTPAddrAllInterfaces", []string{"--http-addr", "0.0.0.0:7700"}, nil, []string{"http-addr", "loopback"}},
		{"HTTPAddrTestNet", []string{"--http-addr", "192.0.2.1:7700"}, nil, []string{"http-addr", "192.0.2.1", "loopback"}},
		{"HTTPAddrIPv6Any", []string{"--http-addr", "[::]:7700"}, nil, []string{"http-addr", "loopback"}},
		{"HTTPAddrHostname", []string{"--http-addr", "example.com:7700"}, nil, []string{"http-addr", "loopback"}},
		{"HTTPAddrNoHost", []string{"--http-addr", ":7700"}, nil, []string{"http-addr", "host"}},
		{"HTTPAddrPortRange", []string{"--http-addr", "127.0.0.1:65536"}, nil, []string{"http-addr", "port"}},
		{"HTTPAddrPortName", []string{"--http-addr", "127.0.0.1:http"}, nil, []string{"http-addr", "port"}},
		{"NATSAddrAllInterfaces", nil, map[string]string{"KURA_NATS_ADDR": "0.0.0.0:4222"}, []string{"nats-addr", "loopback", "--nats-users-file"}},
		{"NATSAddrTestNet", []string{"--nats-addr", "192.0.2.1:4222"}, nil, []string{"nats-addr", "loopback", "KURA_NATS_USERS_FILE"}},
		{"DataDirEmpty", []string{"--data-dir="}, nil, []string{"data-dir"}},
		{"DatabaseURLNotPostgres", []string{"--database-url", "mysql://u@h/db"}, nil, []string{"database-url", "postgres://"}},
		{"DatabaseURLPath", nil, map[string]string{"KURA_DATABASE_URL": "/var/lib/kura/kura.db"}, []string{"database-url"}},
		{"OutboxLeaseTooShort", []string{"--outbox-lease", "10ms"}, nil, []string{"outbox-lease", "100ms"}},
		{"OutboxLeaseNotDuration", []string{"--outbox-lease", "5"}, nil, []string{"outbox-lease", "duration"}},
		{"SynchronousOff", []string{"--synchronous", "OFF"}, nil, []string{"synchronous", "OFF"}},
		{"SynchronousExtra", nil, map[string]string{"KURA_SYNCHRONOUS": "EXTRA"}, []string{"synchronous"}},
		{"MaxBodyTooSmall", []string{"--max-body-bytes", "1023"}, nil, []string{"max-body-bytes", "1023"}},
		{"MaxBodyTooLarge", []string{"--max-body-bytes", "1073741825"}, nil, []string{"max-body-bytes"}},
		{"MaxBodyNegative", []string{"--max-body-bytes=-1"}, nil, []string{"max-body-bytes"}},
		{"MaxBodyNotInteger", []string{"--max-body-bytes", "4MB"}, nil, []string{"--max-body-bytes", "not an integer"}},
		{"WriterBatchZero", []string{"--writer-max-batch", "0"}, nil, []string{"writer-max-batch"}},
		{"WriterBatchTooLarge", []string{"--writer-max-batch", "10001"}, nil, []string{"writer-max-batch"}},
		{"WriterBatchNotInteger", nil, map[string]string{"KURA_WRITER_MAX_BATCH": "many"}, []string{"KURA_WRITER_MAX_BATCH", "writer-max-batch"}},
		{"ReadPoolZero", []string{"--read-pool", "0"}, nil, []string{"read-pool"}},
		{"ReadPoolTooLarge", []string{"--read-pool", "65"}, nil, []string{"read-pool"}},
		{"DefaultProjectUpper", []string{"--default-project", "Hashi"}, nil, []string{"default-project", "slug"}},
		{"DefaultProjectSpace", []string{"--default-project", "my project"}, nil, []string{"default-project"}},
		{"DefaultProjectLeadingDash", []string{"--default-project", "-x"}, nil, []string{"default-project"}},
		{"DefaultProjectEmpty", []string{"--default-project="}, nil, []string{"default-project"}},
		{"RecordTypeUpper", []string{"--record-types", "ok.type,Bad.Type"}, nil, []string{"record-types", "Bad.Type"}},
		{"RecordTypeSlash", []string{"--record-types", "a/b"}, nil, []string{"record-types"}},
		{"RecordTypeTooLong", []string{"--record-types", strings.Repeat("x", 65)}, nil, []string{"record-types"}},
		{"ShutdownZero", []string{"--shutdown-timeout", "0s"}, nil, []string{"shutdown-timeout"}},
		{"ShutdownNegative", []string{"--shutdown-timeout", "-1s"}, nil, []string{"shutdown-timeout"}},
		{"ShutdownNotDuration", []string{"--shutdown-timeout", "15"}, nil, []string{"shutdown-timeout", "duration"}},
		{"ReadHeaderTimeoutZero", []string{"--http-read-header-timeout", "0s"}, nil, []string{"http-read-header-timeout", "100ms..24h"}},
		{"ReadTimeoutTooShort", nil, map[string]string{"KURA_HTTP_READ_TIMEOUT": "99ms"}, []string{"http-read-timeout"}},
		{"WriteTimeoutNotDuration", []string{"--http-write-timeout", "30"}, nil, []string{"http-write-timeout", "duration"}},
		{"IdleTimeoutTooLong", []string{"--http-idle-timeout", "25h"}, nil, []string{"http-idle-timeout"}},
		{"ReadHeaderLongerThanRead", []string{"--http-read-header-timeout", "2m", "--http-read-timeout", "1m"}, nil, []string{"http-read-header-timeout", "http-read-timeout"}},
		{"LogLevel", []string{"--log-level", "loud"}, nil, []string{"log-level"}},
		{"LogFormat", []string{"--log-format", "xml"}, nil, []string{"log-format"}},
		{"UnknownFlag", []string{"--bogus", "1"}, nil, []string{"bogus"}},
		{"PositionalArgument", []string{"--data-dir", "d", "serve"}, nil, []string{"unexpected argument", "serve"}},
		{"MissingConfigFile", []string{"--config", "/does/not/exist/kurad.conf"}, nil, []string{"config file"}},
		{"EmbedderModelWithoutURL", nil, map[string]string{"KURA_EMBEDDER_MODEL": "all-minilm"}, []string{"embedder-url", "embedder-model is set"}},
		{"EmbedderTokenWithoutURL", nil, map[string]string{"KURA_EMBEDDER_TOKEN": "sk-1"}, []string{"embedder-url", "embedder-token is set"}},
		{"EmbedderURLWithoutModel", []string{"--embedder-url", "http://127.0.0.1:11434"}, nil, []string{"embedder-model", "required"}},
		{"EmbedderURLNoScheme", []string{"--embedder-url", "127.0.0.1:11434", "--embedder-model", "m"}, nil, []string{"embedder-url", "http or https"}},
		{"EmbedderURLPassword", []string{"--embedder-url", "http://u:hunter2@h:1", "--embedder-model", "m"}, nil, []string{"embedder-url", "embedder token"}},
		{"EmbedderModelControl", []string{"--embedder-url", "http://h:1", "--embedder-model", "m\x00"}, nil, []string{"embedder-model", "not a model name"}},
		{"EmbedderTimeoutTooShort", []string{"--embedder-url", "http://h:1", "--embedder-model", "m", "--embedder-timeout", "1ms"}, nil, []string{"embedder-timeout", "100ms..10m"}},
		{"EmbedderQueryTimeoutTooLong", nil, map[string]string{"KURA_EMBEDDER_URL": "http://h:1", "KURA_EMBEDDER_MODEL": "m", "KURA_EMBEDDER_QUERY_TIMEOUT": "2m"}, []string{"embedder-query-timeout", "10ms..1m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := daemon.LoadConfig(tt.args, env(tt.env), devNull(t))
			if err == nil {
				t.Fatalf("got nil error, want one containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestConfig_Embedder(t *testing.T) {
	t.Parallel()
	c, _, err := daemon.LoadConfig([]string{"--embedder-url", " http://127.0.0.1:11434/v1 "}, env(map[string]string{
		"KURA_EMBEDDER_MODEL": "all-minilm", "KURA_EMBEDDER_TOKEN": "sk-1", "KURA_EMBEDDER_TIMEOUT": "5s"}), devNull(t))
	if err != nil {
		t.Fatal(err)
	}
	if c.EmbedderURL != "http://127.0.0.1:11434/v1" || c.EmbedderModel != "all-minilm" || c.EmbedderToken != "sk-1" ||
		c.EmbedderTimeout != 5*time.Second || c.EmbedderQueryTimeout != 2*time.Second {
		t.Fatalf("loaded %q %q %q %s %s", c.EmbedderURL, c.EmbedderModel, c.EmbedderToken, c.EmbedderTimeout, c.EmbedderQueryTimeout)
	}
	// Nothing set is no embedder, and valid.
	c, _, err = daemon.LoadConfig(nil, env(nil), devNull(t))
	if err != nil || c.EmbedderURL != "" {
		t.Fatalf("default: %q, %v", c.EmbedderURL, err)
	}
}

func TestConfig_InvalidConfigFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		lines []string
		want  []string // the path is checked separately
	}{
		{"UnknownKey", []string{"# c", "KURA_DATA_DIR=/d", "KURA_BOGUS=1"}, []string{":3:", "unknown setting KURA_BOGUS"}},
		{"FlagNameAsKey", []string{"data-dir=/d"}, []string{":1:", "unknown setting data-dir"}},
		{"LowercaseKey", []string{"", "kura_data_dir=/d"}, []string{":2:", "unknown setting"}},
		{"NoEquals", []string{"KURA_DATA_DIR /d"}, []string{":1:", "KEY=value"}},
		{"BadValue", []string{"", "", "", "KURA_MAX_BODY_BYTES=big"}, []string{":4:", "max-body-bytes", "not an integer"}},
		{"BadDuration", []string{"KURA_SHUTDOWN_TIMEOUT=soon"}, []string{":1:", "shutdown-timeout"}},
		{"InvalidAfterLoad", []string{"KURA_HTTP_ADDR=0.0.0.0:7700"}, []string{"http-addr", "loopback"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeConfigFile(t, tt.lines...)
			_, _, err := daemon.LoadConfig([]string{"--config", file}, env(nil), devNull(t))
			if err == nil {
				t.Fatalf("got nil error, want one containing %q", tt.want)
			}
			want := tt.want
			if strings.HasPrefix(want[0], ":") {
				want = append([]string{file + want[0]}, want[1:]...)
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestConfig_ValidBoundaries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
	}{
		{"MaxBodyMin", []string{"--max-body-bytes", "1024"}},
		{"MaxBodyMax", []string{"--max-body-bytes", fmt.Sprint(1 << 30)}},
		{"WriterBatchMin", []string{"--writer-max-batch", "1"}},
		{"ReadPoolMax", []string{"--read-pool", "64"}},
		{"PortZero", []string{"--http-addr", "127.0.0.1:0", "--nats-addr", "127.0.0.1:0"}},
		{"Localhost", []string{"--http-addr", "localhost:1"}},
		{"IPv6Loopback", []string{"--nats-addr", "[::1]:4222"}},
		{"Loopback127Net", []string{"--http-addr", "127.1.2.3:7700"}},
		{"SynchronousLowercase", []string{"--synchronous", "normal"}},
		{"LogDebugJSON", []string{"--log-level", "debug", "--log-format", "json"}},
		{"DefaultProject64", []string{"--default-project", strings.Repeat("p", 64)}},
		{"RecordTypesEmpty", []string{"--record-types", " , "}},
		{"TimeoutsMin", []string{"--http-read-header-timeout", "100ms", "--http-read-timeout", "100ms", "--http-write-timeout", "100ms", "--http-idle-timeout", "100ms"}},
		{"TimeoutsMax", []string{"--http-read-header-timeout", "24h", "--http-read-timeout", "24h", "--http-write-timeout", "24h", "--http-idle-timeout", "24h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := daemon.LoadConfig(tt.args, env(nil), devNull(t)); err != nil {
				t.Errorf("got error %v, want nil", err)
			}
		})
	}
}

// TestConfig_SynchronousNormalized checks that a lowercase mode comes back
// the way Validate writes it.
func TestConfig_SynchronousNormalized(t *testing.T) {
	t.Parallel()
	c, _, err := daemon.LoadConfig([]string{"--synchronous", "normal"}, env(nil), devNull(t))
	if err != nil {
		t.Fatalf("got error %v, want nil", err)
	}
	if c.Synchronous != "NORMAL" {
		t.Errorf("got Synchronous %q, want %q", c.Synchronous, "NORMAL")
	}
}

func TestConfig_ValidateNamesField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		mut  func(*daemon.Config)
		want string
	}{
		{"DataDir", func(c *daemon.Config) { c.DataDir = "" }, "data-dir"},
		{"HTTPAddr", func(c *daemon.Config) { c.HTTPAddr = "10.0.0.1:80" }, "http-addr"},
		{"NATSAddr", func(c *daemon.Config) { c.NATSAddr = "nope" }, "nats-addr"},
		{"Synchronous", func(c *daemon.Config) { c.Synchronous = "OFF" }, "synchronous"},
		{"MaxBodyBytes", func(c *daemon.Config) { c.MaxBodyBytes = 0 }, "max-body-bytes"},
		{"WriterMaxBatch", func(c *daemon.Config) { c.WriterMaxBatch = -1 }, "writer-max-batch"},
		{"ReadPool", func(c *daemon.Config) { c.ReadPool = 0 }, "read-pool"},
		{"DefaultProject", func(c *daemon.Config) { c.DefaultProject = "A" }, "default-project"},
		{"RecordTypes", func(c *daemon.Config) { c.RecordTypes = []string{""} }, "record-types"},
		{"ShutdownTimeout", func(c *daemon.Config) { c.ShutdownTimeout = 0 }, "shutdown-timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := daemon.DefaultConfig()
			tt.mut(&c)
			err := c.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), tt.want+":") {
				t.Errorf("got %v, want an error starting %q", err, tt.want+":")
			}
		})
	}
}

// FuzzConfigFile feeds arbitrary config files to LoadConfig: it must never
// panic, and whatever it accepts must pass Validate again.
func FuzzConfigFile(f *testing.F) {
	for _, s := range []string{
		"",
		"# only a comment\n\n",
		"KURA_DATA_DIR=/d\nKURA_HTTP_ADDR=127.0.0.1:0\n",
		"KURA_SYNCHRONOUS=\"normal\"\nKURA_MAX_BODY_BYTES=2048\n",
		"KURA_RECORD_TYPES=a.b, c.d,,\n",
		"KURA_SHUTDOWN_TIMEOUT='1m30s'\nKURA_WRITER_MAX_BATCH=9\n",
		"KURA_HTTP_ADDR=0.0.0.0:1\n",
		"KURA_BOGUS=1\n",
		"no equals sign\n",
		"KURA_CONFIG=/x\r\nKURA_LOG_LEVEL=WARN\r\n",
		"=\n\"\n'",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	out, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		f.Fatal(err)
	}
	defer out.Close()
	noEnv := env(nil)
	n := 0
	f.Fuzz(func(t *testing.T, b []byte) {
		n++
		path := filepath.Join(dir, fmt.Sprintf("c%d.conf", n))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(path)
		c, _, err := daemon.LoadConfig([]string{"--config", path}, noEnv, out)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("LoadConfig accepted %q but Validate says %v", b, err)
		}
		if c.ConfigFile != path {
			t.Fatalf("got ConfigFile %q, want %q", c.ConfigFile, path)
		}
		if c.KeyFile == "" {
			t.Fatal("got empty KeyFile from an accepted config, want a path")
		}
	})
}
