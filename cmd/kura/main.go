// Command kura is the command-line client of kurad: it writes and reads
// records, ledgers, sessions and turns, verifies them, exports and imports
// sessions and shows what the daemon knows, over the HTTP API through the Go
// client package.
//
// Usage:
//
//	kura [--json] [--url URL] <command> [arguments and flags]
//	kura --version
//
// KURA_URL (default http://127.0.0.1:7700) names the daemon and KURA_TOKEN
// carries the bearer token. Run "kura help" for the commands.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kura"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // the server said no, or a verification failed
	exitUsage = 2 // the command line is wrong
)

// cli is what every command runs with.
type cli struct {
	client *client.Client
	stdin  io.Reader
	// stdout and stderr escape what a terminal would act on (termsafe.go);
	// data is the untouched stdout, for the outputs that are data rather
	// than text: an export's stream, the MCP protocol.
	stdout io.Writer
	stderr io.Writer
	data   io.Writer
	json   bool // --json: print the server's JSON instead of human text
	// env reads the environment (os.Getenv; tests pass their own), for
	// KURA_STATE_DIR and the places it defaults to.
	env func(string) string
}

// command is one row of the command table.
type command struct {
	name    string
	args    string // synopsis after the name, for help
	summary string
	// setup registers the command's own flags on fs and returns the function
	// that runs the command once fs has been parsed; args are the positional
	// arguments. fs is handed over so that a command can tell a flag set to
	// its zero value from one left out (fs.Visit).
	setup func(fs *flag.FlagSet) func(ctx context.Context, c *cli, args []string) error
}

