package tools

import (
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// fileEntry is one thing a walk found. Path is its real path: the walk
// follows no symlink, so the path it builds is the path. dirfd and name
// locate it relative to the directory the walk has open, and are valid
// only during the visit.
type fileEntry struct {
	Path  string
	Mode  fs.FileMode // type bits only: 0 for a regular file
	Start bool        // the walk's start, not something found under it
	dirfd int         // -1 for the start
	name  string
}

// errTooBig means a file over the size a caller reads.
var errTooBig = errors.New("file over the size cap")

// ReadAll reads the entry, which must be a regular file of at most max
// bytes (else errTooBig), appending to buf. It refuses a symlink, or
// anything but a regular file, put there since the walk listed it.
//
// It is Grep's hot path, so it keeps to raw descriptors: open, fstat,
// read, close. O_NONBLOCK (a FIFO swapped in must not block the open) has
// no effect on a regular file, so it is not cleared.
func (en *fileEntry) ReadAll(buf []byte, max int64) ([]byte, error) {
	if en.dirfd < 0 {
		f, err := OpenNoFollow(en.Path, os.O_RDONLY)
		if err != nil {
			return buf, err
		}
		defer f.Close()
		var size int64
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		return readFD(buf, int(f.Fd()), en.Path, size, max)
	}
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	fd, err := ignoringEINTR(func() (int, error) { return unix.Openat(en.dirfd, en.name, flags, 0) })
	if errors.Is(err, unix.ELOOP) {
		return buf, symlinkError(en.Path, err)
	}
	if err != nil {
		return buf, openError("openat", en.Path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return buf, openError("fstat", en.Path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return buf, &fs.PathError{Op: "open", Path: en.Path, Err: ErrNotRegular}
	}
	return readFD(buf, fd, en.Path, st.Size, max)
}

// readFD reads fd to its end, appending to buf; more than max bytes
// is errTooBig. size is what fstat said: a hint only, since the file may
// change while it is read.
func readFD(buf []byte, fd int, path string, size, max int64) ([]byte, error) {
	if size > max {
		return buf, errTooBig
	}
	// One byte more than the size, so that the read seeing EOF needs no
	// growing.
	buf = slices.Grow(buf, int(size)+1)
	start := len(buf)
	for {
		if int64(len(buf)-start) > max {
			return buf, errTooBig
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := ignoringEINTR(func() (int, error) { return unix.Read(fd, buf[len(buf):cap(buf)]) })
		if err != nil {
			return buf, openError("read", path, err)
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// walkTree visits start and, when it is a directory, everything under it,
// depth first in name order, a directory before its contents. It follows
// no symlink: start is opened refusing links on the way, and every
// directory below relative to its parent's descriptor with O_NOFOLLOW, so
// a link swapped in for a directory is never entered.
//
// visit returning errStopWalk ends the walk with a nil error. A directory
// below start that cannot be opened or read (removed, replaced, not
// readable) is skipped; an error opening start itself is returned.
func walkTree(ctx context.Context, start string, b *walkBudget, visit func(*fileEntry) error) error {
	fd, err := openStart(start)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return openError("fstat", start, err)
	}
	en := &fileEntry{Path: start, Mode: modeType(st.Mode), Start: true, dirfd: -1}
	if b.take() {
		return nil
	}
	if err := visit(en); err != nil {
		return stopped(err)
	}
	if en.Mode != fs.ModeDir {
		return nil
	}
	dfd, err := ignoringEINTR(func() (int, error) {
		return unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return openError("openat", start, err)
	}
	defer unix.Close(dfd)
	return stopped(walkDir(ctx, dfd, start, 0, b, visit))
}

// openStart opens start as an O_PATH descriptor refusing symlinks on the
// way; a symlink at the end is opened itself, for the caller to see.
func openStart(start string) (int, error) {
	if start == "/" {
		fd, err := unix.Open("/", unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, openError("open", start, err)
		}
		return fd, nil
	}
	if err := checkOpenPath(start); err != nil {
		return -1, err
	}
	return openat2(start, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// maxNesting caps how deep a walk descends, so that it holds at most this
// many directory descriptors open at once.
const maxNesting = 256

func walkDir(ctx context.Context, fd int, dir string, nesting int, b *walkBudget, visit func(*fileEntry) error) error {
	ents, err := readDir(fd, b)
	if err != nil {
		return nil // removed or unreadable since it was listed: skip it
	}
	for _, d := range ents {
		if err := ctx.Err(); err != nil {
			return err
		}
		en := &fileEntry{Path: joinPath(dir, d.name), Mode: d.mode, dirfd: fd, name: d.name}
		if en.Mode == modeUnknown {
			en.Mode = statMode(fd, d.name)
		}
		if err := visit(en); err != nil {
			return err
		}
		if en.Mode != fs.ModeDir || !b.descend(en.Path) {
			continue
		}
		if nesting+1 >= maxNesting {
			b.truncated = true
			continue
		}
		cfd, err := ignoringEINTR(func() (int, error) {
			return unix.Openat(fd, d.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
		if err != nil {
			continue // replaced (by a link, say) since it was listed
		}
		err = walkDir(ctx, cfd, en.Path, nesting+1, b, visit)
		unix.Close(cfd)
		if err != nil {
			return err
		}
	}
	return nil
}

// walkBudget bounds the walks of one call. A walk that runs out sets
// truncated and stops.
type walkBudget struct {
	visits    int // entries still to look at
	maxDepth  int // most '/' a path descended into may lead to; -1: any
	truncated bool
}

// take spends one visit; true means none was left.
func (b *walkBudget) take() bool {
	if b.visits <= 0 {
		b.truncated = true
		return true
	}
	b.visits--
	return false
}

// descend reports whether anything under dir can be deep enough to matter.
func (b *walkBudget) descend(dir string) bool {
	return b.maxDepth < 0 || strings.Count(dir, "/")+1 <= b.maxDepth
}

// errStopWalk is what a visit returns to end the walk early (a result cap
// was reached); walkTree then returns nil.
var errStopWalk = errors.New("stop walk")

func stopped(err error) error {
	if errors.Is(err, errStopWalk) {
		return nil
	}
	return err
}

func joinPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// modeUnknown marks a directory entry whose type getdents did not say.
const modeUnknown = fs.ModeIrregular | fs.ModeTemporary

type dirent struct {
	name string
	mode fs.FileMode
}

var direntBuffers = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// readDir lists fd sorted by name, spending one visit per entry. The
// names come from the directory the walk has open, never from a path.
func readDir(fd int, b *walkBudget) ([]dirent, error) {
	buf := direntBuffers.Get().(*[32 << 10]byte)
	defer direntBuffers.Put(buf)
	var ents []dirent
	for {
		n, err := ignoringEINTR(func() (int, error) { return unix.Getdents(fd, buf[:]) })
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			break
		}
		for off := 0; off < n; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			typ := buf[off+18]
			name := buf[off+19 : off+reclen]
			if i := slices.Index(name, 0); i >= 0 {
				name = name[:i]
			}
			off += reclen
			if s := string(name); s != "." && s != ".." {
				if b.take() {
					return sortDirents(ents), nil
				}
				ents = append(ents, dirent{s, direntMode(typ)})
			}
		}
	}
	return sortDirents(ents), nil
}

func sortDirents(ents []dirent) []dirent {
	slices.SortFunc(ents, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	return ents
}

func direntMode(typ byte) fs.FileMode {
	switch typ {
	case unix.DT_REG:
		return 0
	case unix.DT_DIR:
		return fs.ModeDir
	case unix.DT_LNK:
		return fs.ModeSymlink
	case unix.DT_UNKNOWN:
		return modeUnknown
	}
	return fs.ModeIrregular
}

// statMode asks the directory itself, never following a link, when
// getdents did not tell the type.
func statMode(dirfd int, name string) fs.FileMode {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fs.ModeIrregular
	}
	return modeType(st.Mode)
}

func modeType(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}
