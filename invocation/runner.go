package invocation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/skillrun/skillrun/runtime"
)

// sandboxRunner runs the Bash tool's commands inside the invocation's own
// sandbox. The broker (and so the tool) exists before the sandbox does, and
// the skill can call Bash before Start has returned (its entrypoint starts
// just before the shim reports), so a command waits for the sandbox to be
// bound, or for its call's context to end.
type sandboxRunner struct {
	once  sync.Once
	ready chan struct{} // closed by bind
	mu    sync.Mutex
	sb    runtime.Sandbox
}

var errNoSandbox = errors.New("the sandbox is not running")

func (r *sandboxRunner) init() { r.once.Do(func() { r.ready = make(chan struct{}) }) }

// bind hands the started sandbox to the commands waiting for it; only the
// first call counts.
func (r *sandboxRunner) bind(sb runtime.Sandbox) {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sb == nil {
		r.sb = sb
		close(r.ready)
	}
}

func (r *sandboxRunner) RunCommand(ctx context.Context, argv []string, stdout, stderr io.Writer) (int, error) {
	r.init()
	select {
	case <-r.ready:
	case <-ctx.Done():
		return 0, fmt.Errorf("%w: %w", errNoSandbox, ctx.Err())
	}
	r.mu.Lock()
	sb := r.sb
	r.mu.Unlock()
	e, err := sb.Exec(ctx, runtime.ExecRequest{Argv: argv, Stdout: stdout, Stderr: stderr})
	return e.Code, err
}
