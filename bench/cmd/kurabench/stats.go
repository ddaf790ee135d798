package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// percentile returns the nearest-rank q-quantile (0 < q ≤ 1) of ds in
// milliseconds. Nearest rank, not interpolation: p99 of 100 samples is the
// 99th slowest one actually seen, never a value no request took.
func percentile(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	k := int(math.Ceil(q*float64(len(s)))) - 1
	k = min(max(k, 0), len(s)-1)
	return ms(s[k])
}

// median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// medianOf applies f to every run and returns the median.
func medianOf(runs []Run, f func(Run) float64) float64 {
	xs := make([]float64, 0, len(runs))
	for _, r := range runs {
		xs = append(xs, f(r))
	}
	return median(xs)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// round keeps results.json readable: three decimals are far below the noise.
func round(x float64) float64 { return math.Round(x*1000) / 1000 }

// CPU is the CPU time two processes used over a wall-clock interval. Shares
// are of the whole machine (wall × cores), so bench + kurad ≤ 1: on a
// 2-core box a load generator at 0.3 leaves kurad at most 0.7.
type CPU struct {
	WallSeconds  float64 `json:"wall_s"`
	BenchSeconds float64 `json:"bench_cpu_s"`
	KuradSeconds float64 `json:"kurad_cpu_s"`
	BenchShare   float64 `json:"bench_share"`
	KuradShare   float64 `json:"kurad_share"`
	// OtherShare is the machine's busy time (/proc/stat) less bench,
	// kurad and PostgreSQL: anything else running skews every figure, and
	// this shows it.
	OtherShare float64 `json:"other_share"`
	// PostgresSeconds and PostgresShare are the PostgreSQL server's CPU
	// (the postmaster and every backend) in the phases on PostgreSQL, where
	// it shares the cores with the bench and kurad.
	PostgresSeconds float64 `json:"postgres_cpu_s,omitempty"`
	PostgresShare   float64 `json:"postgres_share,omitempty"`
}

// cpuMeter samples this process (getrusage), the kurads (/proc/<pid>/stat
// utime+stime; pid 0 is none) and, when pg > 0, the PostgreSQL server whose
// postmaster that is, at start and stop.
type cpuMeter struct {
	pids                    []int
	pg                      int
	start                   time.Time
	bench, kurad, pgs, busy time.Duration
}

func startCPU(pid int) *cpuMeter { return startCPUOf(0, pid) }

// startCPUOf meters several kurads (sharing one database) and the
// PostgreSQL server with postmaster pg (0: none).
func startCPUOf(pg int, pids ...int) *cpuMeter {
	m := &cpuMeter{pids: pids, pg: pg}
	m.bench = selfCPU()
	m.kurad = m.kurads()
	m.pgs = postgresCPU(pg)
	m.busy = machineBusy()
	m.start = time.Now()
	return m
}

func (m *cpuMeter) kurads() time.Duration {
	var t time.Duration
	for _, p := range m.pids {
		t += procCPU(p)
	}
	return t
}

func (m *cpuMeter) stop() *CPU {
	wall := time.Since(m.start).Seconds()
	b := (selfCPU() - m.bench).Seconds()
	k := (m.kurads() - m.kurad).Seconds()
	pg := (postgresCPU(m.pg) - m.pgs).Seconds()
	busy := (machineBusy() - m.busy).Seconds()
	c := &CPU{WallSeconds: round(wall), BenchSeconds: round(b), KuradSeconds: round(k), PostgresSeconds: round(pg)}
	if wall > 0 {
		capacity := wall * float64(runtime.NumCPU())
		c.BenchShare = round(b / capacity)
		c.KuradShare = round(k / capacity)
		c.PostgresShare = round(pg / capacity)
		// Tick granularity can make the difference slightly negative.
		c.OtherShare = round(max(busy-b-k-pg, 0) / capacity)
	}
	return c
}

// machineBusy is the CPU time all processes used since boot: the first line
// of /proc/stat less idle and iowait.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, v := range f[1:] {
		// Fields: user nice system idle iowait irq softirq steal guest
		// guest_nice. guest time is already counted in user.
		if i == 3 || i == 4 || i >= 8 {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0
		}
		busy += n
	}
	return time.Duration(busy) * time.Second / time.Duration(clockTicks)
}

// medianCPU summarises the CPU figures of several runs field by field.
func medianCPU(all []Run) CPU {
	var runs []Run
	for _, r := range all {
		if r.CPU != nil {
			runs = append(runs, r)
		}
	}
	return CPU{
		WallSeconds:     round(medianOf(runs, func(r Run) float64 { return r.CPU.WallSeconds })),
		BenchSeconds:    round(medianOf(runs, func(r Run) float64 { return r.CPU.BenchSeconds })),
		KuradSeconds:    round(medianOf(runs, func(r Run) float64 { return r.CPU.KuradSeconds })),
		BenchShare:      round(medianOf(runs, func(r Run) float64 { return r.CPU.BenchShare })),
		KuradShare:      round(medianOf(runs, func(r Run) float64 { return r.CPU.KuradShare })),
		OtherShare:      round(medianOf(runs, func(r Run) float64 { return r.CPU.OtherShare })),
		PostgresSeconds: round(medianOf(runs, func(r Run) float64 { return r.CPU.PostgresSeconds })),
		PostgresShare:   round(medianOf(runs, func(r Run) float64 { return r.CPU.PostgresShare })),
	}
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// postgresCPU is the CPU time of a PostgreSQL server: its postmaster's own
// and that of the backends it has reaped (cutime+cstime), plus every live
// backend's. A backend that exits between two readings moves from the live
// sum into the reaped one, so differences stay exact.
func postgresCPU(postmaster int) time.Duration {
	if postmaster <= 0 {
		return 0
	}
	f := procStat(postmaster)
	if len(f) < 15 {
		return 0
	}
	var t int64
	for _, i := range []int{11, 12, 13, 14} {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		t += n
	}
	total := time.Duration(t) * time.Second / time.Duration(clockTicks)
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == postmaster {
			continue
		}
		// Field 4 (index 1 after the name) is the parent.
		if f := procStat(pid); len(f) > 1 && f[1] == strconv.Itoa(postmaster) {
			total += procCPU(pid)
		}
	}
	return total
}

// procStat returns the fields of /proc/<pid>/stat after the command name
// (state first), or nil.
func procStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// procCPU reads utime+stime of pid from /proc. A vanished process reads as
// 0; the caller sees a negative delta only if kurad died mid-phase, which
// the phase reports as an error anyway.
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	// The command name (field 2) may contain spaces and parentheses; the
	// fields after the last ')' are fixed: state is field 3, utime 14, stime 15.
	f := procStat(pid)
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(ut+st) * time.Second / time.Duration(clockTicks)
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat times.
// Without cgo there is no sysconf(_SC_CLK_TCK); the kernel hands it to every
// process in the auxiliary vector as AT_CLKTCK.
var clockTicks = func() int64 {
	const atClkTck = 17
	b, err := os.ReadFile("/proc/self/auxv")
	if err == nil && strconv.IntSize == 64 {
		for i := 0; i+16 <= len(b); i += 16 {
			k := binary.NativeEndian.Uint64(b[i:])
			v := binary.NativeEndian.Uint64(b[i+8:])
			if k == atClkTck && v > 0 {
				return int64(v)
			}
		}
	}
	return 100
}()
