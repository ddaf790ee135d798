package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A host of its own, on one machine: the pg_*_host phases hold each kurad
// to a fixed CPU budget with a cgroup's CPU quota, as a kurad on a machine
// of its own is held to that machine's cores. Adding a kurad then adds
// its budget, as adding a host would, and what the two kurads share is
// what hosts share: the PostgreSQL server and its write lock. Without a
// budget, a second kurad on a 2-core box competes for the same cores as
// the first (pg_two_kurads).

// quotaPeriod is the accounting period of a budget of cpus: the shortest
// the kernel allows, whose quota is its minimum of 1 ms (3.3 ms at 0.3
// CPUs). A quota is stop-and-go: a kurad that spends it waits for the next
// period, even for a reply PostgreSQL has already sent, and a kurad
// holding the shared write lock holds it through that wait. A host's
// slower cores stretch only its own work, so the shorter the wait, the
// closer the budget is to a host of that size.
func quotaPeriod(cpus float64) time.Duration {
	return max(time.Duration(float64(time.Millisecond)/cpus), time.Millisecond).Round(time.Microsecond)
}

// cgroupCPU is a writable cgroup hierarchy with the cpu controller.
type cgroupCPU struct {
	dir string // the bench's own cgroup in it: children go here
	v2  bool
}

// findCgroupCPU looks for the cpu controller in the mounts the bench can
// write to: a cgroup v1 hierarchy mounted with "cpu", or a cgroup2 mount
// whose controllers include cpu.
func findCgroupCPU() (*cgroupCPU, error) {
	mi, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer mi.Close()
	mounts, err := parseMountinfo(mi)
	if err != nil {
		return nil, err
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	own := parseProcCgroup(string(cg))
	var tried []string
	for _, m := range mounts {
		var rel string
		var ok bool
		switch m.fstype {
		case "cgroup":
			if !slices.Contains(strings.Split(m.super, ","), "cpu") {
				continue
			}
			rel, ok = own["cpu"]
		case "cgroup2":
			if c, err := os.ReadFile(filepath.Join(m.point, "cgroup.controllers")); err != nil || !slices.Contains(strings.Fields(string(c)), "cpu") {
				continue
			}
			rel, ok = own[""]
		default:
			continue
		}
		if !ok {
			continue
		}
		dir, err := cgroupDir(m, rel)
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		c := &cgroupCPU{dir: dir, v2: m.fstype == "cgroup2"}
		if err := c.probe(); err != nil {
			tried = append(tried, err.Error())
			continue
		}
		return c, nil
	}
	if len(tried) == 0 {
		return nil, errors.New("no cgroup hierarchy with the cpu controller is mounted")
	}
	return nil, errors.New(strings.Join(tried, "; "))
}

// mount is one line of /proc/self/mountinfo, the fields used here.
type mount struct {
	root, point, fstype, super string
}

// parseMountinfo reads /proc/<pid>/mountinfo (proc(5)): the root and mount
// point are the 4th and 5th fields, and after the lone "-" come the type,
// the source and the super options.
func parseMountinfo(r io.Reader) ([]mount, error) {
	var out []mount
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := slices.Index(f, "-")
		if sep < 6 || len(f) < sep+4 {
			continue
		}
		out = append(out, mount{root: unescapeMount(f[3]), point: unescapeMount(f[4]), fstype: f[sep+1], super: f[sep+3]})
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline
// and backslash.
func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// parseProcCgroup maps each controller of /proc/self/cgroup to the
// process's path in its hierarchy; cgroup v2's line ("0::/path") is under "".
func parseProcCgroup(s string) map[string]string {
	out := map[string]string{}
	for line := range strings.SplitSeq(s, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// cgroupDir is where the cgroup at rel (a path from the hierarchy's root)
// is in the file system, given the mount; a mount of a subtree (as in a
// container) shows only paths below its root.
func cgroupDir(m mount, rel string) (string, error) {
	if m.root != "/" {
		r, ok := strings.CutPrefix(rel, m.root)
		if !ok || (r != "" && !strings.HasPrefix(r, "/")) {
			return "", fmt.Errorf("cgroup %s is outside the mount of %s at %s", rel, m.root, m.point)
		}
		rel = r
	}
	return filepath.Join(m.point, rel), nil
}

// probe checks that children can be made here with a CPU quota.
func (c *cgroupCPU) probe() error {
	g, err := c.child(fmt.Sprintf("kurabench-%d-probe", os.Getpid()), 0.5)
	if err != nil {
		return err
	}
	return g.remove()
}

// cpuGroup is one child cgroup with a CPU quota.
type cpuGroup struct{ dir string }

// child makes a cgroup named name whose processes together get cpus
// CPUs' worth of time.
func (c *cgroupCPU) child(name string, cpus float64) (*cpuGroup, error) {
	if cpus <= 0 {
		return nil, fmt.Errorf("cpu budget %v: must be above 0", cpus)
	}
	dir := filepath.Join(c.dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make cgroup: %w", err)
	}
	g := &cpuGroup{dir: dir}
	period := quotaPeriod(cpus).Microseconds()
	quota := max(int64(cpus*float64(period)), 1000) // the kernel's minimum quota is 1 ms
	var err error
	if c.v2 {
		// The parent must hand the cpu controller down; writing it
		// again when it already does is harmless.
		_ = os.WriteFile(filepath.Join(c.dir, "cgroup.subtree_control"), []byte("+cpu"), 0)
		err = os.WriteFile(filepath.Join(dir, "cpu.max"), []byte(fmt.Sprintf("%d %d", quota, period)), 0)
	} else {
		err = os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), []byte(strconv.FormatInt(period, 10)), 0)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte(strconv.FormatInt(quota, 10)), 0)
		}
	}
	if err != nil {
		_ = g.remove()
		return nil, fmt.Errorf("set cpu quota of %s: %w", dir, err)
	}
	return g, nil
}

// add moves process pid, all its threads, into the group; the threads
// and children it makes later are born in it.
func (g *cpuGroup) add(pid int) error {
	if err := os.WriteFile(filepath.Join(g.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("move pid %d to %s: %w", pid, g.dir, err)
	}
	return nil
}

// periods is how many quota periods the group's processes ran in and in
// how many of them they spent the quota and waited (cpu.stat's nr_periods
// and nr_throttled, in both cgroup versions).
func (g *cpuGroup) periods() (ran, throttled int64) {
	b, err := os.ReadFile(filepath.Join(g.dir, "cpu.stat"))
	if err != nil {
		return 0, 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, _ := strings.Cut(line, " ")
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "nr_periods":
			ran = n
		case "nr_throttled":
			throttled = n
		}
	}
	return ran, throttled
}

// remove deletes the group once its processes have gone; a process that
// has just exited can linger in it for a moment.
func (g *cpuGroup) remove() error {
	var err error
	for range 50 {
		if err = os.Remove(g.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup: %w", err)
}
