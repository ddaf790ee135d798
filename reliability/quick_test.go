//go:build !reliability

package reliability_test

// The quick cases run in the normal test suite; `make reliability` builds
// with the reliability tag for the long runs (long_test.go).
const (
	crashCycles = 3
	longRun     = false
)
