package dirlock

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// AcquireFile takes the file at path for this process without waiting:
// flock(2) on the file itself, so every path that reaches it (a symlink, a
// hard link, another mount of the directory) meets the one hold. The file
// must exist; it is opened read-only and never written. A *HeldError
// (File set) names the file's real path and, where /proc tells, the
// holder's pid and the directory it holds with Acquire.
//
// The descriptor stays open until Release. Closing any descriptor of a
// file drops every POSIX lock this process holds on it (SQLite's, on a
// database), so Release must come after whatever else uses the file here
// has closed it.
func AcquireFile(path, holder string) (*Lock, error) {
	real, err := filepath.EvalSymlinks(path)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	err = flock(f)
	if errors.Is(err, syscall.EWOULDBLOCK) && flockHolder(f) == os.Getpid() {
		err = retryOwn(f) // see ownHold: a child's copy of a released hold
	}
	if err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			held := &HeldError{File: real, PID: flockHolder(f)}
			if held.PID > 0 {
				held.Dir = heldDir(held.PID)
				if held.Dir != "" {
					if pid, who := readHolder(filepath.Join(held.Dir, File)); pid == held.PID {
						held.Holder = who
					}
				}
			}
			return nil, held
		}
		return nil, fmt.Errorf("lock %s: %w", real, err)
	}
	return &Lock{f: f}, nil
}

// flockHolder is the pid of the process that took the flock held on f's
// file, from /proc/locks (Linux); 0 when it cannot tell.
func flockHolder(f *os.File) int {
	st, err := f.Stat()
	if err != nil {
		return 0
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer locks.Close()
	// /proc/locks names a file as major:minor:inode, the device numbers in
	// hex (Linux's encoding of st_dev).
	dev := uint64(sys.Dev)
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, uint64(sys.Ino))
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF"; a waiter's
		// line has "->" after the number.
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || fs[1] != "FLOCK" || fs[5] != want {
			continue
		}
		if pid, err := strconv.Atoi(fs[4]); err == nil && pid > 0 {
			return pid
		}
	}
	return 0
}

// heldDir is the directory process pid holds with Acquire (the one whose
// lock file it has open), from /proc/<pid>/fd; "" when it cannot tell (no
// such process, or not this user's).
func heldDir(pid int) string {
	fdDir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return ""
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err == nil && filepath.IsAbs(target) && filepath.Base(target) == File {
			return filepath.Dir(target)
		}
	}
	return ""
}
