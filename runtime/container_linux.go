//go:build linux

package runtime

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"syscall"
	"time"

	"github.com/opencontainers/cgroups"
	_ "github.com/opencontainers/cgroups/devices" // device rules of the cgroup
	devconfig "github.com/opencontainers/cgroups/devices/config"
	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/internal/phase"
	"github.com/skillrun/skillrun/landlock/shim"
	"github.com/skillrun/skillrun/seccomp"
)

// statusTimeout bounds how long the shim may take to report that Landlock
// is in place; past it the sandbox is torn down as a setup failure.
const statusTimeout = 30 * time.Second

// container is the Linux sandbox: one libcontainer container per
// invocation, whose process is skillrun's own shim.
type container struct {
	spec     Spec
	c        *libcontainer.Container
	proc     *libcontainer.Process
	abi      int
	pid      int
	lifeline *os.File
	status   *os.File      // the shim's status pipe
	statusRd *bufio.Reader // its reader, across the first and last lines
	mu       sync.Mutex
	cleaned  bool
}

// NewContainer returns the container sandbox for spec. Nothing happens on
// the host until Start.
func NewContainer(spec Spec) (Sandbox, error) {
	if spec.ShimBinary == "" || spec.StateDir == "" || spec.ContainerDir == "" {
		return nil, fmt.Errorf("%w: spec lacks the shim binary or a state directory", ErrSetup)
	}
	if goruntime.GOARCH != "amd64" {
		// The seccomp profile is written for amd64 alone.
		return nil, fmt.Errorf("%w: the seccomp profile covers amd64 only, this is %s", ErrIsolationUnavailable, goruntime.GOARCH)
	}
	return &container{spec: spec}, nil
}

func (s *container) Isolation() enforce.Isolation { return enforce.IsolationContainer }
func (s *container) LandlockABI() int             { return s.abi }
func (s *container) Pid() int                     { return s.pid }

// Start builds the rootfs, starts the container and waits for the shim to
// report that Landlock is in place. Any failure undoes everything.
func (s *container) Start() (err error) {
	defer func() {
		if err != nil {
			_ = s.Destroy()
			err = fmt.Errorf("%w: %w", ErrSetup, err)
		}
	}()
	rootfs := filepath.Join(s.spec.StateDir, "rootfs")
	if err := s.prepareRootfs(rootfs); err != nil {
		return err
	}
	shimConfig, err := s.writeShimConfig()
	if err != nil {
		return err
	}
	cfg, err := s.config(rootfs, shimConfig)
	if err != nil {
		return err
	}
	phase.Mark("container-config")
	if s.c, err = libcontainer.Create(s.spec.ContainerDir, s.spec.InvocationID, cfg); err != nil {
		return fmt.Errorf("create container: %w", err)
	}
	phase.Mark("container-create")
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("status pipe: %w", err)
	}
	s.status = statusR // read again at the end: how the skill ended
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		statusW.Close()
		return fmt.Errorf("lifeline pipe: %w", err)
	}
	defer lifeR.Close()
	s.lifeline = lifeW // held until Destroy; its close tells the shim we are gone
	noNewPrivs := true
	s.proc = &libcontainer.Process{
		Args:            []string{enforce.ShimPath, shim.ShimCommand, enforce.ShimConfigPath},
		Env:             s.spec.Env(enforce.SocketPath),
		Cwd:             "/",
		Stdin:           s.spec.Stdin,
		Stdout:          s.spec.Stdout,
		Stderr:          s.spec.Stderr,
		ExtraFiles:      []*os.File{statusW, lifeR},
		Init:            true,
		NoNewPrivileges: &noNewPrivs,
		LogLevel:        "3", // numeric: libcontainer's init rejects level names
	}
	err = s.c.Run(s.proc)
	statusW.Close()
	if err != nil {
		return fmt.Errorf("start container: %w", err)
	}
	phase.Mark("container-init")
	if pid, err := s.proc.Pid(); err == nil {
		s.pid = pid
	}
	defer phase.Mark("shim-ready")
	if err := s.readStatus(statusR); err != nil {
		return err
	}
	// Checked from outside as well: the kernel's word that the shim, and
	// so the skill it started, runs under a seccomp filter.
	return checkSeccompMode(s.pid)
}

