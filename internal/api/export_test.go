package api

// AccessRuleKeys lists "METHOD pattern" of every access rule, for the
// route × role matrix in auth_e2e_test.go.
func AccessRuleKeys() []string {
	out := make([]string, 0, len(accessRules))
	for k := range accessRules {
		out = append(out, k)
	}
	return out
}
