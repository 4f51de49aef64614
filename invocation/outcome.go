package invocation

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Outcome is how an invocation ended, as recorded on skill.invoked_completed.
type Outcome string

const (
	OutcomeCompleted     Outcome = "completed"      // the skill ran to its own end; the exit code is its own
	OutcomeTimeout       Outcome = "timeout"        // the budget ran out: SIGTERM at 90%, SIGKILL at 100%
	OutcomeKilled        Outcome = "killed"         // a signal not sent by the supervisor ended it (e.g. the OOM killer)
	OutcomeNoConnect     Outcome = "no_connect"     // it declared tools and never connected in time
	OutcomeNotFound      Outcome = "not_found"      // the entrypoint does not exist
	OutcomeNotExecutable Outcome = "not_executable" // the entrypoint cannot be executed
	OutcomeSetupFailed   Outcome = "setup_failed"   // skillrun could not build the sandbox or broker
	OutcomeInvalid       Outcome = "invalid"        // SKILL.md or the policy is wrong
	OutcomeUntrusted     Outcome = "untrusted"      // the content hash is not pinned
	OutcomeQuarantined   Outcome = "quarantined"    // the skill is quarantined
	OutcomeLoaderDefect  Outcome = "loader_defect"  // the plan was wider than the declaration
	OutcomeInterrupted   Outcome = "interrupted"    // the operator stopped skillrun
)

// Exit codes of DESIGN §3 besides the skill's own.
const (
	ExitTimeout       = 124
	ExitSetup         = 125
	ExitNotExecutable = 126
	ExitNotFound      = 127
)

// Error is an invocation that did not run to its own end, with the outcome
// and exit code it maps to. Its message names the cause: the step, the
// path, the syscall, and the command that fixes it where there is one.
type Error struct {
	Outcome  Outcome
	ExitCode int
	Err      error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func fail(o Outcome, code int, format string, args ...any) *Error {
	return &Error{Outcome: o, ExitCode: code, Err: fmt.Errorf(format, args...)}
}

// ErrCollision means the broker socket path is taken by someone else.
var ErrCollision = errors.New("socket path collision")

// mustJSON encodes an audit payload built here from plain values.
func mustJSON(v map[string]any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{"payload_error":` + fmt.Sprintf("%q", err.Error()) + `}`)
	}
	return b
}
