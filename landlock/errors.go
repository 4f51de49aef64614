package landlock

import "errors"

// Errors of Restrict. Each is wrapped with the operation and the path or
// ABI it concerns; test with errors.Is.
var (
	// ErrABITooLow means the kernel offers a Landlock ABI below the
	// required minimum and degradation was not allowed: the skill must not
	// run. When the ABI query itself failed, the error also wraps its errno
	// (ENOSYS, EOPNOTSUPP), which matches errors.ErrUnsupported.
	ErrABITooLow = errors.New("landlock ABI below the required minimum")
	// ErrRuleType means a rule for a single file names a directory in the
	// sandbox; granting it would grant the whole tree beneath.
	ErrRuleType = errors.New("landlock file rule names a directory")
	// ErrBadRule means a rule's path is not absolute and clean.
	ErrBadRule = errors.New("invalid landlock rule")
)
