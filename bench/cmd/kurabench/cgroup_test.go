package main

import (
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/testwait"
)

func TestParseMountinfo(t *testing.T) {
	const in = `22 27 0:20 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
30 22 0:26 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
31 22 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:12 - cgroup cgroup rw,cpu,cpuacct
32 22 0:28 /kubepods/pod1 /sys/fs/cgroup rw,nosuid master:3 - cgroup2 cgroup2 rw,nsdelegate
33 22 0:29 / /mnt/with\040space rw - tmpfs tmpfs rw
short line
`
	got, err := parseMountinfo(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []mount{
		{root: "/", point: "/sys", fstype: "sysfs", super: "rw"},
		{root: "/", point: "/sys/fs/cgroup/cpu", fstype: "cgroup", super: "rw,cpu"},
		{root: "/", point: "/sys/fs/cgroup/cpu,cpuacct", fstype: "cgroup", super: "rw,cpu,cpuacct"},
		{root: "/kubepods/pod1", point: "/sys/fs/cgroup", fstype: "cgroup2", super: "rw,nsdelegate"},
		{root: "/", point: "/mnt/with space", fstype: "tmpfs", super: "rw"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseMountinfo:\n got %+v\nwant %+v", got, want)
	}
}

// FuzzParseMountinfo feeds the parser any text: it must not panic, and
// it returns at most a mount a line, each with its fields.
func FuzzParseMountinfo(f *testing.F) {
	f.Add("30 22 0:26 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n")
	f.Add("32 22 0:28 /a /b rw master:3 - cgroup2 cgroup2 rw\n- - - - - - -\n")
	f.Fuzz(func(t *testing.T, in string) {
		ms, err := parseMountinfo(strings.NewReader(in))
		if err != nil {
			return // a line longer than the scanner's buffer
		}
		if len(ms) > strings.Count(in, "\n")+1 {
			t.Errorf("%d mounts from %d lines: %q", len(ms), strings.Count(in, "\n")+1, in)
		}
		for _, m := range ms {
			if m.fstype == "" || m.super == "" || m.point == "" {
				t.Errorf("empty field in %+v from %q", m, in)
			}
		}
	})
}

func TestParseProcCgroup(t *testing.T) {
	got := parseProcCgroup("12:cpu,cpuacct:/bench\n4:memory:/m\n1:name=systemd:/\n0::/user.slice/x\n")
	want := map[string]string{"cpu": "/bench", "cpuacct": "/bench", "memory": "/m", "name=systemd": "/", "": "/user.slice/x"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseProcCgroup = %v, want %v", got, want)
	}
}

func TestCgroupDir(t *testing.T) {
	tests := []struct {
		root, point, rel string
		want             string // "" = error
	}{
		{"/", "/sys/fs/cgroup/cpu", "/", "/sys/fs/cgroup/cpu"},
		{"/", "/sys/fs/cgroup/cpu", "/a/b", "/sys/fs/cgroup/cpu/a/b"},
		{"/kubepods/pod1", "/sys/fs/cgroup", "/kubepods/pod1", "/sys/fs/cgroup"},
		{"/kubepods/pod1", "/sys/fs/cgroup", "/kubepods/pod1/c", "/sys/fs/cgroup/c"},
		{"/kubepods/pod1", "/sys/fs/cgroup", "/kubepods/pod10", ""},
		{"/kubepods/pod1", "/sys/fs/cgroup", "/other", ""},
	}
	for _, tc := range tests {
		got, err := cgroupDir(mount{root: tc.root, point: tc.point}, tc.rel)
		if tc.want == "" {
			if err == nil {
				t.Errorf("cgroupDir(%s at %s, %s) = %s, want an error", tc.root, tc.point, tc.rel, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("cgroupDir(%s at %s, %s) = %q, %v; want %q", tc.root, tc.point, tc.rel, got, err, tc.want)
		}
	}
}

// TestCPUGroupHoldsABusyLoop checks a budget holds: a shell spinning in a
// group of 0.2 CPUs gets about a fifth of a CPU, not the whole one it
// would take, and the group counts the periods it spent its quota in.
// Where the bench cannot make cgroups (not root, no cpu controller), the
// host phases skip, and so does this.
func TestCPUGroupHoldsABusyLoop(t *testing.T) {
	cg, err := findCgroupCPU()
	if err != nil {
		t.Skipf("no writable cgroup with the cpu controller: %v", err)
	}
	g, err := cg.child(fmt.Sprintf("kurabench-test-%d", os.Getpid()), 0.2)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		_ = g.remove()
		t.Skipf("no sh: %v", err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if err := g.remove(); err != nil {
			t.Error(err)
		}
	}()
	if err := g.add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	cpu0, t0 := procCPU(cmd.Process.Pid), time.Now()
	ran0, _ := g.periods()
	// The window is the group's own clock: 200 quota periods (a second at
	// 0.2 CPUs), however slowly the machine runs them.
	testwait.For(t, testwait.Default, "200 quota periods of the busy loop", func() bool {
		ran, _ := g.periods()
		return ran-ran0 >= 200
	})
	used, wall := procCPU(cmd.Process.Pid)-cpu0, time.Since(t0)
	ran, spent := g.periods()
	share := used.Seconds() / wall.Seconds()
	// /proc counts in clock ticks; a loaded machine may give the loop
	// less than its budget, never more than the budget and a few ticks.
	if share > 0.3 || share < 0.02 {
		t.Errorf("a busy loop held to 0.2 CPUs used %.2f CPUs (%v in %v)", share, used, wall)
	}
	if ran == 0 || spent == 0 {
		t.Errorf("cpu.stat: %d periods, %d spent; want both above 0", ran, spent)
	}
	if _, err := os.Stat(g.dir); err != nil {
		t.Errorf("group dir: %v", err)
	}
}
