package main

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/keys"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/store"
)

// kura restore works on the files, not through kurad: it runs while kurad
// is stopped, which no API call could. Like kurad it reads KURA_DATA_DIR,
// KURA_DATABASE_URL and KURA_KEY_FILE, so that the restored files (or
// database) are where kurad will look.

func setupBackup(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) > 1 {
			return usagef("backup takes at most one directory, inside kurad's backup directory (none: kurad names one from the time)")
		}
		// The path is kurad's to resolve, on its own host: a relative one
		// is taken inside its backup directory.
		dir := ""
		if len(args) == 1 {
			dir = args[0]
		}
		var raw json.RawMessage
		b, err := c.client.Backup(client.WithRawResponse(ctx, &raw), dir)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		fmt.Fprintf(c.stdout, "backup written to %s\n", b.Path)
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		printManifest(tw, &b.BackupManifest)
		return tw.Flush()
	}
}

func printManifest(tw *tabwriter.Writer, m *kura.BackupManifest) {
	fmt.Fprintf(tw, "taken at\t%s\n", m.CreatedAt)
	fmt.Fprintf(tw, "schema version\t%d\n", m.SchemaVersion)
	fmt.Fprintf(tw, "last event seq\t%d\n", m.LastEventSeq)
	if m.EventsCompactedThrough > 0 {
		fmt.Fprintf(tw, "events compacted through\t%d\n", m.EventsCompactedThrough)
	}
	for _, k := range sortedKeys(m.Counts) {
		fmt.Fprintf(tw, "%s\t%d\n", k, m.Counts[k])
	}
	fmt.Fprintf(tw, "public key\t%s\n", m.PublicKey)
	for _, f := range m.Files {
		fmt.Fprintf(tw, "file %s\t%d bytes, sha256 %s\n", f.Name, f.Bytes, f.SHA256)
	}
}

func setupRestore(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	dataDir := fs.String("data-dir", "", "the data directory to restore into, with kurad stopped (default $KURA_DATA_DIR)")
	keyFile := fs.String("key-file", "", "the signing key file the restored kurad will use (default $KURA_KEY_FILE, else <data-dir>/kurad.key)")
	pubKey := fs.String("public-key", "", "verify against this public key (ed25519:<hex>, as kura info shows it) instead of reading the key file")
	force := fs.Bool("force", false, "restore into a non-empty data directory, moving what it holds aside into pre-restore-<time>/ (nothing is deleted)")
	databaseURL := fs.String("database-url", "", "restore a PostgreSQL store's backup into this empty database, postgres://user@host/db (default $KURA_DATABASE_URL)")
	pgRestore := fs.String("pg-restore", "", "the pg_restore to run for --database-url (default: pg_restore on PATH, else the newest /usr/lib/postgresql/*/bin/pg_restore)")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("restore takes one backup directory")
		}
		if *keyFile != "" && *pubKey != "" {
			return usagef("give --key-file or --public-key, not both")
		}
		dbURL := *databaseURL
		if dbURL == "" {
			dbURL = os.Getenv("KURA_DATABASE_URL")
		}
		dir := *dataDir
		if dir == "" {
			dir = os.Getenv("KURA_DATA_DIR")
		}
		if dbURL != "" {
			return restoreDatabase(ctx, c, args[0], dbURL, dir, *keyFile, *pubKey, *pgRestore)
		}
		if dir == "" {
			return usagef("--data-dir (or KURA_DATA_DIR) is required: the data directory kurad will run on (or --database-url for a PostgreSQL store)")
		}
		dir, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		if url := runningKurad(ctx, dir); url != "" {
			return fmt.Errorf("restore: a kurad is running on %s (it answers at %s); stop it before restoring", dir, url)
		}
		pub, keep, err := restoreKey(dir, *keyFile, *pubKey)
		if err != nil {
			return err
		}
		keep = append(keep, backupDirEntry(dir)...)
		rep, err := store.Restore(ctx, store.RestoreOptions{BackupDir: args[0], DataDir: dir, PublicKey: pub, Force: *force, Keep: keep})
		return reportRestore(c, rep, err)
	}
}

// restoreDatabase restores a PostgreSQL store's backup into the empty
// database at dbURL. The data directory, when given, only locates the
// key file, as it does for kurad.
func restoreDatabase(ctx context.Context, c *cli, backup, dbURL, dataDir, keyFile, pubKey, pgRestore string) error {
	if !strings.HasPrefix(dbURL, "postgres://") && !strings.HasPrefix(dbURL, "postgresql://") {
		return usagef("--database-url (or KURA_DATABASE_URL) must be a postgres:// or postgresql:// URL")
	}
	if dataDir == "" && keyFile == "" && pubKey == "" && os.Getenv("KURA_KEY_FILE") == "" {
		return usagef("name the signing key the restored kurad will use: --key-file (or KURA_KEY_FILE), --public-key, or --data-dir holding kurad.key")
	}
	var err error
	if dataDir != "" {
		if dataDir, err = filepath.Abs(dataDir); err != nil {
			return err
		}
	}
	pub, _, err := restoreKey(dataDir, keyFile, pubKey)
	if err != nil {
		return err
	}
	rep, err := store.Restore(ctx, store.RestoreOptions{BackupDir: backup, DatabaseURL: dbURL, PGRestore: pgRestore, PublicKey: pub})
	return reportRestore(c, rep, err)
}

// reportRestore prints a restore's report (when there is one) as JSON or
// text and returns the restore's error, or the printing's.
func reportRestore(c *cli, rep *kura.RestoreReport, err error) error {
	if rep == nil {
		return err
	}
	if c.json {
		if perr := c.printJSON(rep); perr != nil && err == nil {
			err = perr
		}
		return err
	}
	printRestore(c, rep, err == nil)
	return err
}

