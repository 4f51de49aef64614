package runtime

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/skillrun/skillrun/enforce"
)

const (
	cgroupRoot        = "/sys/fs/cgroup"
	cgroupControllers = "/sys/fs/cgroup/cgroup.controllers"
	selfMountinfo     = "/proc/self/mountinfo"
	procCgroups       = "/proc/cgroups"
	selfCgroup        = "/proc/self/cgroup"
)

// usableControllers are the controllers skillrun can use, in report order.
// Without memory, pids or cpu a per-invocation limit is missing; cpuset and
// freezer are conveniences.
var (
	usableControllers   = []string{"memory", "pids", "cpu", "cpuset", "freezer"}
	requiredControllers = []string{"memory", "pids", "cpu"}
)

// cgroupSnapshot is what the kernel says about cgroups, read in one place so
// that cgroupsFrom can decide without touching the file system.
type cgroupSnapshot struct {
	rootMagic      int64 // statfs f_type of /sys/fs/cgroup
	rootErr        error
	controllers    string // /sys/fs/cgroup/cgroup.controllers, v2 only
	controllersErr error
	mountinfo      string // v1 only
	mountinfoErr   error
	procCgroups    string // optional: explains a missing v1 controller
	selfCgroup     string // /proc/self/cgroup: where this process sits
	selfCgroupErr  error
}

// cgroupFacts is what cgroupsFrom concludes.
type cgroupFacts struct {
	version     int
	controllers []string
	// dirs maps each controller to the cgroup directory this process is in,
	// under which skillrun creates the per-invocation cgroups.
	dirs     map[string]string
	problems []string
}

func probeCgroups(h *enforce.Host) {
	f := cgroupsFrom(readCgroupSnapshot())
	ctrls, denied := writableControllers(f, accessWrite)
	h.CgroupVersion, h.CgroupControllers = f.version, ctrls
	h.Problems = append(append(h.Problems, f.problems...), denied...)
}

func readCgroupSnapshot() cgroupSnapshot {
	var s cgroupSnapshot
	var st unix.Statfs_t
	if err := unix.Statfs(cgroupRoot, &st); err != nil {
		s.rootErr = fmt.Errorf("statfs %s: %w", cgroupRoot, err)
		return s
	}
	s.rootMagic = int64(st.Type)
	s.selfCgroup, s.selfCgroupErr = readString(selfCgroup)
	if s.rootMagic == unix.CGROUP2_SUPER_MAGIC {
		s.controllers, s.controllersErr = readString(cgroupControllers)
		return s
	}
	s.mountinfo, s.mountinfoErr = readString(selfMountinfo)
	s.procCgroups, _ = readString(procCgroups)
	return s
}

func readString(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

// cgroupsFrom decides the cgroup version and usable controllers. A cgroup2
// file system at /sys/fs/cgroup is the unified (v2) layout; anything else
// with v1 hierarchies mounted is v1 or hybrid, where libcontainer's v1
// manager does the work and a cgroup2 mount beside it (often
// /sys/fs/cgroup/unified) is not used.
func cgroupsFrom(s cgroupSnapshot) cgroupFacts {
	if s.rootErr != nil {
		return cgroupFacts{problems: []string{fmt.Sprintf("cgroups: %v", s.rootErr)}}
	}
	var f cgroupFacts
	self, err := parseSelfCgroup(s.selfCgroup)
	if err = errors.Join(s.selfCgroupErr, err); err != nil {
		// Fall back to the hierarchy roots; the access check still runs.
		f.problems = append(f.problems, fmt.Sprintf("cgroups: %s: %v", selfCgroup, err))
	}
	if s.rootMagic == unix.CGROUP2_SUPER_MAGIC {
		f.version = 2
		if s.controllersErr != nil {
			f.problems = append(f.problems, fmt.Sprintf("cgroups: %v", s.controllersErr))
			return f
		}
		f.controllers = usable(strings.Fields(s.controllers))
		f.dirs = map[string]string{}
		for _, c := range f.controllers {
			f.dirs[c] = cgroupDir(cgroupRoot, "/", self[""])
		}
		for _, c := range missing(f.controllers) {
			f.problems = append(f.problems, fmt.Sprintf("cgroups: no %s controller in %s", c, cgroupControllers))
		}
		return f
	}
	return v1From(s, self, f)
}

func v1From(s cgroupSnapshot, self map[string]string, f cgroupFacts) cgroupFacts {
	if s.mountinfoErr != nil {
		f.problems = append(f.problems, fmt.Sprintf("cgroups: %v", s.mountinfoErr))
		return f
	}
	mounts, err := parseMountinfo(s.mountinfo)
	if err != nil {
		f.problems = append(f.problems, fmt.Sprintf("cgroups: %s: %v", selfMountinfo, err))
		return f
	}
	dirs, found := v1Dirs(mounts, self)
	if !found {
		f.problems = append(f.problems, fmt.Sprintf(
			"cgroups: %s is not cgroup2 (statfs magic %#x) and %s has no cgroup v1 mount",
			cgroupRoot, s.rootMagic, selfMountinfo))
		return f
	}
	f.version, f.dirs = 1, dirs
	f.controllers = usable(slices.Collect(maps.Keys(dirs)))
	enabled, _ := parseProcCgroups(s.procCgroups) // only refines the message
	for _, c := range missing(f.controllers) {
		f.problems = append(f.problems, "cgroups: "+whyV1Missing(c, enabled))
	}
	return f
}

// v1Dirs maps each usable controller of a mounted v1 hierarchy to this
// process's cgroup directory in it, and reports whether any v1 hierarchy is
// mounted at all. A v1 mount names its controllers among its super options
// ("rw,cpu,cpuacct"); a mount of a subtree (root other than "/") shows this
// process's path relative to that subtree.
func v1Dirs(mounts []mountEntry, self map[string]string) (dirs map[string]string, found bool) {
	dirs = map[string]string{}
	for _, m := range mounts {
		if m.fsType != "cgroup" {
			continue
		}
		found = true
		for _, c := range m.superOpts {
			if slices.Contains(usableControllers, c) {
				dirs[c] = cgroupDir(m.mountPoint, m.root, self[c])
			}
		}
	}
	return dirs, found
}

// cgroupDir is the directory of cgroup path under a hierarchy mounted at
// mountPoint whose mounted subtree is root. A path outside the mounted
// subtree or cgroup namespace ("/../x"), or an unknown one, gives the mount
// point itself: the only directory of the hierarchy this process can see.
func cgroupDir(mountPoint, root, path string) string {
	if path == "" || slices.Contains(strings.Split(path, "/"), "..") {
		return mountPoint
	}
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return mountPoint
	}
	return filepath.Join(mountPoint, rel)
}