// commandTable lists every command, in the order help shows them. It is a
// function rather than a variable because help reads it. A name of two words
// ("turn open") is a subcommand of a group ("turn"): run takes the word after
// the group as the subcommand, flags in front of it allowed. Each command's
// setup function lives in the file of its noun (turn.go, memory.go, kb.go...).
func commandTable() []command {
	return []command{
		{"put", "[--type T --author A] [--content JSON] [--meta k=v]... [--stdin | -]", "write a record (or a batch from stdin)", setupPut},
		{"show", "<record-id | record-hash>", "show a record", setupShow},
		{"redact", "<record> --reason R", "drop a record's content for good (admin); its hashes stay and every ledger still verifies", setupRedact},
		{"ledger", "<ledger-id> [--records]", "show a ledger and its record ids (--records: the records)", setupLedger},
		{"ledger new", "[--label L] [--parent ID]... [<record-id>...]", "seal a new signed ledger over existing records, in the order given (none: an empty ledger)", setupLedgerNew},
		{"verify", "<ledger | session> [--local] [--expect-head-hash H] [--no-state] [--accept-origin ORIGIN] | --pubkey KEY [--witness-key VKEY]... <export-file | ->", "verify a ledger or a session's chain and that kurad's log extends the checkpoint kept from last time (--pubkey: an export, offline); exit 1 when it does not verify", setupVerify},
		{"diff", "<ledger-a> <ledger-b>", "records added and removed from ledger a to ledger b", setupDiff},
		{"log", "<session> [--limit N]", "list a session's ledgers from its head, following first parents", setupLog},
		{"log checkpoint", "", "show kurad's current log checkpoint, its signature checked", setupLogCheckpoint},
		{"log prove", "<seq | ledger:ID>", "prove an event (or a ledger's ledger.written event) is in kurad's log, checked against the current checkpoint", setupLogProve},
		{"log consistency", "<old> [<new>]", "prove the log at size old (or a checkpoint file) is a prefix of the log at size new (default: now)", setupLogConsistency},
		{"session new", "<project> <name> [--scope S] [--from-ledger ID]", "create a session (forked from a ledger with --from-ledger)", setupSessionNew},
		{"session show", "<session>", "show a session and its head", setupSessionShow},
		{"session list", "[--project P] [--limit N] [--cursor C]", "list sessions", setupSessionList},
		{"session reflog", "<session>", "list every move of a session's head, oldest first", setupSessionReflog},
		{"turn open", "<session> --instruction TEXT [--author A] [--context-record ID]... [--dispatch T] [--deadline SECONDS]", "open a turn: build its context ledger and move the head to it", setupTurnOpen},
		{"turn append", "<turn> [--epoch N] (--type T --author A --content JSON | --record-id ID... | --stdin | -)", "append records to a turn's output", setupTurnAppend},
		{"turn close", "<turn> [--epoch N] [--status complete|failed]", "close a turn: seal its output ledger and move the head to it", setupTurnClose},
		{"turn show", "<turn>", "show a turn", setupTurnShow},
		{"turn claim", "<turn> [--worker W] [--lease SECONDS]", "claim a turn (as yourself unless an admin names --worker); prints the epoch later writes must carry", setupTurnClaim},
		{"turn renew", "<turn> --epoch N [--lease SECONDS]", "extend a worker's claim on a turn", setupTurnRenew},
		{"turn list", "[--session S] [--state STATE] [--limit N] [--cursor C]", "list turns", setupTurnList},
		{"trace", "<scope> <ref> [--direction backward|forward|both] [--depth N]", "show where a memory or record came from and what was derived from it, as a tree", setupTrace},
		{"memory put", "<scope> --kind K [--id ID] [--title T] [--summary S] [--lifecycle L] [--authority A] [--confidence C] [--target-file F]... [--owner O] [--source-type T] [--derived-from REF]... [--meta k=v]... [--reason R] [--stdin | -]", "write a memory node, or a new version of one (a batch {\"nodes\":[...]} from stdin)", setupMemoryPut},
		{"memory get", "<scope> <ref> [--as-of TIME]", "show a memory node (the version current at --as-of)", setupMemoryGet},
		{"memory list", "<scope> [--kind K] [--lifecycle L] [--authority A] [--owner O] [--min-confidence C] [--updated-since T] [--limit N] [--cursor C]", "list a scope's memory nodes", setupMemoryList},
		{"memory history", "<scope> <ref>", "list every version of a node and its confidence history", setupMemoryHistory},
		{"memory transition", "<scope> <ref> <lifecycle> --reason R [--authority A]", "move a node to another lifecycle (never deletes)", setupMemoryTransition},
		{"memory revise", "<scope> <ref> [--kind K] [--id ID] [node flags as for put] [--stdin | -]", "replace a node by a new one that supersedes it; the old one is retired", setupMemoryRevise},
		{"memory relate", "<scope> <from> <kind> <to> [--id ID] [--confidence C] [--reason R]...", "relate two nodes of a scope (supports, contradicts, supersedes...)", setupMemoryRelate},
		{"memory relations", "<scope> [--ref R] [--kind K] [--limit N] [--cursor C]", "list a scope's relations", setupMemoryRelations},
		{"memory feedback", "<scope> <ref> <outcome> --author A [--note N]", "report an outcome (positive, negative, neutral) on a node", setupMemoryFeedback},
		{"memory search", "<scope> [query words...] [--kind K] [--lifecycle L] [--authority A] [--target-file F] [--owner O] [--min-confidence C] [--limit N] [--mode lexical|semantic|hybrid]", "search a scope's memory, best first, with the reasons of each score", setupMemorySearch},
		{"context preview", "<scope> [--query Q] [--budget BYTES] [--as-of TIME] [--kind K]... [--max-per-bucket N] [--target-file F]... [--no-redact]", "show which memory an agent may use now, inspect, rehydrate or not use, and why; stores nothing", setupContextPreview},
		{"context compile", "<scope> [--query Q] [--budget BYTES] [--as-of TIME] [--kind K]... [--max-per-bucket N] [--target-file F]... [--no-redact] [--idempotency-key K]", "compile a scope's memory into a bundle kurad keeps as the receipt; checks its digest", setupContextCompile},
		{"kb put", "<kb> <identifier> (--value V | --value-file F) [--key K]... [--scope S]", "create or replace the entry with this exact identifier in a knowledge base", setupKBPut},
		{"kb update", "<kb> <identifier> [--value V | --value-file F] [--key K]... [--no-keys] [--scope S]", "change an entry's value, keys or both (a new version)", setupKBUpdate},
		{"kb get", "<kb> <identifier> [--scope S]", "show the entry with exactly this identifier", setupKBGet},
		{"kb query", "<kb> [--identifier WORDS] [--key K] [--any-keys a,b] [--all-keys a,b] [--exact-identifier I] [--scope S] [--limit N] [--cursor C]", "list the entries matching every condition given (all entries without one)", setupKBQuery},
		{"kb lookup", "<kb> <question...> [--scope S] [--limit N] [--mode ranked|strict]", "print what a model's knowledge tool gets for a question (identifier words, else a key, then the best-ranked others)", setupKBLookup},
		{"kb search", "<kb> <question...> [--scope S] [--limit N]", "rank a knowledge base's entries for a question in any words, best first, with what matched", setupKBSearch},
		{"kb delete", "<kb> (<identifier> | --all) [--scope S]", "delete an entry, or every entry of a scope with --all (the history is kept)", setupKBDelete},
		{"kb stats", "<kb> [--scope S] [--limit N] [--cursor C]", "count a scope's entries and list its identifiers", setupKBStats},
		{"kb history", "<kb> <identifier> [--scope S] [--limit N] [--cursor C]", "list every version of an identifier, deletes included", setupKBHistory},
		{"token new", "[--identity agent:x] [--role reader|writer|admin] [--scopes a,b|*] [--projects p|*]", "print a fresh random token once and the tokens file line holding its SHA-256", setupTokenNew},
		{"export", "<session> --format=git|jsonl [--out FILE]", "export a session's ledgers and records as a git fast-import stream or JSON lines", setupExport},
		{"import", "[FILE | -]", "import a JSON lines export (kura export --format=jsonl) into kurad", setupImport},
		{"events", "[--after N] [--limit N] [--type T]... [--project P] [--follow]", "list events after a seq, or follow them as they commit (--follow: from now on unless --after is given)", setupEvents},
		{"backup", "[<dir>]", "make kurad write a consistent snapshot and a signed manifest into a new directory inside its backup directory (--backup-dir): dir, relative to it or absolute inside it, or one named from the time", setupBackup},
		{"restore", "<backup-dir> --data-dir DIR [--key-file F | --public-key K] [--force]", "check a backup, restore it into a stopped kurad's data directory and verify every session and ledger", setupRestore},
		{"compact-events", "<before-seq>", "remove published events older than a seq from the event log; verification does not depend on them", setupCompactEvents},
		{"mcp", "", "serve Kura's memory as MCP tools over stdio, for agents that spawn their tools", setupMCP},
		{"nats-user new", "<name> [projects]", "print a new random NATS password once and its users-file line (bcrypt hash; projects a,b or *)", setupNATSUserNew},
		{"witness", "--state DIR [--listen ADDR] --log URL[=VKEY]... [--token T] [--poll 1s] [--nats URL] [--name N]", "run a witness: follow kurad logs, cosign each checkpoint consistent with the last, refuse (and alert on) any other", setupWitness},
		{"info", "", "show what kurad says about itself", setupInfo},
		{"health", "[--ready]", "exit 0 when kurad is alive (--ready: ready to serve), 1 otherwise", setupHealth},
		{"version", "", "print the version of this kura", setupVersion},
		{"help", "[command]", "show help for kura or a command", setupHelp},
	}
}

