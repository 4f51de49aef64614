//go:build linux

package runtime

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupRoots are the hierarchies an invocation's cgroup may live in: the
// v2 unified root and each v1 controller skillrun uses.
var cgroupRoots = []string{"/sys/fs/cgroup", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/cpu",
	"/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpuset", "/sys/fs/cgroup/freezer",
	"/sys/fs/cgroup/devices", "/sys/fs/cgroup/blkio", "/sys/fs/cgroup/net_cls", "/sys/fs/cgroup/perf_event",
	"/sys/fs/cgroup/hugetlb", "/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"}

// RemoveCgroup kills whatever still runs in the cgroup at path (relative to
// each hierarchy) and removes it: what gc does when a container's state is
// gone but its cgroup is not.
func RemoveCgroup(path string) error {
	var errs []error
	for _, root := range cgroupRoots {
		dir := filepath.Join(root, path)
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
			continue
		}
		for i := 0; i < 50; i++ {
			pids, err := cgroupPids(dir)
			if err != nil || len(pids) == 0 {
				break
			}
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("rmdir %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

func cgroupPids(dir string) ([]int, error) {
	f, err := os.Open(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var pids []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if pid, err := strconv.Atoi(sc.Text()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, sc.Err()
}

// oomKilled reports whether the OOM killer killed a process of the cgroup
// at path: the oom_kill counter of v1's memory.oom_control or v2's
// memory.events.
func oomKilled(path string) bool {
	for _, f := range []string{
		filepath.Join("/sys/fs/cgroup/memory", path, "memory.oom_control"),
		filepath.Join("/sys/fs/cgroup", path, "memory.events"),
	} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if n, ok := strings.CutPrefix(line, "oom_kill "); ok && strings.TrimSpace(n) != "0" {
				return true
			}
		}
	}
	return false
}
