package runtime

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/landlock"
)

// The files the probe reads, named once so each Problems line cites its source.
const (
	nsDir           = "/proc/self/ns"
	selfStatus      = "/proc/self/status"
	seccompActions  = "/proc/sys/kernel/seccomp/actions_avail"
	usernsProbeExec = "/bin/true"
	// usernsTimeout bounds the one child process; /bin/true takes about a
	// millisecond, so only a wedged host ever reaches it.
	usernsTimeout = 2 * time.Second
)

// namespaceFiles maps skillrun's namespace names to their /proc/self/ns entries.
var namespaceFiles = []struct{ name, file string }{
	{"pid", "pid"}, {"net", "net"}, {"mount", "mnt"}, {"ipc", "ipc"},
	{"uts", "uts"}, {"cgroup", "cgroup"}, {"user", "user"},
}

// usernsSysctls are the knobs that stop user namespaces at 0 (Debian's
// unprivileged_userns_clone, everyone's max_user_namespaces) or at 1
// (Ubuntu's AppArmor restriction, which leaves the namespace without
// capabilities). Absent files are fine: the kernel lacks the knob.
var usernsSysctls = []struct {
	path string
	bad  int
	why  string
}{
	{"/proc/sys/kernel/unprivileged_userns_clone", 0, "only root may create user namespaces"},
	{"/proc/sys/user/max_user_namespaces", 0, "no user namespace can be created"},
	{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", 1,
		"unprivileged user namespaces get no capabilities unless an AppArmor profile allows them"},
}

// probe measures the Linux facts; Probe then decides the isolation level.
// userns says whether to start the user-namespace child.
func probe(ctx context.Context, userns bool) enforce.Host {
	h := enforce.Host{OS: "linux", Root: os.Geteuid() == 0}
	probeKernel(&h)
	probeNamespaces(&h)
	if userns {
		probeUserNamespaces(ctx, &h)
	}
	mode := probeSeccomp(&h)
	probeLandlock(&h, mode)
	probeCgroups(&h)
	return h
}

func problem(h *enforce.Host, format string, args ...any) {
	h.Problems = append(h.Problems, fmt.Sprintf(format, args...))
}

func probeKernel(h *enforce.Host) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		problem(h, "kernel: uname: %v", err)
		return
	}
	h.Kernel = unix.ByteSliceToString(u.Release[:])
}

func probeNamespaces(h *enforce.Host) {
	// One line, not seven, when /proc itself is missing.
	if _, err := os.Stat(nsDir); err != nil {
		problem(h, "namespaces: %v (is /proc mounted?)", err)
		return
	}
	for _, ns := range namespaceFiles {
		if _, err := os.Lstat(filepath.Join(nsDir, ns.file)); err != nil {
			problem(h, "namespaces: no %s namespace in this kernel: %v", ns.name, err)
			continue
		}
		h.Namespaces = append(h.Namespaces, ns.name)
	}
}

// probeUserNamespaces creates one for real: the sysctls explain a refusal
// but do not cover every LSM or container runtime that can refuse. Run as
// root, the child shows what root can do; the sysctls tell what
// unprivileged users get.
func probeUserNamespaces(ctx context.Context, h *enforce.Host) {
	for _, s := range usernsSysctls {
		v, err := readIntFile(s.path)
		if err == nil && v == s.bad {
			problem(h, "user namespaces: %s is %d: %s", s.path, v, s.why)
		}
	}
	if err := newUserNamespace(ctx); err != nil {
		problem(h, "user namespaces: %v", err)
		return
	}
	h.UserNamespaces = true
}

// newUserNamespace starts /bin/true in a new user namespace, mapping only the
// caller's own ids, which is all an unprivileged process may map. A child
// process is needed: unshare(CLONE_NEWUSER) fails with EINVAL in a
// multithreaded process, and every Go process is one.
func newUserNamespace(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, usernsTimeout)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("not measured: %w", err)
	}
	cmd := exec.CommandContext(ctx, usernsProbeExec)
	if cmd.Err != nil {
		return fmt.Errorf("not measured: %w", cmd.Err)
	}
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  unix.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		// An unprivileged gid map is only accepted once setgroups is denied.
		GidMappingsEnableSetgroups: false,
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("clone(CLONE_NEWUSER): %w", err)
	}
	return nil
}

// probeSeccomp reports whether seccomp filters with the actions the profile
// uses are available, and returns this process's own seccomp mode (2 when
// it already runs under a filter), which can explain a refused Landlock.
func probeSeccomp(h *enforce.Host) int {
	mode, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	if err != nil {
		problem(h, "seccomp: prctl(PR_GET_SECCOMP): %v: kernel built without CONFIG_SECCOMP", err)
		return 0
	}
	ok := true
	if status, err := os.ReadFile(selfStatus); err != nil {
		problem(h, "seccomp: %v", err)
		ok = false
	} else if _, found := statusField(string(status), "Seccomp"); !found {
		problem(h, "seccomp: no Seccomp: line in %s", selfStatus)
		ok = false
	}
	actions, err := os.ReadFile(seccompActions)
	if err != nil {
		// The file arrived with filter mode's action list (Linux 4.14).
		problem(h, "seccomp: no filter mode (CONFIG_SECCOMP_FILTER) or kernel older than 4.14: %v", err)
		return mode
	}
	// errno is the profile's default action; kill_process answers
	// foreign-architecture calls.
	for _, a := range missingWords(string(actions), "errno", "kill_process") {
		problem(h, "seccomp: %s lacks the %s action", seccompActions, a)
		ok = false
	}
	h.Seccomp = ok
	return mode
}

// probeLandlock asks the kernel itself: go-landlock's best-effort mode turns
// into a silent no-op when a seccomp filter blocks the syscall.
func probeLandlock(h *enforce.Host, seccompMode int) {
	abi, err := landlock.ABI()
	if err == nil {
		h.LandlockABI = abi
		return
	}
	var why string
	switch {
	case errors.Is(err, unix.ENOSYS):
		why = "not built into kernel"
	case errors.Is(err, unix.EOPNOTSUPP):
		why = "disabled at boot (lsm=)"
	default:
		why = "refused"
	}
	if seccompMode == 2 {
		why += " (or blocked by the seccomp filter skillrun itself runs under)"
	}
	problem(h, "landlock: %s: %v", why, err)
}

// statusField returns the value of a "Name:\tvalue" line of /proc/<pid>/status.
func statusField(status, name string) (string, bool) {
	sc := bufio.NewScanner(strings.NewReader(status))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && k == name {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// missingWords returns the wanted words absent from a space-separated list.
func missingWords(list string, want ...string) []string {
	have := strings.Fields(list)
	var missing []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			missing = append(missing, w)
		}
	}
	return missing
}

func readIntFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}