func printRestore(c *cli, rep *kura.RestoreReport, done bool) {
	if done {
		fmt.Fprintf(c.stdout, "restored %s into %s\n", rep.Backup, rep.Database)
	} else {
		fmt.Fprintf(c.stdout, "did not restore %s: it does not verify\n", rep.Backup)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	if rep.MovedAside != "" {
		fmt.Fprintf(tw, "moved aside\t%s\n", rep.MovedAside)
	}
	printManifest(tw, rep.Manifest)
	if v := rep.Verification; v != nil {
		fmt.Fprintf(tw, "integrity\t%s\n", v.Integrity)
		fmt.Fprintf(tw, "sessions verified\t%d (%d failing)\n", v.Sessions, len(v.FailedSessions))
		fmt.Fprintf(tw, "ledgers verified\t%d (%d failing, %d records checked)\n", v.Ledgers, len(v.FailedLedgers), v.Records)
		for _, id := range v.FailedSessions {
			fmt.Fprintf(tw, "failing session\t%s\n", id)
		}
		for _, id := range v.FailedLedgers {
			fmt.Fprintf(tw, "failing ledger\t%s\n", id)
		}
	}
	tw.Flush()
	if done && rep.DataDir == "" {
		fmt.Fprintf(c.stdout, "start kurad with --database-url %s and the key of %s\n", rep.Database, rep.Manifest.PublicKey)
	} else if done {
		fmt.Fprintf(c.stdout, "start kurad on %s with the key of %s\n", rep.DataDir, rep.Manifest.PublicKey)
		if os.Geteuid() == 0 {
			// kura.db is root's now, mode 0600: a kurad running as its own
			// user could not open it.
			fmt.Fprintf(c.stdout, "restored as root: if kurad runs as another user, give it the file first (chown kura:kura %s)\n", rep.Database)
		}
	}
}

// restoreKey finds the public key a restore verifies against: the one the
// restored kurad will sign and verify with. It also names the entries of
// dataDir a restore must leave alone (the key file, when it lives there).
func restoreKey(dataDir, keyFile, pubKey string) (ed25519.PublicKey, []string, error) {
	path := keyFile
	if path == "" {
		path = os.Getenv("KURA_KEY_FILE")
	}
	if path == "" {
		path = filepath.Join(dataDir, "kurad.key")
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, err
	}
	var keep []string
	if filepath.Dir(path) == dataDir {
		keep = append(keep, filepath.Base(path))
	}
	if pubKey != "" {
		b, err := hex.DecodeString(strings.TrimPrefix(pubKey, "ed25519:"))
		if err != nil || len(b) != ed25519.PublicKeySize {
			return nil, nil, usagef("--public-key must be ed25519:<64 hex digits>, as kura info shows it")
		}
		return ed25519.PublicKey(b), keep, nil
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		// Without its key the restored kurad would make a new one, and
		// every signature in the backup would stop verifying.
		return nil, nil, fmt.Errorf("restore: no signing key at %s; a backup never holds kurad's private key: put the original key file there (or name it with --key-file), or pass --public-key to verify against the backup's key", path)
	}
	priv, err := keys.LoadOrCreate(path)
	if err != nil {
		return nil, nil, fmt.Errorf("restore: %w", err)
	}
	return priv.Public().(ed25519.PublicKey), keep, nil
}

// backupDirEntry names kurad's backup directory (KURA_BACKUP_DIR, default
// <data-dir>/backups) when it is an entry of dataDir: a restore leaves it
// where it is rather than taking it for old state to move aside.
func backupDirEntry(dataDir string) []string {
	dir := os.Getenv("KURA_BACKUP_DIR")
	if dir == "" {
		dir = filepath.Join(dataDir, "backups")
	}
	dir, err := filepath.Abs(dir)
	if err != nil || filepath.Dir(dir) != dataDir {
		return nil
	}
	return []string{filepath.Base(dir)}
}

// runningKurad returns the URL of a kurad serving dataDir, "" when none
// answers. kurad writes kurad.addr once it serves and removes it when it
// stops; a file left by a killed kurad names an address nobody answers on.
func runningKurad(ctx context.Context, dataDir string) string {
	b, err := os.ReadFile(filepath.Join(dataDir, "kurad.addr"))
	if err != nil {
		return ""
	}
	var a struct {
		HTTP string `json:"http"`
	}
	if json.Unmarshal(b, &a) != nil || a.HTTP == "" {
		return ""
	}
	url := "http://" + a.HTTP
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if client.New(url).Health(ctx) != nil {
		return ""
	}
	return url
}

func setupCompactEvents(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("compact-events takes one seq: events before it are removed")
		}
		before, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil || before <= 0 {
			return usagef("%q is not a positive event seq", args[0])
		}
		var raw json.RawMessage
		res, err := c.client.CompactEvents(client.WithRawResponse(ctx, &raw), before)
		if err != nil {
			return err
		}
		if c.json {
			return c.printRaw(raw)
		}
		if res.CompactedThrough == 0 {
			fmt.Fprintln(c.stdout, "nothing compacted")
		} else {
			fmt.Fprintf(c.stdout, "events through seq %d are compacted: %d removed now, %d in all\n", res.CompactedThrough, res.Removed, res.RemovedTotal)
		}
		if res.CompactedThrough < before-1 {
			fmt.Fprintf(c.stdout, "not through %d: only events the doorbell has published (through %d) are removed, and the newest event (%d) is always kept\n",
				before-1, res.PublishedSeq, res.LastSeq)
		}
		if res.FirstSeq > 0 {
			fmt.Fprintf(c.stdout, "the log now holds seqs %d to %d\n", res.FirstSeq, res.LastSeq)
		}
		return nil
	}
}
