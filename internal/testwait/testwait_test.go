package testwait_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/testwait"
)

func TestUntil(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		trueAt int32 // the call that first returns true; 0 never
		within time.Duration
		want   bool
	}{
		{"AtOnce", 1, time.Second, true},
		{"AfterSome", 5, time.Second, true},
		{"Never", 0, 20 * time.Millisecond, false},
		{"ZeroBoundStillChecksOnce", 1, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			got := testwait.Until(tt.within, func() bool {
				n := calls.Add(1)
				return tt.trueAt != 0 && n >= tt.trueAt
			})
			if got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			if tt.want && calls.Load() != tt.trueAt {
				t.Fatalf("got %d calls, want %d: polling went on after the condition held", calls.Load(), tt.trueAt)
			}
		})
	}
}

// fakeTB records a Fatalf instead of ending the test, so For's failure path
// can be checked.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestFor_FailsNamingWhat(t *testing.T) {
	t.Parallel()
	ft := &fakeTB{TB: t}
	testwait.For(ft, 10*time.Millisecond, "the moon", func() bool { return false })
	if want := "timed out after 10ms waiting for the moon"; ft.failed != want {
		t.Fatalf("got failure %q, want %q", ft.failed, want)
	}
	ft = &fakeTB{TB: t}
	testwait.For(ft, time.Second, "the sun", func() bool { return true })
	if ft.failed != "" {
		t.Fatalf("For failed on a condition that held: %s", ft.failed)
	}
}