// readStatus reads the entrypoint shim's report and records the ABI.
func (s *container) readStatus(r *os.File) error {
	s.statusRd = bufio.NewReader(r)
	return readStatusLine(r, s.statusRd, &s.abi)
}

// readStatusInto reads the shim's one-line report from the status pipe.
func (s *container) readStatusInto(r *os.File, abi *int) error {
	return readStatusLine(r, bufio.NewReader(r), abi)
}

func readStatusLine(r *os.File, rd *bufio.Reader, abi *int) error {
	_ = r.SetReadDeadline(time.Now().Add(statusTimeout))
	line, err := rd.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("shim status: %w (the shim exited or hung before confining the skill)", err)
	}
	var st shim.Status
	if err := json.Unmarshal(line, &st); err != nil {
		return fmt.Errorf("shim status %q: %w", line, err)
	}
	if st.Error != "" {
		return fmt.Errorf("shim: %s: %s", st.Step, st.Error)
	}
	if !st.Seccomp {
		return fmt.Errorf("shim status %q: the shim did not report its seccomp filter loaded", line)
	}
	if abi != nil {
		*abi = st.LandlockABI
	}
	return nil
}

// checkSeccompMode requires the process pid to be in seccomp filter mode
// (Seccomp: 2 in /proc/PID/status).
func checkSeccompMode(pid int) error {
	if pid <= 0 {
		return errors.New("seccomp check: the shim's pid is unknown")
	}
	path := fmt.Sprintf("/proc/%d/status", pid)
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("seccomp check: %w", err)
	}
	if mode, ok := statusField(string(data), "Seccomp"); !ok || mode != "2" {
		return fmt.Errorf("seccomp check: %s says Seccomp %q, want 2 (filter mode)", path, mode)
	}
	return nil
}

// prepareRootfs makes the empty root the mounts go into, with the
// merged-/usr symlinks a mount cannot express.
func (s *container) prepareRootfs(rootfs string) error {
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	for _, m := range s.spec.Plan.Mounts {
		if m.Kind != "symlink" {
			continue
		}
		if err := os.Symlink(m.Source, filepath.Join(rootfs, m.Target)); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("rootfs symlink %s: %w", m.Target, err)
		}
	}
	return nil
}

func (s *container) writeShimConfig() (string, error) {
	data, err := json.Marshal(s.shimConfig())
	if err != nil {
		return "", err
	}
	path := filepath.Join(s.spec.StateDir, "shim.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("shim config: %w", err)
	}
	return path, nil
}

// shimConfig is the shim's configuration for the entrypoint; Exec reuses it
// for commands run into the sandbox, with another argv.
func (s *container) shimConfig() shim.Config {
	p := s.spec.Plan
	return shim.Config{
		Protocol:       shim.Protocol,
		Entrypoint:     p.Entrypoint,
		Args:           s.spec.Args,
		Env:            s.spec.Env(enforce.SocketPath),
		Dir:            enforce.SkillPath,
		UID:            s.spec.UID,
		GID:            s.spec.GID,
		Landlock:       p.Landlock,
		MinLandlockABI: s.spec.MinLandlockABI,
		Seccomp:        seccomp.Program(),
		AllowDegraded:  s.spec.AllowDegraded,
		Rlimits:        Rlimits(p.Limits),
	}
}

func (s *container) Wait() (Exit, error) {
	if s.proc == nil {
		return Exit{}, fmt.Errorf("%w: not started", ErrSetup)
	}
	st, err := s.proc.Wait()
	if st == nil {
		return Exit{}, fmt.Errorf("wait: %w", err)
	}
	e := exitOf(st)
	if e.Signal == nil {
		e.Signal = s.endSignal()
	}
	e.OOMKilled = oomKilled(CgroupPath(s.spec.InvocationID))
	return e, nil
}

