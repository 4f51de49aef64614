package runtime

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"

	"github.com/skillrun/skillrun/enforce"
)

// Spec is everything a sandbox needs to start one invocation's entrypoint.
type Spec struct {
	Plan         enforce.Plan
	InvocationID string
	TenantID     string
	Args         []string // the skill's own arguments
	SocketPath   string   // host path of the broker socket
	StateDir     string   // per-invocation directory for rootfs and shim config
	ContainerDir string   // libcontainer's state root, shared by invocations
	UID, GID     int      // the invocation's own unprivileged ids
	ShimBinary   string   // host path of the static shim binary (skillrun-shim, or skillrun itself)
	SkillSource  string   // host copy of the skill tree that appears at enforce.SkillPath

	MinLandlockABI int  // fail closed below this Landlock ABI…
	AllowDegraded  bool // …unless the operator allowed it

	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Logger         *slog.Logger
}

// Env is the skill's whole environment (DESIGN §4): the four CYBEROS_*
// variables and fixed, safe PATH, HOME and LANG.
func (s Spec) Env(socketInSandbox string) []string {
	return []string{
		"CYBEROS_BROKER_SOCKET=" + socketInSandbox,
		"CYBEROS_SKILL_ID=" + s.Plan.SkillID,
		"CYBEROS_INVOCATION_ID=" + s.InvocationID,
		"CYBEROS_TENANT_ID=" + s.TenantID,
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
		"HOME=/tmp",
		"LANG=C.UTF-8",
	}
}

// Exit is how the entrypoint ended.
type Exit struct {
	Code      int       // the exit code, or 128+N when killed by signal N
	Signal    os.Signal // the signal that killed it, if any
	OOMKilled bool      // the memory cgroup's OOM killer killed a process
}

// Sandbox runs one invocation's entrypoint.
type Sandbox interface {
	// Start starts the entrypoint; an error means it never ran.
	Start() error
	// Wait waits for the entrypoint to end.
	Wait() (Exit, error)
	// Signal sends sig to the entrypoint.
	Signal(sig os.Signal) error
	// Kill kills every process of the sandbox.
	Kill() error
	// Destroy removes everything the sandbox left on the host. It is safe
	// to call more than once and after a failed Start.
	Destroy() error
	// Isolation is the level this sandbox enforces.
	Isolation() enforce.Isolation
	// LandlockABI is the Landlock ABI the shim really enforced (0: none).
	LandlockABI() int
	// Pid is the host pid of the sandbox's first process.
	Pid() int
	// Exec runs a command in the running sandbox, confined exactly as the
	// entrypoint is, and waits for it; when ctx ends the command and all
	// it started are killed.
	Exec(ctx context.Context, req ExecRequest) (Exit, error)
}

// ExecRequest is a command to run in a live sandbox (the Bash tool's).
type ExecRequest struct {
	Argv           []string // argv[0] is an absolute path inside the sandbox
	Dir            string   // working directory; empty: the skill folder
	Stdout, Stderr io.Writer
}

// Errors of the sandbox.
var (
	// ErrSetup wraps every failure to build the sandbox: the skill never ran.
	ErrSetup = errors.New("sandbox setup failed")
	// ErrIsolationUnavailable means container isolation was asked for on a
	// host (or build) that cannot provide it.
	ErrIsolationUnavailable = errors.New("container isolation unavailable")
)

// CgroupPath is where an invocation's cgroup lives under each hierarchy.
func CgroupPath(invocationID string) string { return "/skillrun/" + invocationID }
