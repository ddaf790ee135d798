// The resources phase's memory readings: /proc status and smaps of the
// kurad process, and the Go runtime's own figures.

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// medianGoMem is the field-wise median of the samples' GoMem (nil when
// none has one).
func medianGoMem(samples []StartSample, get func(StartSample) *GoMem) *GoMem {
	var gs []GoMem
	for _, s := range samples {
		if g := get(s); g != nil {
			gs = append(gs, *g)
		}
	}
	if len(gs) == 0 {
		return nil
	}
	f := func(field func(GoMem) float64) float64 {
		xs := make([]float64, len(gs))
		for i, g := range gs {
			xs[i] = field(g)
		}
		return round(median(xs))
	}
	return &GoMem{
		GoMinMiB:        f(func(g GoMem) float64 { return g.GoMinMiB }),
		GoMaxMiB:        f(func(g GoMem) float64 { return g.GoMaxMiB }),
		HeapInuseMiB:    f(func(g GoMem) float64 { return g.HeapInuseMiB }),
		HeapIdleKeptMiB: f(func(g GoMem) float64 { return g.HeapIdleKeptMiB }),
		NotGoMinMiB:     f(func(g GoMem) float64 { return g.NotGoMinMiB }),
		NotGoMaxMiB:     f(func(g GoMem) float64 { return g.NotGoMaxMiB }),
	}
}

// split renders a GoMem as "Go runtime 3.1–7.9, SQLite 2.7–6.5".
func (g *GoMem) split() string {
	if g == nil {
		return "no Go memory series on /metrics"
	}
	return fmt.Sprintf("Go runtime %.1f–%.1f (%.1f free heap kept), SQLite & C heap %.1f–%.1f", g.GoMinMiB, g.GoMaxMiB, g.HeapIdleKeptMiB, g.NotGoMinMiB, g.NotGoMaxMiB)
}

// goMem scrapes kurad's Go memory series and relates them to m, the RSS
// reading just taken; nil when kurad exports none.
func (b *bench) goMem(ctx context.Context, k *kuradProc, m ProcMem) *GoMem {
	st, body, err := b.do(ctx, http.MethodGet, k.base+"/metrics", nil)
	if err != nil || st != http.StatusOK {
		return nil
	}
	v := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "go_memstats_") {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if x, err := strconv.ParseFloat(val, 64); err == nil {
			v[name] = x
		}
	}
	sys, ok := v["go_memstats_sys_bytes"]
	if !ok {
		return nil
	}
	const mb = 1 << 20
	g := &GoMem{
		GoMinMiB:        round((v["go_memstats_heap_inuse_bytes"] + v["go_memstats_stack_inuse_bytes"]) / mb),
		GoMaxMiB:        round((sys - v["go_memstats_heap_released_bytes"]) / mb),
		HeapInuseMiB:    round(v["go_memstats_heap_inuse_bytes"] / mb),
		HeapIdleKeptMiB: round((v["go_memstats_heap_idle_bytes"] - v["go_memstats_heap_released_bytes"]) / mb),
	}
	g.NotGoMinMiB = round(max(mib(m.Anon)-g.GoMaxMiB, 0))
	g.NotGoMaxMiB = round(max(mib(m.Anon)-g.GoMinMiB, 0))
	return g
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// readProcMem reads the memory lines of /proc/<pid>/status.
func readProcMem(pid int) (ProcMem, error) {
	var m ProcMem
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, err
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	seen := 0
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(val)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch key {
		case "VmRSS":
			m.RSS, seen = n, seen+1
		case "VmHWM":
			m.HWM = n
		case "RssAnon":
			m.Anon = n
		case "RssFile":
			m.File = n
		case "RssShmem":
			m.Shmem = n
		case "Threads":
			m.Threads = int(n)
		}
	}
	if seen == 0 {
		return m, errors.New("/proc/" + strconv.Itoa(pid) + "/status has no VmRSS (process gone?)")
	}
	return m, nil
}
