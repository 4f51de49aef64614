//go:build !linux

package landlock

import (
	"errors"
	"fmt"
)

// Restrict fails with an error wrapping errors.ErrUnsupported: Landlock
// exists only on Linux, and a caller that asked for it must not run the
// skill as if it were confined.
func Restrict(Plan, int, bool) (Result, error) {
	return Result{}, fmt.Errorf("landlock restrict: %w", errors.ErrUnsupported)
}