func lookupCommand(name string) (command, bool) {
	for _, c := range commandTable() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// groupCommands returns the subcommands of group ("turn" gives "turn open",
// "turn append"...), none when group is not one.
func groupCommands(group string) []command {
	var out []command
	for _, c := range commandTable() {
		if strings.HasPrefix(c.name, group+" ") {
			out = append(out, c)
		}
	}
	return out
}

func printGroupUsage(w io.Writer, group string) {
	fmt.Fprintf(w, "usage: kura %s <command> [arguments and flags]\n\ncommands:\n", group)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range groupCommands(group) {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
}

// globalFlags are accepted before and after the command name.
type globalFlags struct {
	json bool
	url  string
}

func (g *globalFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&g.json, "json", false, "print the server's JSON answer")
	fs.StringVar(&g.url, "url", "", "kurad base URL (default $KURA_URL or "+client.DefaultURL+")")
}

// usageError is a command line the command cannot run with; run prints it
// with a hint and exits with exitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitError ends a command with a code after it has printed its output
// itself, such as a verification that failed.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// run is the whole CLI minus the process: tests drive it in-process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, env func(string) string) int {
	data := stdout
	safeErr := newSafeWriter(stderr, false)
	defer safeErr.Flush()
	stderr = safeErr
	var g globalFlags
	globals := flag.NewFlagSet("kura", flag.ContinueOnError)
	g.register(globals)
	name, rest := splitCommand(globals, args)
	if name == "" && hasVersionFlag(args) {
		// "kura --version", as kurad has it: the version command, with
		// whatever global flags came along (--json).
		name, rest = "version", withoutVersionFlag(args)
	}
	if name == "" {
		// "kura --help" asks for help; "kura" or "kura --json" is a mistake.
		for _, a := range args {
			if a == "-h" || a == "-help" || a == "--help" {
				printUsage(stdout)
				return exitOK
			}
		}
		printUsage(stderr)
		return exitUsage
	}
	cmd, ok := lookupCommand(name)
	if len(groupCommands(name)) > 0 {
		// A group ("turn"), or a command that also has subcommands
		// ("ledger <id>" and "ledger new"): the next word picks the
		// subcommand when it names one, else a command stays itself.
		group := name
		sub, subRest := splitCommand(globals, rest)
		if sc, found := lookupCommand(group + " " + sub); sub != "" && found {
			cmd, ok, name, rest = sc, true, group+" "+sub, subRest
		} else if !ok {
			if sub == "" {
				for _, a := range rest {
					if a == "-h" || a == "-help" || a == "--help" {
						printGroupUsage(stdout, group)
						return exitOK
					}
				}
				fmt.Fprintf(stderr, "kura %s: a command is required\n", group)
				printGroupUsage(stderr, group)
				return exitUsage
			}
			name = group + " " + sub
		}
	}
	if !ok {
		fmt.Fprintf(stderr, "kura: %s\n", unknownCommand(name))
		return exitUsage
	}

	fs := flag.NewFlagSet("kura "+name, flag.ContinueOnError)
	// The flag package's own messages are replaced by ours, which name the
	// command and go to the right stream.
	fs.SetOutput(io.Discard)
	g.register(fs)
	runCmd := cmd.setup(fs)
	ordered, err := reorderArgs(fs, rest)
	if err == nil {
		err = fs.Parse(ordered)
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		printCommandUsage(stdout, cmd, fs)
		return exitOK
	case err != nil:
		fmt.Fprintf(stderr, "kura %s: %v\n", name, err)
		printCommandUsage(stderr, cmd, fs)
		return exitUsage
	}

	base := g.url
	if base == "" {
		base = env("KURA_URL")
	}
	var opts []client.Option
	if tok := env("KURA_TOKEN"); tok != "" {
		opts = append(opts, client.WithToken(tok))
	}
	safeOut := newSafeWriter(stdout, g.json)
	defer safeOut.Flush()
	c := &cli{client: client.New(base, opts...), stdin: stdin, stdout: safeOut, stderr: stderr, data: data, json: g.json, env: env}
	return reportError(stderr, cmd, c.client.BaseURL(), runCmd(ctx, c, fs.Args()))
}

