//go:build !linux

package runtime

import "fmt"

// NewContainer fails: containers need Linux. Callers use NewProcess.
func NewContainer(Spec) (Sandbox, error) {
	return nil, fmt.Errorf("%w on this platform", ErrIsolationUnavailable)
}
