package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
)

// CommandRunner runs argv inside the invocation's own sandbox, confined
// exactly as the skill is. The runtime provides it; a Bash command never
// runs on the host.
type CommandRunner interface {
	RunCommand(ctx context.Context, argv []string, stdout, stderr io.Writer) (exitCode int, err error)
}

// Bash tool limits.
const (
	DefaultBashTimeout = 2 * time.Minute
	MaxBashTimeout     = 10 * time.Minute
	MaxBashOutput      = 1 << 20 // per stream
	maxBashCommand     = 64 << 10
)

// BashShell is the shell commands run with, inside the sandbox; its path
// is under /usr so the plan's read+exec grant covers it without a link.
const BashShell = "/usr/bin/bash"

// ErrCommandTimeout means a command ran past its timeout and was killed
// with everything it started.
var ErrCommandTimeout = errors.New("command timed out")

// Bash runs a shell command in the sandbox after the policy checked every
// part of it (DESIGN §6).
type Bash struct {
	runner CommandRunner
}

// NewBash returns the Bash tool running commands through r.
func NewBash(r CommandRunner) Bash { return Bash{runner: r} }

type bashArgs struct {
	Command   string `json:"command"`
	TimeoutMS *int64 `json:"timeout_ms,omitempty"`
}

// BashResult is what the skill gets back.
type BashResult struct {
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	ExitCode  int    `json:"exit_code"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Spec is Bash's entry in NativeSpecs.
func (Bash) Spec() Spec { return nativeSpec("Bash") }

func decodeBash(raw json.RawMessage) (bashArgs, error) {
	var a bashArgs
	if err := jsonrpc.DecodeParams(raw, &a); err != nil {
		return a, err
	}
	switch {
	case strings.TrimSpace(a.Command) == "":
		return a, &jsonrpc.ParamsError{Field: "command", Detail: "required"}
	case len(a.Command) > maxBashCommand:
		return a, &jsonrpc.ParamsError{Field: "command", Detail: fmt.Sprintf("longer than %d bytes", maxBashCommand)}
	case a.TimeoutMS != nil && (*a.TimeoutMS <= 0 || time.Duration(*a.TimeoutMS)*time.Millisecond > MaxBashTimeout):
		return a, &jsonrpc.ParamsError{Field: "timeout_ms", Detail: fmt.Sprintf("must be between 1 and %d", MaxBashTimeout.Milliseconds())}
	}
	return a, nil
}

// Prepare checks the command against the Bash rules before anything runs.
func (Bash) Prepare(args json.RawMessage, e *enforce.Enforcer) (json.RawMessage, error) {
	a, err := decodeBash(args)
	if err != nil {
		return nil, err
	}
	if err := e.CheckBash(a.Command); err != nil {
		return nil, err
	}
	return args, nil
}

// Invoke runs the checked command with capped output and a timeout.
func (b Bash) Invoke(ctx context.Context, c Call) (any, error) {
	a, err := decodeBash(c.Args)
	if err != nil {
		return nil, err
	}
	if b.runner == nil {
		return nil, errors.New("bash: no sandbox to run commands in")
	}
	timeout := DefaultBashTimeout
	if a.TimeoutMS != nil {
		timeout = time.Duration(*a.TimeoutMS) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stdout, stderr := &cappedBuffer{max: MaxBashOutput}, &cappedBuffer{max: MaxBashOutput}
	code, err := b.runner.RunCommand(ctx, []string{BashShell, "-c", a.Command}, stdout, stderr)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, Fail("timeout", fmt.Errorf("%w after %s: %w", ErrCommandTimeout, timeout, err))
	}
	if err != nil {
		return nil, fmt.Errorf("bash: %w", err)
	}
	return &BashResult{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: code,
		Truncated: stdout.truncated || stderr.truncated}, nil
}

// cappedBuffer keeps the first max bytes written and swallows the rest, so
// a command that floods its output cannot grow the broker. It does not
// embed bytes.Buffer: its ReadFrom would let io.Copy bypass the cap.
type cappedBuffer struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.truncated = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}

func (c *cappedBuffer) String() string { return c.buf.String() }

// nativeSpec returns a native tool's entry in NativeSpecs.
func nativeSpec(name string) Spec {
	for _, s := range NativeSpecs() {
		if s.Name == name {
			return s
		}
	}
	panic("tools: no native spec named " + name)
}