// hasVersionFlag reports whether args hold --version (or -version) before
// any "--".
func hasVersionFlag(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "-version" || a == "--version" {
			return true
		}
	}
	return false
}

func withoutVersionFlag(args []string) []string {
	var out []string
	for _, a := range args {
		if a != "-version" && a != "--version" {
			out = append(out, a)
		}
	}
	return out
}

// reportError prints err the way the CLI contract says and returns the exit
// code: "kura: <code>: <message>" for the server's errors. base is the URL
// the command talked to, for a kurad it could not reach.
func reportError(stderr io.Writer, cmd command, base string, err error) int {
	if err == nil {
		return exitOK
	}
	var ue *usageError
	var ee *exitError
	var ke *kura.Error
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "kura %s: %s\nusage: kura %s %s\n", cmd.name, ue.msg, cmd.name, cmd.args)
		return exitUsage
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ke):
		fmt.Fprintf(stderr, "kura: %s: %s\n", ke.Code, ke.Message)
		if len(ke.Details) > 0 {
			b, _ := json.Marshal(ke.Details)
			fmt.Fprintf(stderr, "kura: details: %s\n", b)
		}
		return exitFail
	case unreachable(err) != "":
		fmt.Fprintf(stderr, "kura: cannot reach kurad at %s (%s): is kurad running? (KURA_URL or --url sets the address)\n", base, unreachable(err))
		return exitFail
	default:
		fmt.Fprintf(stderr, "kura: %v\n", err)
		return exitFail
	}
}

