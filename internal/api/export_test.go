package api

import "github.com/prometheus/client_golang/prometheus"

// AccessRuleKeys lists "METHOD pattern" of every route, for the route ×
// role matrix in auth_e2e_test.go.
func AccessRuleKeys() []string {
	s := New(Config{Registry: prometheus.NewRegistry()}, nil, nil)
	out := make([]string, 0, len(s.byPattern))
	for k := range s.byPattern {
		out = append(out, k)
	}
	return out
}

// JSONMediaType is jsonMediaType, for its fuzz target.
var JSONMediaType = jsonMediaType
