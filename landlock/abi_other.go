//go:build !linux

package landlock

import (
	"errors"
	"fmt"
)

// ABI returns 0 and an error wrapping errors.ErrUnsupported: Landlock exists
// only on Linux.
func ABI() (int, error) {
	return 0, fmt.Errorf("landlock_create_ruleset: %w", errors.ErrUnsupported)
}
