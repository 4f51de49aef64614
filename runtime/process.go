package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/landlock/shim"
)

// process is the rlimit-only sandbox: a plain subprocess in a process group
// of its own, as the invocation's uid when skillrun is root, with the same
// rlimits the container applies. It is the explicit fallback
// (--isolation rlimit) and all non-Linux hosts get.
type process struct {
	spec Spec
	cmd  *exec.Cmd
}

// NewProcess returns the rlimit-only sandbox for spec.
func NewProcess(spec Spec) (Sandbox, error) {
	if spec.ShimBinary == "" || spec.SkillSource == "" {
		return nil, fmt.Errorf("%w: spec lacks the skillrun binary or the skill copy", ErrSetup)
	}
	return &process{spec: spec}, nil
}

func (p *process) Isolation() enforce.Isolation { return enforce.IsolationRlimitOnly }
func (p *process) LandlockABI() int             { return 0 }

func (p *process) Pid() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Start runs the exec stage, which applies the rlimits and execs the
// entrypoint from the skill copy.
func (p *process) Start() error {
	plan := p.spec.Plan
	rel, err := filepath.Rel(enforce.SkillPath, plan.Entrypoint)
	if err != nil || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("%w: entrypoint %s outside the skill folder", ErrSetup, plan.Entrypoint)
	}
	spec, err := json.Marshal(shim.ExecSpec{
		Protocol:   shim.Protocol,
		Entrypoint: filepath.Join(p.spec.SkillSource, rel),
		Args:       p.spec.Args,
		Env:        p.spec.Env(p.spec.SocketPath),
		Dir:        p.spec.SkillSource,
		Rlimits:    Rlimits(plan.Limits),
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	cmd := exec.Command(p.spec.ShimBinary, shim.ExecCommand, string(spec))
	cmd.Env = []string{} // not nil: nil would hand the skill skillrun's environment
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.spec.Stdin, p.spec.Stdout, p.spec.Stderr
	cmd.SysProcAttr = processAttr(p.spec)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: start %s: %w", ErrSetup, p.spec.ShimBinary, err)
	}
	p.cmd = cmd
	return nil
}

func (p *process) Wait() (Exit, error) {
	if p.cmd == nil {
		return Exit{}, fmt.Errorf("%w: not started", ErrSetup)
	}
	err := p.cmd.Wait()
	if p.cmd.ProcessState == nil {
		return Exit{}, fmt.Errorf("wait: %w", err)
	}
	return exitOf(p.cmd.ProcessState), nil
}

func (p *process) Signal(sig os.Signal) error {
	if p.cmd == nil || p.cmd.Process == nil {
		return ErrSetup
	}
	return p.cmd.Process.Signal(sig)
}

// Kill kills the whole process group, so children the skill started die
// with it.
func (p *process) Kill() error {
	if p.cmd == nil || p.cmd.Process == nil {
		return nil
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
		return err
	}
	return nil
}

func (p *process) Destroy() error { return p.Kill() }

// Exec runs a command the way Start runs the entrypoint: a subprocess with
// the same rlimits and uid, in a process group of its own that ctx's end
// kills whole. Without a container it runs on the host, like the skill.
func (p *process) Exec(ctx context.Context, req ExecRequest) (Exit, error) {
	if len(req.Argv) == 0 {
		return Exit{}, fmt.Errorf("%w: exec: no command", ErrSetup)
	}
	dir := req.Dir
	if dir == "" || dir == enforce.SkillPath {
		dir = p.spec.SkillSource
	}
	spec, err := json.Marshal(shim.ExecSpec{Protocol: shim.Protocol, Entrypoint: req.Argv[0], Args: req.Argv[1:],
		Env: p.spec.Env(p.spec.SocketPath), Dir: dir, Rlimits: Rlimits(p.spec.Plan.Limits)})
	if err != nil {
		return Exit{}, err
	}
	cmd := exec.Command(p.spec.ShimBinary, shim.ExecCommand, string(spec))
	cmd.Env = []string{}
	cmd.Stdout, cmd.Stderr = req.Stdout, req.Stderr
	cmd.SysProcAttr = processAttr(p.spec)
	if err := cmd.Start(); err != nil {
		return Exit{}, fmt.Errorf("exec: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return exitOf(cmd.ProcessState), ctx.Err()
	}
	if cmd.ProcessState == nil {
		return Exit{}, fmt.Errorf("exec: wait failed")
	}
	return exitOf(cmd.ProcessState), nil
}
