package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// DefaultUIDBase and DefaultUIDCount are the default range of host uids
// handed to invocations: far above any login user, one per concurrent
// invocation, so RLIMIT_NPROC and kill() permissions are per invocation.
const (
	DefaultUIDBase  = 200000
	DefaultUIDCount = 1000
)

// ErrNoFreeUID means every uid of the range is held by a live invocation.
var ErrNoFreeUID = errors.New("no free uid in the invocation range")

// UIDLease holds one uid of the range until Release. The lease is an
// flock on a file in the state dir, so a supervisor that dies releases it
// with its last file descriptor and no stale lease can outlive it.
type UIDLease struct {
	UID  int
	file *os.File
}

// HostUIDLeaseDir is where root's supervisors lease uids: one directory for
// the whole host, whatever state root each invocation uses, because a uid
// is a host-wide identity (two invocations under different --root must
// never share one: the uid owns the broker socket).
const HostUIDLeaseDir = "/run/skillrun/uids"

// UIDLeaseDir is the lease directory for a supervisor with state root
// root: the host-wide one as root, the state root's own otherwise (an
// unprivileged supervisor cannot switch uids, so leases only label it).
func UIDLeaseDir(root string) string {
	if os.Geteuid() == 0 {
		return HostUIDLeaseDir
	}
	return filepath.Join(root, "uids")
}

// LeaseUID takes the lowest free uid in [base, base+count).
func LeaseUID(dir string, base, count int) (*UIDLease, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lease uid: %w", err)
	}
	for uid := base; uid < base+count; uid++ {
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(uid)+".lock"), os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("lease uid: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				continue
			}
			return nil, fmt.Errorf("lease uid %d: %w", uid, err)
		}
		return &UIDLease{UID: uid, file: f}, nil
	}
	return nil, fmt.Errorf("%d uids from %d: %w", count, base, ErrNoFreeUID)
}

// Release gives the uid back.
func (l *UIDLease) Release() error {
	if l == nil || l.file == nil {
		return nil
	}
	err := l.file.Close()
	l.file = nil
	return err
}
