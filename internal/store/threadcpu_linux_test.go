package store_test

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPU is the CPU time the calling thread has used
// (CLOCK_THREAD_CPUTIME_ID): what a benchmark's work cost, whatever else
// the machine runs. getrusage(RUSAGE_THREAD) would do, but counts in
// scheduler ticks.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}
