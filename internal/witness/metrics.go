package witness

import "github.com/prometheus/client_golang/prometheus"

// Refusal reasons, the values of kura_witness_refused_total's reason label.
const (
	reasonSmaller      = "smaller"       // the log shows fewer leaves than the witness cosigned
	reasonInconsistent = "inconsistent"  // same size, other root; or a proof that does not check
	reasonBadSignature = "bad_signature" // no pinned key of the log signs the checkpoint
	reasonBadProof     = "bad_proof"     // the consistency proof is malformed
)

// unknownOrigin labels what a log sends under an origin the witness does not
// follow yet, so that a log cannot grow the metrics without bound by
// inventing origins.
const unknownOrigin = "unknown"

type metrics struct {
	reg           *prometheus.Registry
	refused       *prometheus.CounterVec
	pollErrors    *prometheus.CounterVec
	cosigned      *prometheus.CounterVec
	originChanges *prometheus.CounterVec
	size          *prometheus.GaugeVec
	lastCosigned  *prometheus.GaugeVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kura_witness_refused_total",
			Help: "Checkpoints the witness refused to cosign, by origin and reason (smaller, inconsistent, bad_signature, bad_proof). Any increase is an alert.",
		}, []string{"origin", "reason"}),
		pollErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kura_witness_poll_errors_total",
			Help: "Polls of a log that failed before a checkpoint could be judged (unreachable, HTTP error, unparsable answer), by log URL.",
		}, []string{"log"}),
		cosigned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kura_witness_cosigned_total",
			Help: "Checkpoints cosigned, by origin.",
		}, []string{"origin"}),
		originChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kura_witness_origin_changes_total",
			Help: "Times a log URL showed a new origin (after an acknowledged rollback, or a host that started a fresh log), by log URL.",
		}, []string{"log"}),
		size: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kura_witness_checkpoint_size",
			Help: "Tree size of the latest checkpoint cosigned, by origin.",
		}, []string{"origin"}),
		lastCosigned: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kura_witness_last_cosigned_timestamp_seconds",
			Help: "Unix time of the latest cosignature, by origin.",
		}, []string{"origin"}),
	}
	m.reg.MustRegister(m.refused, m.pollErrors, m.cosigned, m.originChanges, m.size, m.lastCosigned,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) setState(st *logState) {
	m.size.WithLabelValues(st.Origin).Set(float64(st.Size))
	m.lastCosigned.WithLabelValues(st.Origin).Set(float64(st.CosignedAt.Unix()))
}
