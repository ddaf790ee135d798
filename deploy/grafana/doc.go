// Package grafana ships kurad's Grafana dashboard, kura-dashboard.json. The
// package's tests check that the dashboard imports as is and that every
// query in it names a metric kurad actually exports.
package grafana

import _ "embed"

// Dashboard is kura-dashboard.json, as imported into Grafana.
//
//go:embed kura-dashboard.json
var Dashboard []byte
