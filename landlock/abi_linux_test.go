package landlock

import (
	"errors"
	"testing"

	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// TestABIMatchesGoLandlock checks ABI against go-landlock's raw query: both
// must see the same kernel, including the same errno when Landlock is absent.
func TestABIMatchesGoLandlock(t *testing.T) {
	got, err := ABI()
	want, wantErr := llsyscall.LandlockGetABIVersion()
	if wantErr != nil {
		if !errors.Is(err, wantErr) {
			t.Fatalf("ABI() = %d, %v; go-landlock says %v", got, err, wantErr)
		}
		return
	}
	if err != nil || got != want {
		t.Fatalf("ABI() = %d, %v; go-landlock says %d", got, err, want)
	}
}

// TestABIErrorsMatchUnsupported pins the contract the probe and the shim rely
// on: both "absent" errnos, once wrapped, still match errors.ErrUnsupported.
func TestABIErrorsMatchUnsupported(t *testing.T) {
	for _, errno := range []unix.Errno{unix.ENOSYS, unix.EOPNOTSUPP} {
		if !errors.Is(errno, errors.ErrUnsupported) {
			t.Errorf("%v does not match errors.ErrUnsupported", errno)
		}
	}
}
