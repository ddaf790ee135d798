//go:build reliability

package reliability_test

// make reliability: the acceptance run of issue 10.
const (
	crashCycles = 50
	longRun     = true
)