// unreachable says why no connection to kurad could be made ("connection
// refused"), or "" when err is not that. A refused connection is what a
// newcomer sees first, before kurad is started, and the transport's own
// words ("dial tcp 127.0.0.1:7700: connect: ...") do not say what to do.
func unreachable(err error) string {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return "connection refused"
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" && oe.Err != nil {
		var dns *net.DNSError
		if errors.As(oe.Err, &dns) {
			return "cannot resolve " + dns.Name
		}
		return oe.Err.Error()
	}
	return ""
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `kura talks to kurad, Kura's memory daemon.

usage: kura [--json] [--url URL] <command> [arguments and flags]

commands:
`)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range commandTable() {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprint(w, `
global flags (before or after the command):
  --json      print the server's JSON answer, indented
  --url URL   kurad base URL
  --version   print the version of this kura (as kura version)

environment:
  KURA_URL    kurad base URL (default `+client.DefaultURL+`)
  KURA_TOKEN  bearer token sent with every request
  KURA_STATE_DIR  where kura verify keeps the last verified log checkpoint
              per origin (default $XDG_STATE_HOME/kura, else ~/.local/state/kura)

Flags may come before or after arguments. Exit status: 0 success, 1 the
server refused or a verification failed, 2 bad command line.
Run 'kura help <command>' for a command's flags.
`)
}

func printCommandUsage(w io.Writer, cmd command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: kura %s %s\n", cmd.name, cmd.args)
	// A command that is also a group ("ledger" and "ledger new") shows
	// its subcommands' synopses too, or they are found only by luck.
	for _, sc := range groupCommands(cmd.name) {
		fmt.Fprintf(w, "       kura %s %s\n", sc.name, sc.args)
	}
	fmt.Fprintf(w, "\n%s\n\nflags:\n", cmd.summary)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

func setupHelp(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(_ context.Context, c *cli, args []string) error {
		switch len(args) {
		case 0:
			printUsage(c.stdout)
			return nil
		case 1, 2:
			name := strings.Join(args, " ")
			cmd, ok := lookupCommand(name)
			if !ok && len(groupCommands(name)) > 0 {
				printGroupUsage(c.stdout, name)
				return nil
			}
			if !ok {
				return usagef("%s", unknownCommand(name))
			}
			cfs := flag.NewFlagSet("kura "+cmd.name, flag.ContinueOnError)
			var g globalFlags
			g.register(cfs)
			cmd.setup(cfs)
			printCommandUsage(c.stdout, cmd, cfs)
			return nil
		default:
			return usagef("help takes at most one command (two words for a subcommand: help turn open)")
		}
	}
}

// cliVersion is the stamped version, else the module version Go recorded,
// else "dev".
func cliVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func setupVersion(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(_ context.Context, c *cli, args []string) error {
		if len(args) != 0 {
			return usagef("version takes no arguments")
		}
		if c.json {
			return c.printJSON(map[string]string{"version": cliVersion(), "go": runtime.Version()})
		}
		fmt.Fprintf(c.stdout, "kura %s (%s)\n", cliVersion(), runtime.Version())
		return nil
	}
}

// printRaw prints a JSON answer exactly as the server sent it, indented.
func (c *cli) printRaw(raw json.RawMessage) error {
	var buf bytes.Buffer
	// The server ends its answers with a newline; one is added back below.
	raw = bytes.TrimSpace(raw)
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		buf.Reset()
		buf.Write(raw) // not JSON after all: print it as it came
	}
	buf.WriteByte('\n')
	_, err := c.stdout.Write(buf.Bytes())
	return err
}

// printJSON prints v as indented JSON, for answers the CLI puts together
// itself from several calls.
func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// sortedKeys returns the keys of m in order, for stable human output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
