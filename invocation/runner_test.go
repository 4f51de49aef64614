package invocation

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/skillrun/skillrun/runtime"
)

// execOnly is a sandbox whose Exec reports the command it got; the rest of
// runtime.Sandbox is not used by the runner.
type execOnly struct {
	runtime.Sandbox
	got chan []string
}

func (s execOnly) Exec(_ context.Context, req runtime.ExecRequest) (runtime.Exit, error) {
	s.got <- req.Argv
	return runtime.Exit{Code: 3}, nil
}

// TestRunnerWaitsForTheSandbox: a Bash call can arrive before Start has
// returned and the sandbox is bound (the skill starts just before the shim
// reports): it waits for the sandbox rather than failing, and gives up only
// when its own context ends.
func TestRunnerWaitsForTheSandbox(t *testing.T) {
	var r sandboxRunner
	sb := execOnly{got: make(chan []string, 1)}
	type res struct {
		code int
		err  error
	}
	done := make(chan res, 1)
	go func() {
		code, err := r.RunCommand(context.Background(), []string{"id", "-u"}, nil, nil)
		done <- res{code, err}
	}()
	select {
	case got := <-done:
		t.Fatalf("RunCommand returned before the sandbox was bound: %+v", got)
	case <-time.After(50 * time.Millisecond):
	}
	r.bind(sb)
	got := <-done
	if got.err != nil || got.code != 3 {
		t.Fatalf("RunCommand after bind = %d, %v; want the sandbox's exit 3", got.code, got.err)
	}
	if argv := <-sb.got; len(argv) != 2 || argv[0] != "id" {
		t.Errorf("the sandbox got %q", argv)
	}

	var unbound sandboxRunner
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := unbound.RunCommand(ctx, []string{"true"}, nil, nil); !errors.Is(err, errNoSandbox) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("RunCommand with no sandbox, context ended: %v; want errNoSandbox and the deadline", err)
	}
}
