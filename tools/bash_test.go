package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
	"github.com/skillrun/skillrun/skill"
)

// processRunner runs commands as local processes in a group of their own:
// a real runner for testing the tool's own behaviour (caps, timeouts, exit
// codes). That commands run inside the sandbox is tested in integration/.
type processRunner struct{}

func (processRunner) RunCommand(ctx context.Context, argv []string, stdout, stderr io.Writer) (int, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode(), nil
	case <-ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return -1, ctx.Err()
	}
}

func bashEnforcer(t *testing.T, rules string) *enforce.Enforcer {
	t.Helper()
	m, diags := skill.Parse("SKILL.md", []byte("---\nname: b\ndescription: d\nallowed-tools: "+rules+"\n---\n"))
	for _, d := range diags {
		if d.Severity == skill.SeverityError {
			t.Fatal(d)
		}
	}
	cat, _ := Catalog(NativeSpecs())
	e, _, err := enforce.Compile(skill.NewSnapshot(m, "/s", "SKILL.md", "h", nil), cat)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func runBash(t *testing.T, e *enforce.Enforcer, args string) (*BashResult, error) {
	t.Helper()
	if _, err := os.Stat(BashShell); err != nil {
		t.Skipf("%s not on this host: %v", BashShell, err)
	}
	b := NewBash(processRunner{})
	checked, err := b.Prepare(json.RawMessage(args), e)
	if err != nil {
		return nil, err
	}
	out, err := b.Invoke(t.Context(), Call{Args: checked})
	if err != nil {
		return nil, err
	}
	return out.(*BashResult), nil
}

func TestBashRunsAllowedCommands(t *testing.T) {
	e := bashEnforcer(t, "Bash(echo hi; echo err >&2; exit 3)")
	r, err := runBash(t, e, `{"command":"echo hi; echo err >&2; exit 3"}`)
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout != "hi\n" || r.Stderr != "err\n" || r.ExitCode != 3 || r.Truncated {
		t.Fatalf("result %+v", r)
	}
}

func TestBashDeniesBeforeRunning(t *testing.T) {
	e := bashEnforcer(t, "Bash(git status)")
	marker := t.TempDir() + "/ran"
	for _, cmd := range []string{"git status && touch " + marker, "git status $(touch " + marker + ")", "touch " + marker} {
		_, err := runBash(t, e, `{"command":`+strings.TrimSpace(jsonString(cmd))+`}`)
		if !errors.Is(err, enforce.ErrCommandNotAllowed) {
			t.Errorf("%q: err = %v, want command_not_allowed", cmd, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a denied command ran")
	}
}

func TestBashOutputCapAndTimeout(t *testing.T) {
	e := bashEnforcer(t, "Bash")
	r, err := runBash(t, e, `{"command":"head -c 3000000 /dev/zero"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Stdout) != MaxBashOutput || !r.Truncated {
		t.Fatalf("stdout %d bytes, truncated %t", len(r.Stdout), r.Truncated)
	}
	_, err = runBash(t, e, `{"command":"sleep 5; echo late","timeout_ms":200}`)
	f, ok := AsFailure(err)
	if !ok || f.Reason != "timeout" || !errors.Is(err, ErrCommandTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a timeout failure", err)
	}
}

func TestBashBadArgs(t *testing.T) {
	e := bashEnforcer(t, "Bash")
	for _, args := range []string{`{}`, `{"command":"  "}`, `{"command":"ls","timeout_ms":0}`, `{"command":"ls","timeout_ms":99999999}`, `{"command":"ls","cwd":"/"}`} {
		if _, err := runBash(t, e, args); !errors.Is(err, jsonrpc.ErrInvalidParams) {
			t.Errorf("%s: err = %v, want invalid params", args, err)
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
