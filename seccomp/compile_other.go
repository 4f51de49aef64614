//go:build !(linux && cgo && seccomp)

package seccomp

import (
	"errors"
	"fmt"
)

// Compile needs libseccomp: it exists only in builds for Linux with cgo and
// the seccomp build tag. Here it returns an error wrapping
// errors.ErrUnsupported.
func Compile() ([]byte, error) {
	return nil, fmt.Errorf("seccomp: compile: needs linux, cgo and the seccomp build tag: %w", errors.ErrUnsupported)
}
