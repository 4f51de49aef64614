package runtime

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/landlock"
)

// The shim is skillrun's own static binary run as the container process:
// `ShimPath __shim ShimConfigPath`. It confines itself with Landlock,
// reports on the status pipe (fd 3), starts the exec stage
// (`ShimPath __exec <json>`) as the invocation's uid, and stays as pid 1 of
// the sandbox to forward signals and reap every child.
const (
	ShimPath       = enforce.ShimPath
	ShimConfigPath = enforce.ShimConfigPath
)

// shimSetupFailed is the shim's own exit code when it could not set up
// (DESIGN §3: 125); the skill's codes pass through unchanged.
const shimSetupFailed = 125

// ErrShimConfig wraps every reason a shim config is refused.
var ErrShimConfig = errors.New("invalid shim config")

// ShimConfig is written by the supervisor to the host file bind-mounted at
// ShimConfigPath.
type ShimConfig struct {
	Entrypoint string   `json:"entrypoint"` // absolute path inside the sandbox
	Args       []string `json:"args"`       // argv[1:] for the entrypoint
	Env        []string `json:"env"`        // the skill's whole environment
	Dir        string   `json:"dir"`        // working directory (the skill folder)
	UID        int      `json:"uid"`        // the invocation's unprivileged host uid
	GID        int      `json:"gid"`        // …and gid

	Landlock       enforce.LandlockPlan `json:"landlock"`
	MinLandlockABI int                  `json:"min_landlock_abi"` // fail closed below this…
	AllowDegraded  bool                 `json:"allow_degraded"`   // …unless the operator allowed degradation

	Rlimits []Rlimit `json:"rlimits"` // applied by the exec stage right before execve
}

// Rlimit is one resource limit the exec stage sets. Resource is the Linux
// RLIMIT_* number; Name is for messages.
type Rlimit struct {
	Name     string `json:"name"`
	Resource int    `json:"resource"`
	Soft     uint64 `json:"soft"`
	Hard     uint64 `json:"hard"`
}

// execSpec is what the exec stage ("__exec") takes on its command line:
// from the shim, and from the rlimit-only sandbox, which runs it directly.
type execSpec struct {
	Entrypoint string   `json:"entrypoint"`
	Args       []string `json:"args"`
	Env        []string `json:"env"`
	Dir        string   `json:"dir"`
	Rlimits    []Rlimit `json:"rlimits"`
}

// ShimStatus is the one JSON line the shim writes on fd 3: the Landlock ABI
// in force once the skill has started, or the step that failed.
type ShimStatus struct {
	LandlockABI int `json:"landlock_abi"`
	// Ended, ExitCode and Signal are the last line, written when the
	// skill has ended: Signal is the signal that killed it, 0 if none.
	Ended    bool             `json:"ended,omitempty"`
	ExitCode int              `json:"exit_code,omitempty"`
	Signal   int              `json:"signal,omitempty"`
	Landlock *landlock.Result `json:"landlock,omitempty"` // the whole record, on success
	Error    string           `json:"error,omitempty"`
	Step     string           `json:"step,omitempty"`
}

// Validate refuses a config the shim must not act on; the supervisor may
// call it before writing the config, the shim calls it after reading.
func (c ShimConfig) Validate() error {
	if !filepath.IsAbs(c.Entrypoint) || filepath.Clean(c.Entrypoint) != c.Entrypoint {
		return fmt.Errorf("%w: entrypoint %q is not an absolute clean path", ErrShimConfig, c.Entrypoint)
	}
	if c.Dir != "" && !filepath.IsAbs(c.Dir) {
		return fmt.Errorf("%w: dir %q is not absolute", ErrShimConfig, c.Dir)
	}
	// The skill never runs as root: uid 0 would keep the shim's capabilities.
	if c.UID <= 0 || c.GID <= 0 || c.UID >= math.MaxUint32 || c.GID >= math.MaxUint32 {
		return fmt.Errorf("%w: uid %d, gid %d: the skill needs an unprivileged uid and gid", ErrShimConfig, c.UID, c.GID)
	}
	for _, r := range c.Rlimits {
		if r.Soft > r.Hard {
			return fmt.Errorf("%w: %s: soft limit %d above hard limit %d", ErrShimConfig, r.Name, r.Soft, r.Hard)
		}
	}
	return nil
}
