package landlock

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// ABI returns the Landlock ABI version of the running kernel (1 or more).
//
// It calls landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
// directly so that a blocked or missing syscall is an error, not a silent
// downgrade. The error wraps the errno: ENOSYS means Landlock is not built
// into the kernel (or a seccomp filter answers for it), EOPNOTSUPP that it is
// built in but not enabled at boot (lsm=). Both also match
// errors.ErrUnsupported.
func ABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	return int(v), nil
}
