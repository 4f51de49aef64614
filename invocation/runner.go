package invocation

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/skillrun/skillrun/runtime"
)

// sandboxRunner runs the Bash tool's commands inside the invocation's own
// sandbox. The broker (and so the tool) exists before the sandbox does, so
// the sandbox is bound once it has started.
type sandboxRunner struct {
	mu sync.Mutex
	sb runtime.Sandbox
}

var errNoSandbox = errors.New("the sandbox is not running")

func (r *sandboxRunner) bind(sb runtime.Sandbox) {
	r.mu.Lock()
	r.sb = sb
	r.mu.Unlock()
}

func (r *sandboxRunner) RunCommand(ctx context.Context, argv []string, stdout, stderr io.Writer) (int, error) {
	r.mu.Lock()
	sb := r.sb
	r.mu.Unlock()
	if sb == nil {
		return 0, errNoSandbox
	}
	e, err := sb.Exec(ctx, runtime.ExecRequest{Argv: argv, Stdout: stdout, Stderr: stderr})
	return e.Code, err
}
