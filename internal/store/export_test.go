package store

// SetReviseFault lets tests fail a revise between its steps.
func SetReviseFault(f func(step string) error) { reviseFault = f }

// Path is the database file, for tests that inspect it directly.
func (db *DB) Path() string { return db.cfg.Path }

// SetBackupHook lets tests act at the stages of a backup ("snapshot",
// "manifest").
func SetBackupHook(f func(stage string)) { backupHook = f }
