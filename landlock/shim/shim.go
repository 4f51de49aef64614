// Package shim is the sandbox's pid 1 and its exec stage: the code that
// runs inside the container, as `skillrun-shim __shim.v1 CONFIG` and
// `skillrun-shim __exec.v1 JSON` (or the same subcommands of the skillrun
// binary when no skillrun-shim is installed beside it). The shim confines
// itself with Landlock, reports on the status pipe (fd 3), starts the exec
// stage as the invocation's uid, and stays as pid 1 of the sandbox to
// forward signals and reap every child.
//
// It imports only what it needs (Landlock and the fixed paths), so that
// cmd/skillrun-shim stays a small static binary that starts in about a
// millisecond: it is started twice per invocation, on the cold-start path.
package shim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"github.com/skillrun/skillrun/landlock"
)

// Where the shim binary and its config appear inside the sandbox: the
// container runs `Path ShimCommand ConfigPath`.
const (
	Path       = landlock.ShimPath
	ConfigPath = landlock.ShimConfigPath
)

// Protocol is the version of Config and ExecSpec. The supervisor and the
// shim may be two binaries (skillrun and skillrun-shim): one upgraded
// without the other must fail at once, naming the mismatch, rather than
// read a config it does not understand. Change it with either struct.
const Protocol = 1

// The subcommands carry the protocol in their names as well as in the
// JSON: a binary of another protocol does not know the name and stops
// before it does anything, where one older than the field itself would
// ignore it (json.Unmarshal drops unknown fields) and run the skill
// without loading the seccomp program it never heard of.
const (
	ShimCommand = "__shim.v1" // the container process: ShimCommand CONFIG
	ExecCommand = "__exec.v1" // the exec stage: ExecCommand JSON
)

// setupFailed is the shim's own exit code when it could not set up
// (DESIGN §3: 125); the skill's codes pass through unchanged.
const setupFailed = 125

// ErrConfig wraps every reason a shim config is refused.
var ErrConfig = errors.New("invalid shim config")

// Config is written by the supervisor to the host file bind-mounted at
// ConfigPath.
type Config struct {
	Protocol   int      `json:"protocol"`   // must be Protocol
	Entrypoint string   `json:"entrypoint"` // absolute path inside the sandbox
	Args       []string `json:"args"`       // argv[1:] for the entrypoint
	Env        []string `json:"env"`        // the skill's whole environment
	Dir        string   `json:"dir"`        // working directory (the skill folder)
	UID        int      `json:"uid"`        // the invocation's unprivileged host uid
	GID        int      `json:"gid"`        // …and gid

	Landlock       landlock.Plan `json:"landlock"`
	MinLandlockABI int           `json:"min_landlock_abi"` // fail closed below this…
	AllowDegraded  bool          `json:"allow_degraded"`   // …unless the operator allowed degradation

	Rlimits []Rlimit `json:"rlimits"` // applied by the exec stage right before execve

	// Seccomp is the sandbox's seccomp filter (seccomp.Program): struct
	// sock_filter records in host byte order, which the shim loads on all
	// of its threads before anything else it does.
	Seccomp []byte `json:"seccomp"`
}

// maxFilter is the kernel's limit on one seccomp program (BPF_MAXINSNS).
const maxFilter = 4096

// Rlimit is one resource limit the exec stage sets. Resource is the Linux
// RLIMIT_* number; Name is for messages.
type Rlimit struct {
	Name     string `json:"name"`
	Resource int    `json:"resource"`
	Soft     uint64 `json:"soft"`
	Hard     uint64 `json:"hard"`
}

// ExecSpec is what the exec stage (ExecCommand) takes on its command line:
// from the shim, and from the rlimit-only sandbox, which runs it directly.
type ExecSpec struct {
	Protocol   int      `json:"protocol"` // must be Protocol
	Entrypoint string   `json:"entrypoint"`
	Args       []string `json:"args"`
	Env        []string `json:"env"`
	Dir        string   `json:"dir"`
	Rlimits    []Rlimit `json:"rlimits"`
}

// Status is the one JSON line the shim writes on fd 3: the Landlock ABI
// in force once the skill has started, or the step that failed.
type Status struct {
	LandlockABI int `json:"landlock_abi"`
	// Ended, ExitCode and Signal are the last line, written when the
	// skill has ended: Signal is the signal that killed it, 0 if none.
	Ended    bool             `json:"ended,omitempty"`
	ExitCode int              `json:"exit_code,omitempty"`
	Signal   int              `json:"signal,omitempty"`
	Landlock *landlock.Result `json:"landlock,omitempty"` // the whole record, on success
	// Seccomp is set once the filter is loaded on every thread of the shim,
	// and so on everything it starts.
	Seccomp bool   `json:"seccomp,omitempty"`
	Error   string `json:"error,omitempty"`
	Step    string `json:"step,omitempty"`
}

// Validate refuses a config the shim must not act on; the supervisor may
// call it before writing the config, the shim calls it after reading.
func (c Config) Validate() error {
	if err := checkProtocol(c.Protocol); err != nil {
		return err
	}
	if !filepath.IsAbs(c.Entrypoint) || filepath.Clean(c.Entrypoint) != c.Entrypoint {
		return fmt.Errorf("%w: entrypoint %q is not an absolute clean path", ErrConfig, c.Entrypoint)
	}
	if c.Dir != "" && !filepath.IsAbs(c.Dir) {
		return fmt.Errorf("%w: dir %q is not absolute", ErrConfig, c.Dir)
	}
	// The skill never runs as root: uid 0 would keep the shim's capabilities.
	if c.UID <= 0 || c.GID <= 0 || c.UID >= math.MaxUint32 || c.GID >= math.MaxUint32 {
		return fmt.Errorf("%w: uid %d, gid %d: the skill needs an unprivileged uid and gid", ErrConfig, c.UID, c.GID)
	}
	if n := len(c.Seccomp); n == 0 || n%8 != 0 || n/8 > maxFilter {
		return fmt.Errorf("%w: seccomp: a program of %d bytes; want 1 to %d whole 8-byte instructions", ErrConfig, n, maxFilter)
	}
	for _, r := range c.Rlimits {
		if r.Soft > r.Hard {
			return fmt.Errorf("%w: %s: soft limit %d above hard limit %d", ErrConfig, r.Name, r.Soft, r.Hard)
		}
	}
	return nil
}

// checkProtocol refuses a config or exec spec written for another version
// of the shim.
func checkProtocol(p int) error {
	if p != Protocol {
		return fmt.Errorf("%w: protocol %d, this shim speaks %d (skillrun and skillrun-shim come from different builds: install both from one)", ErrConfig, p, Protocol)
	}
	return nil
}

// Subcommand runs the part of the sandbox args[0] names, ShimCommand (Main)
// or ExecCommand (ExecStageMain), with the rest of args, and returns its exit
// code; ok is false when args name neither. Both skillrun and
// skillrun-shim start with it.
func Subcommand(args []string) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case ShimCommand:
		return Main(args[1:]), true
	case ExecCommand:
		return ExecStageMain(args[1:]), true
	}
	return 0, false
}

// parseExecSpec reads the exec stage's one argument, naming the step that
// failed.
func parseExecSpec(args []string) (ExecSpec, string, error) {
	var spec ExecSpec
	if len(args) != 1 {
		return spec, "args", fmt.Errorf("usage: %s %s JSON", Path, ExecCommand)
	}
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		return spec, "config", err
	}
	return spec, "config", checkProtocol(spec.Protocol)
}
