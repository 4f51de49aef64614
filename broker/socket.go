package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
)

// socketDir and the name pattern of DESIGN §3 step 4.
const (
	socketDir    = "/tmp"
	socketPrefix = "cyberos-skill-broker."
	socketSuffix = ".sock"
	maxIDLen     = 64
)

// SocketPath is the broker socket of an invocation:
// /tmp/cyberos-skill-broker.<invocation_id>.sock. The id becomes part of a
// path, so only [A-Za-z0-9_-]{1,64} is accepted: no '/', no "..", no NUL.
func SocketPath(invocationID string) (string, error) {
	if err := ValidateInvocationID(invocationID); err != nil {
		return "", err
	}
	return filepath.Join(socketDir, socketPrefix+invocationID+socketSuffix), nil
}

// ValidateInvocationID checks id against [A-Za-z0-9_-]{1,64}.
func ValidateInvocationID(id string) error {
	if len(id) == 0 || len(id) > maxIDLen {
		return fmt.Errorf("%w: length %d, want 1 to %d", ErrInvalidInvocationID, len(id), maxIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%w: byte %d is not in [A-Za-z0-9_-]", ErrInvalidInvocationID, i)
		}
	}
	return nil
}

// Owner is who the socket file belongs to: the skill's uid and gid, so the
// unprivileged skill can connect to a 0600 socket. -1 leaves that id as
// created (the broker's own), as with os.Chown; KeepOwner leaves both.
// The zero value means root:root.
type Owner struct {
	UID, GID int
}

// KeepOwner leaves the socket owned by the broker's own uid and gid.
var KeepOwner = Owner{UID: -1, GID: -1}

// Listener is the broker's listening socket. It is a net.Listener.
type Listener struct {
	path string
	ln   *net.UnixListener
	made fs.FileInfo // the socket file as created, to recognise it at Close

	closeOnce sync.Once
	closeErr  error
}

// Listen creates a Unix socket at path with mode 0600, owned by owner.
//
// The socket is bound inside a fresh 0700 directory next to path, given its
// mode and owner there, and then hard-linked to path: it only ever appears
// at path complete, and link(2) fails rather than replacing anything, so an
// existing path — a live socket, a stale one, any file — is a collision
// (ErrSocketCollision) and is never unlinked. (Setting the umask around
// bind would also work, but the umask is process-wide: every goroutine
// creating a file meanwhile would get the socket's mode too.)
//
// The directory of path must not be writable by the skill's uid except
// under the sticky bit, as /tmp is: otherwise the skill could remove and
// replace the socket by name.
func Listen(path string, owner Owner) (*Listener, error) {
	if err := existing(path); err != nil {
		return nil, err
	}
	// The private directory holds the socket until it is ready; it lives
	// beside path so the link stays on one filesystem.
	dir, err := os.MkdirTemp(filepath.Dir(path), ".skillrun-sock-")
	if err != nil {
		return nil, fmt.Errorf("broker: listen %s: %w", path, err)
	}
	l, err := bindAndLink(dir, path, owner)
	// One cleanup for every outcome: the private directory always goes; a
	// failure closes the listener, and removes path only if it was made.
	rmErr := os.RemoveAll(dir)
	switch {
	case err != nil:
		if l != nil {
			l.ln.Close()
		}
		return nil, err
	case rmErr != nil:
		l.Close()
		return nil, fmt.Errorf("broker: listen %s: %w", path, rmErr)
	}
	return l, nil
}

// bindAndLink binds the socket as dir/s, sets its mode and owner, and links
// it to path. The listener is returned once bound, even on failure, for the
// caller to close; path exists only on success.
func bindAndLink(dir, path string, owner Owner) (*Listener, error) {
	tmp := filepath.Join(dir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("broker: listen %s: %w", path, err)
	}
	// The file at path is removed by Close, and only if it is still ours;
	// net's own unlink-on-close would remove whatever has the temp name.
	ln.SetUnlinkOnClose(false)
	l := &Listener{path: path, ln: ln}
	if err := prepareSocket(tmp, owner); err != nil {
		return l, fmt.Errorf("broker: listen %s: %w", path, err)
	}
	if l.made, err = os.Lstat(tmp); err != nil {
		return l, fmt.Errorf("broker: listen %s: %w", path, err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return l, fmt.Errorf("broker: listen: %w: %s", ErrSocketCollision, path)
		}
		return l, fmt.Errorf("broker: listen %s: %w", path, err)
	}
	return l, nil
}

// existing reports a path that is already there, to fail early with a
// clear error; link(2) in Listen is what closes the race.
func existing(path string) error {
	_, err := os.Lstat(path)
	switch {
	case err == nil:
		return fmt.Errorf("broker: listen: %w: %s", ErrSocketCollision, path)
	case errors.Is(err, fs.ErrNotExist):
		return nil
	}
	return fmt.Errorf("broker: listen %s: %w", path, err)
}

func prepareSocket(tmp string, owner Owner) error {
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	if owner.UID == -1 && owner.GID == -1 {
		return nil
	}
	return os.Lchown(tmp, owner.UID, owner.GID)
}

// Path is the socket's path.
func (l *Listener) Path() string { return l.path }

// Accept waits for the next connection.
func (l *Listener) Accept() (net.Conn, error) { return l.ln.Accept() }

// Addr is the socket's address under its final path.
func (l *Listener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

// Close stops listening and removes the socket file if the file at the
// path is still the one Listen created (same device and inode): a file
// someone put there since is left alone. It is safe to call more than
// once and concurrently; later calls return the first one's result.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		l.closeErr = errors.Join(l.ln.Close(), l.removeOurs())
	})
	return l.closeErr
}

func (l *Listener) removeOurs() error {
	fi, err := os.Lstat(l.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("broker: close %s: %w", l.path, err)
	case !os.SameFile(fi, l.made):
		return nil
	}
	// A replacement landing between Lstat and Remove would be removed;
	// under /tmp's sticky bit only root or the socket's owner can do that.
	if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("broker: close: %w", err)
	}
	return nil
}
