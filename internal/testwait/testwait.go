// Package testwait is the one way Kura's tests wait for something to happen:
// poll the real condition with a short backoff, bounded by a deadline, and
// fail naming what never came. It imports only the standard library so every
// test package can use it without an import cycle.
package testwait

import (
	"testing"
	"time"
)

// Default is the bound tests use when nothing argues for another: long
// enough for a loaded 2-core machine under the race detector, short enough
// that a hang fails the test instead of the whole run.
const Default = 20 * time.Second

// For polls cond until it returns true, failing the test with
// "timed out after <within> waiting for <what>" if it has not by then.
// The first check runs at once; later ones back off from 1ms to 50ms so a
// fast condition costs almost nothing and a slow one does not burn a core.
func For(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Until(within, cond) {
		tb.Fatalf("timed out after %v waiting for %s", within, what)
	}
}

// Until polls cond like For and reports whether it became true within the
// bound, for the callers that fail with their own message or must not call
// Fatal (a goroutine other than the test's).
func Until(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	pause := time.Millisecond
	for {
		if cond() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(pause)
		if pause < 50*time.Millisecond {
			pause *= 2
		}
	}
}
