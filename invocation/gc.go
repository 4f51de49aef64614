package invocation

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/skillrun/skillrun/runtime"
	"github.com/skillrun/skillrun/store"
)

// OutcomeSupervisorLost is recorded by gc for an invocation whose
// supervisor died without finishing it.
const OutcomeSupervisorLost Outcome = "supervisor_lost"

// Collected is what gc removed for one invocation.
type Collected struct {
	InvocationID string
	Removed      []string
	Err          error
}

// GC finds active invocations whose supervisor is gone and removes what
// they left: processes, container state, cgroups, the broker socket and the
// state directory. An invocation whose supervisor still runs is left
// alone.
func GC(ctx context.Context, root string, log *slog.Logger) ([]Collected, error) {
	st, err := store.Open(ctx, root)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	active, err := st.ActiveInvocations(ctx)
	if err != nil {
		return nil, err
	}
	var out []Collected
	for _, inv := range active {
		if alive(inv.SupervisorPID) {
			continue
		}
		c := collect(root, inv)
		payload := map[string]any{"outcome": string(OutcomeSupervisorLost), "exit_code": -1, "collected_by": "gc", "removed": c.Removed}
		if err := st.Audit(ctx, store.Row{Kind: store.KindInvokedCompleted, InvocationID: inv.ID, SkillID: inv.SkillID, Payload: mustJSON(payload)}); err != nil {
			log.Warn("gc audit", "invocation", inv.ID, "err", err)
		}
		if err := st.FinishInvocation(ctx, inv.ID, string(OutcomeSupervisorLost), -1); err != nil {
			c.Err = errors.Join(c.Err, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// alive reports whether pid is a live process. EPERM means alive but not
// ours to signal; pid reuse can only make gc skip, never remove, a live
// invocation's resources.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func collect(root string, inv store.Invocation) Collected {
	c := Collected{InvocationID: inv.ID}
	note := func(what string, err error) {
		if err != nil {
			c.Err = errors.Join(c.Err, fmt.Errorf("%s: %w", what, err))
			return
		}
		c.Removed = append(c.Removed, what)
	}
	note("container", runtime.DestroyContainer(filepath.Join(root, "containers"), inv.ID))
	note("cgroup", runtime.RemoveCgroup(runtime.CgroupPath(inv.ID)))
	// The socket path is this invocation's by its id; remove it only if it
	// is still a socket, never some other file put there since.
	if info, err := os.Lstat(inv.SocketPath); err == nil && info.Mode()&fs.ModeSocket != 0 {
		note("socket", os.Remove(inv.SocketPath))
	}
	runDir := filepath.Join(root, "run") + string(filepath.Separator)
	if strings.HasPrefix(inv.StateDir, runDir) {
		note("state", os.RemoveAll(inv.StateDir))
	}
	return c
}
