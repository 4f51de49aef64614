//go:build linux

package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/opencontainers/runc/libcontainer"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/landlock/shim"
)

// Exec runs a command inside the running container: a new process joins
// its namespaces and cgroup and goes through the same shim, so it loads
// the same seccomp program, is confined by the same Landlock rules and
// runs as the invocation's uid with the same rlimits. It never
// runs on the host. When ctx ends, the command's whole process group is
// killed.
func (s *container) Exec(ctx context.Context, req ExecRequest) (Exit, error) {
	if s.c == nil || len(req.Argv) == 0 {
		return Exit{}, fmt.Errorf("%w: exec: no running sandbox or no command", ErrSetup)
	}
	cfg := s.shimConfig()
	cfg.Entrypoint, cfg.Args = req.Argv[0], req.Argv[1:]
	if req.Dir != "" {
		cfg.Dir = req.Dir
	}
	inline, err := json.Marshal(cfg)
	if err != nil {
		return Exit{}, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return Exit{}, fmt.Errorf("exec: status pipe: %w", err)
	}
	defer statusR.Close()
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		statusW.Close()
		return Exit{}, fmt.Errorf("exec: lifeline pipe: %w", err)
	}
	defer lifeW.Close()
	noNewPrivs := true
	proc := &libcontainer.Process{
		Args:            []string{enforce.ShimPath, shim.ShimCommand, string(inline)},
		Env:             s.spec.Env(enforce.SocketPath),
		Cwd:             "/",
		Stdout:          req.Stdout,
		Stderr:          req.Stderr,
		ExtraFiles:      []*os.File{statusW, lifeR},
		NoNewPrivileges: &noNewPrivs,
		LogLevel:        "3",
	}
	err = s.c.Run(proc)
	statusW.Close()
	lifeR.Close()
	if err != nil {
		return Exit{}, fmt.Errorf("exec into container: %w", err)
	}
	if err := s.readStatusInto(statusR, nil); err != nil {
		_ = proc.Signal(os.Kill)
		_, _ = proc.Wait()
		return Exit{}, err
	}
	done := make(chan waitResult, 1)
	go func() {
		st, err := proc.Wait()
		done <- waitResult{st, err}
	}()
	select {
	case w := <-done:
		return w.exit()
	case <-ctx.Done():
		// The shim kills the command's process group when its lifeline
		// closes; SIGKILL to the shim is the backstop.
		lifeW.Close()
		w := <-done
		e, _ := w.exit()
		return e, ctx.Err()
	}
}

type waitResult struct {
	st  *os.ProcessState
	err error
}

func (w waitResult) exit() (Exit, error) {
	if w.st == nil {
		return Exit{}, fmt.Errorf("wait: %w", w.err)
	}
	return exitOf(w.st), nil
}
