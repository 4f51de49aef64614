//go:build !linux

package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
)

// The file tools other than Read need a directory descriptor to work
// relative to without following links, which only the Linux code has: on
// other hosts they fail with errors.ErrUnsupported rather than write or
// list through a path a swap could redirect.

func replaceFile(path string, _ []byte) error {
	return fmt.Errorf("write %s: %w", path, errors.ErrUnsupported)
}

func editFile(path string, _ int64, _ func([]byte) ([]byte, error)) error {
	return fmt.Errorf("edit %s: %w", path, errors.ErrUnsupported)
}

// fileEntry is one thing a walk found; see the Linux version.
type fileEntry struct {
	Path  string
	Mode  fs.FileMode
	Start bool
}

// ReadAll is never called: walkTree finds nothing here.
func (en *fileEntry) ReadAll(buf []byte, _ int64) ([]byte, error) {
	return buf, fmt.Errorf("read %s: %w", en.Path, errors.ErrUnsupported)
}

// walkBudget bounds the walks of one call; see the Linux version.
type walkBudget struct {
	visits    int
	maxDepth  int
	truncated bool
}

var errStopWalk = errors.New("stop walk")

func walkTree(_ context.Context, start string, _ *walkBudget, _ func(*fileEntry) error) error {
	return fmt.Errorf("walk %s: %w", start, errors.ErrUnsupported)
}