// writableControllers keeps the controllers whose cgroup directory this
// process may create cgroups in. A rootless user without delegation, or a
// read-only /sys/fs/cgroup (Docker's default) fails here, not at exec.
func writableControllers(f cgroupFacts, access func(dir string) error) (ctrls, problems []string) {
	checked := map[string]error{}
	denied := map[string][]string{}
	var order []string
	for _, c := range f.controllers {
		dir := f.dirs[c]
		err, seen := checked[dir]
		if !seen {
			err = access(dir)
			checked[dir] = err
		}
		if err == nil {
			ctrls = append(ctrls, c)
			continue
		}
		if denied[dir] == nil {
			order = append(order, dir)
		}
		denied[dir] = append(denied[dir], c)
	}
	for _, dir := range order {
		problems = append(problems, fmt.Sprintf("cgroups: cannot create %s cgroups in %s: %v",
			strings.Join(denied[dir], ", "), dir, checked[dir]))
	}
	return ctrls, problems
}

func accessWrite(dir string) error {
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Errorf("access(W_OK): %w", err)
	}
	return nil
}

// whyV1Missing names the most specific reason a v1 controller is absent.
func whyV1Missing(c string, enabled map[string]bool) string {
	on, listed := enabled[c]
	switch {
	case enabled != nil && !listed:
		return fmt.Sprintf("no %s controller in this kernel (%s)", c, procCgroups)
	case listed && !on:
		return fmt.Sprintf("%s controller disabled (%s enabled=0; cgroup_disable= at boot?)", c, procCgroups)
	default:
		return fmt.Sprintf("%s controller not mounted as a v1 hierarchy (%s)", c, selfMountinfo)
	}
}

// usable keeps the controllers skillrun uses, in usableControllers order.
func usable(have []string) []string {
	var out []string
	for _, c := range usableControllers {
		if slices.Contains(have, c) {
			out = append(out, c)
		}
	}
	return out
}

func missing(have []string) []string {
	var out []string
	for _, c := range requiredControllers {
		if !slices.Contains(have, c) {
			out = append(out, c)
		}
	}
	return out
}

// mountEntry is the part of a /proc/<pid>/mountinfo line the probe needs.
type mountEntry struct {
	root       string // the mounted subtree of the file system
	mountPoint string
	fsType     string
	superOpts  []string
}

// parseMountinfo parses /proc/<pid>/mountinfo (proc(5)): six fixed fields,
// optional fields up to a lone "-", then fstype, source and super options.
func parseMountinfo(text string) ([]mountEntry, error) {
	var mounts []mountEntry
	for i, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if sep < 6 || len(f) < sep+4 {
			return nil, fmt.Errorf("line %d: malformed: %q", i+1, line)
		}
		mounts = append(mounts, mountEntry{
			root:       unescapeOctal(f[3]),
			mountPoint: unescapeOctal(f[4]),
			fsType:     f[sep+1],
			superOpts:  strings.Split(f[sep+3], ","),
		})
	}
	return mounts, nil
}

// unescapeOctal undoes the kernel's \ooo escaping of space, tab, newline
// and backslash in mountinfo paths.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseProcCgroups parses /proc/cgroups into controller → enabled. An empty
// text (the file is optional) gives a nil map.
func parseProcCgroups(text string) (map[string]bool, error) {
	if text == "" {
		return nil, nil
	}
	enabled := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			return nil, fmt.Errorf("%s line %d: malformed: %q", procCgroups, i+1, line)
		}
		enabled[f[0]] = f[3] == "1"
	}
	return enabled, nil
}

// parseSelfCgroup parses /proc/<pid>/cgroup ("id:controllers:path") into
// controller → path; the v2 line ("0::path") has the key "".
func parseSelfCgroup(text string) (map[string]string, error) {
	paths := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: malformed: %q", i+1, line)
		}
		for _, c := range strings.Split(f[1], ",") {
			paths[c] = f[2]
		}
	}
	return paths, nil
}
