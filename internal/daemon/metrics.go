package daemon

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kura-memory/kura/internal/bus"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/store"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metric names follow kura_<subsystem>_<name>_<unit>. Labels hold only
// small closed sets (route patterns, methods, status codes, write kinds),
// never ids. internal/api adds the kura_http_* families.

// newRegistry returns the registry /metrics serves: the Go runtime and
// process collectors and kurad's own metrics.
func newRegistry(db *store.DB, dbPath string, p *bus.Publisher, b *bus.Bus) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerStoreMetrics(reg, db, dbPath)
	registerDoorbellMetrics(reg, p, b)
	if db.EmbedderInfo() != nil {
		registerEmbedMetrics(reg, db)
	}
	return reg
}

// registerEmbedMetrics exports the embedding worker's progress, when an
// embedder is configured.
func registerEmbedMetrics(reg *prometheus.Registry, db *store.DB) {
	info := func(f func(*kura.EmbedderInfo) float64) func() float64 {
		return func() float64 { return f(db.EmbedderInfo()) }
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_embed_pending", Help: "Memory nodes without a vector of the current model for their current text, as of the embedding worker's last look."},
			info(func(i *kura.EmbedderInfo) float64 { return float64(i.Pending) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kura_embed_vectors_total", Help: "Vectors the embedding worker stored since kurad started."},
			info(func(i *kura.EmbedderInfo) float64 { return float64(i.Embedded) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kura_embed_errors_total", Help: "Failed embeddings requests (the worker's, retried with backoff, and searches', answered by words)."},
			info(func(i *kura.EmbedderInfo) float64 { return float64(i.Errors) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_embed_up", Help: "1 while the embedder answered the worker's last request (or nothing was asked yet), 0 while it fails."},
			info(func(i *kura.EmbedderInfo) float64 {
				if i.State == "failing" {
					return 0
				}
				return 1
			})),
	)
}

// registerDoorbellMetrics exports the publisher's progress and the NATS
// server's client and route counts.
func registerDoorbellMetrics(reg *prometheus.Registry, p *bus.Publisher, b *bus.Bus) {
	st := p.Stats()
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kura_outbox_published_events_total", Help: "Events published on NATS by the doorbell (at least once: replays after a restart count again)."},
			func() float64 { return float64(st.Published.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kura_outbox_publish_errors_total", Help: "Failed publishes and outbox reads; the events stay in the outbox and are retried."},
			func() float64 { return float64(st.Errors.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_outbox_lag_events", Help: "Committed events not yet published (last committed seq - last published seq)."},
			func() float64 { return float64(p.Lag()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_outbox_published_seq", Help: "Seq of the newest published event."},
			func() float64 { return float64(p.PublishedSeq()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_nats_connections", Help: "Clients connected to the embedded NATS server (the doorbell's own included)."},
			func() float64 { return float64(b.NumClients()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_nats_routes", Help: "Peer kurads the embedded NATS server is connected to by routes (0 without a NATS cluster)."},
			func() float64 { return float64(b.NumRoutes()) }),
	)
}

// Histogram buckets. A batch holds 1..MaxBatch (at most 10000) jobs; a
// group commit takes from about 100µs (NORMAL, a small batch on an SSD) to
// seconds (FULL on a slow SD card under a checkpoint).
var (
	batchSizeBuckets = prometheus.ExponentialBuckets(1, 2, 11) // 1, 2, 4, ..., 1024
	commitBuckets    = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}
)

// registerStoreMetrics exports the writer's counters and histograms, the
// writes committed by kind and the database file sizes; the store itself
// knows nothing of Prometheus.
func registerStoreMetrics(reg *prometheus.Registry, db *store.DB, dbPath string) {
	st := db.Stats()
	batchSize := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kura_writer_batch_size",
		Help:    "Write requests per committed group transaction.",
		Buckets: batchSizeBuckets,
	})
	commit := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kura_writer_commit_duration_seconds",
		Help:    "Committed group transactions from BEGIN until COMMIT returned: the batch's jobs and the commit.",
		Buckets: commitBuckets,
	})
	commitSync := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kura_writer_commit_sync_duration_seconds",
		Help:    "The COMMIT statement of committed group transactions alone: writing the WAL and, with synchronous=FULL, the fsync.",
		Buckets: commitBuckets,
	})
	// On PostgreSQL the kurads on one database take turns for one write
	// lock: the sum of lock_hold over every instance, per second, is how
	// busy it is (near 1: adding kurads adds no write throughput).
	lockWait := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kura_writer_lock_wait_duration_seconds",
		Help:    "PostgreSQL only: how long committed group transactions waited for the write lock the kurads on one database share.",
		Buckets: commitBuckets,
	})
	lockHold := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kura_writer_lock_hold_duration_seconds",
		Help:    "PostgreSQL only: how long committed group transactions held the shared write lock, until COMMIT returned; no other kurad commits meanwhile.",
		Buckets: commitBuckets,
	})
	pg := db.Postgres()
	// Observe is a few atomic adds: cheap enough for the writer to call
	// before it answers the batch.
	db.OnBatch(func(bs store.BatchStats) {
		if !bs.Committed {
			return
		}
		batchSize.Observe(float64(bs.Jobs))
		commit.Observe(bs.Duration.Seconds())
		commitSync.Observe(bs.Commit.Seconds())
		if pg {
			lockWait.Observe(bs.LockWait.Seconds())
			lockHold.Observe(bs.LockHeld.Seconds())
		}
	})
	if pg {
		reg.MustRegister(lockWait, lockHold)
	}
	reg.MustRegister(
		batchSize, commit, commitSync,
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kura_writer_transactions_total", Help: "Group transactions committed by the writer."},
			func() float64 { return float64(st.Transactions.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kura_writer_jobs_total", Help: "Write requests committed by the writer (jobs / transactions = mean batch size)."},
			func() float64 { return float64(st.Jobs.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kura_writer_failed_transactions_total", Help: "Group transactions that failed as a whole (begin or commit errors)."},
			func() float64 { return float64(st.Failures.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_writer_queue_depth", Help: "Write requests waiting for the writer."},
			func() float64 { return float64(db.QueueDepth()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_events_last_seq", Help: "Sequence number of the newest committed event."},
			func() float64 { return float64(db.LastEventSeq()) }),
		writtenCollector{db: db, desc: prometheus.NewDesc("kura_store_written_total",
			"Writes committed since kurad started, by kind (records, ledgers, sessions, turns_opened, turns_closed, nodes, relations, feedback, kb_entries, bundles).",
			[]string{"kind"}, nil)},
		// Sizes are read at scrape time: a stat per scrape costs nothing
		// and is never stale.
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_store_db_size_bytes", Help: "Size of the database: the file kura.db, or on PostgreSQL the database (pg_database_size)."},
			func() float64 {
				if !db.Postgres() {
					return fileSize(dbPath)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				n, err := db.DatabaseSize(ctx)
				if err != nil {
					return 0
				}
				return float64(n)
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_store_wal_size_bytes", Help: "Size of the write-ahead log (kura.db-wal); it grows between checkpoints."},
			func() float64 { return fileSize(dbPath + "-wal") }),
		// The file system's room, for an alert well before writes fail: at
		// a full disk kurad refuses writes (507) and /readyz says degraded.
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_store_disk_free_bytes", Help: "Bytes kurad may still write on the file system holding the database (statfs f_bavail; root's reserve not counted)."},
			func() float64 { free, _ := diskSpace(filepath.Dir(dbPath)); return free }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_store_disk_size_bytes", Help: "Size of the file system holding the database."},
			func() float64 { _, size := diskSpace(filepath.Dir(dbPath)); return size }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_store_redaction_purge_pending", Help: "1 while the content of a redacted record may still be in kura.db or kura.db-wal (a reader kept the WAL from being truncated; kurad retries), else 0."},
			func() float64 {
				if db.PurgePending() {
					return 1
				}
				return 0
			}),
	)
}

// writtenCollector exports store.Written as one counter per kind, reading
// all kinds at once per scrape.
type writtenCollector struct {
	db   *store.DB
	desc *prometheus.Desc
}

func (c writtenCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c writtenCollector) Collect(ch chan<- prometheus.Metric) {
	w := c.db.Written()
	for _, kind := range store.WrittenKinds {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(w[kind]), kind)
	}
}

// diskSpace is the room left to an unprivileged writer and the size of
// the file system holding dir, in bytes; zeros if it cannot be read.
func diskSpace(dir string) (free, size float64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0
	}
	return float64(st.Bavail) * float64(st.Bsize), float64(st.Blocks) * float64(st.Bsize)
}

// fileSize is the size of path in bytes, 0 if it does not exist (the WAL
// after a truncating checkpoint).
func fileSize(path string) float64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return float64(fi.Size())
}
