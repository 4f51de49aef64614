//go:build !linux

package landlock

import (
	"errors"
	"testing"
)

func TestABIUnsupported(t *testing.T) {
	v, err := ABI()
	if v != 0 || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("ABI() = %d, %v; want 0 and errors.ErrUnsupported", v, err)
	}
}