// endSignal reads the shim's last status line: the signal that killed the
// skill, which its exit code (128+N) alone cannot tell from an exit(128+N).
func (s *container) endSignal() os.Signal {
	if s.statusRd == nil {
		return nil
	}
	_ = s.status.SetReadDeadline(time.Now().Add(time.Second))
	line, err := s.statusRd.ReadBytes('\n')
	if err != nil {
		return nil
	}
	var st shim.Status
	if json.Unmarshal(line, &st) != nil || !st.Ended || st.Signal <= 0 {
		return nil
	}
	return syscall.Signal(st.Signal)
}

func (s *container) Signal(sig os.Signal) error {
	if s.proc == nil {
		return ErrSetup
	}
	return s.proc.Signal(sig)
}

// Kill kills the shim, pid 1 of the sandbox's pid namespace: the kernel
// then kills every other process in it.
func (s *container) Kill() error {
	if s.c == nil {
		return nil
	}
	if err := s.c.Signal(unix.SIGKILL); err != nil && !errors.Is(err, libcontainer.ErrNotRunning) {
		return err
	}
	return nil
}

// Destroy kills what is left, removes the cgroup and container state, and
// deletes the rootfs and shim config.
func (s *container) Destroy() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cleaned {
		return nil
	}
	s.cleaned = true
	var errs []error
	if s.lifeline != nil {
		s.lifeline.Close()
	}
	if s.status != nil {
		s.status.Close()
	}
	if s.c != nil {
		_ = s.Kill()
		if s.proc != nil {
			_, _ = s.proc.Wait()
		}
		if err := s.c.Destroy(); err != nil {
			errs = append(errs, err)
		}
	} else if c, err := libcontainer.Load(s.spec.ContainerDir, s.spec.InvocationID); err == nil {
		// Create may have left state behind before failing.
		_ = c.Signal(unix.SIGKILL)
		errs = append(errs, c.Destroy())
	}
	phase.Mark("container-destroy")
	errs = append(errs, os.RemoveAll(s.spec.StateDir))
	return errors.Join(errs...)
}

// DestroyContainer removes a container a dead supervisor left behind, by
// id: what `skillrun gc` calls. A container that no longer exists is fine.
func DestroyContainer(containerDir, id string) error {
	c, err := libcontainer.Load(containerDir, id)
	if errors.Is(err, libcontainer.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load container %s: %w", id, err)
	}
	if err := c.Signal(unix.SIGKILL); err != nil && !errors.Is(err, libcontainer.ErrNotRunning) {
		return fmt.Errorf("kill container %s: %w", id, err)
	}
	if err := c.Destroy(); err != nil {
		return fmt.Errorf("destroy container %s: %w", id, err)
	}
	return nil
}

// sandboxDevices are the only device nodes in the sandbox's /dev.
var sandboxDevices = []struct {
	path         string
	major, minor int64
}{{"/dev/null", 1, 3}, {"/dev/zero", 1, 5}, {"/dev/full", 1, 7}, {"/dev/random", 1, 8}, {"/dev/urandom", 1, 9}}

func devices() ([]*devconfig.Device, []*devconfig.Rule) {
	var devs []*devconfig.Device
	var rules []*devconfig.Rule
	for _, d := range sandboxDevices {
		rule := devconfig.Rule{Type: devconfig.CharDevice, Major: d.major, Minor: d.minor, Permissions: "rwm", Allow: true}
		devs = append(devs, &devconfig.Device{Path: d.path, FileMode: 0o666, Rule: rule})
		rules = append(rules, &rule)
	}
	return devs, rules
}

func (s *container) cgroup(rules []*devconfig.Rule) *cgroups.Cgroup {
	l := s.spec.Plan.Limits
	pids := l.PidsMax
	return &cgroups.Cgroup{
		Path: CgroupPath(s.spec.InvocationID),
		Resources: &cgroups.Resources{
			Memory:    l.MemoryBytes,
			PidsLimit: &pids,
			CpuQuota:  l.CPUMillis * 100,
			CpuPeriod: 100000,
			Devices:   rules,
		},
	}
}
