// Package prometheus ships kurad's Prometheus alerting rules,
// kura-alerts.yml, with their promtool unit tests (kura-alerts.test.yml).
// The package's tests check that every rule names metrics a real kurad
// exports, and run promtool over both files when it is installed.
package prometheus

import _ "embed"

// Rules is kura-alerts.yml, as Prometheus loads it (rule_files).
//
//go:embed kura-alerts.yml
var Rules []byte
