package landlock

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	golandlock "github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// kernelABI asks the kernel for its ABI; tests replace it to play an older
// or Landlock-less kernel.
var kernelABI = ABI

// brokerSockets are the pathname sockets the skill may connect to once
// resolve_unix is handled (ABI ≥ 9): the broker is its one channel out.
var brokerSockets = []string{SocketPath}

// Restrict confines the calling process, every thread of it and every
// process it starts afterwards, to plan, with the newest Landlock ABI the
// kernel offers. Below minABI it fails with ErrABITooLow unless
// allowDegraded, in which case it enforces what the kernel offers, down to
// nothing at all, and says so in the Result. A minABI below 1 is read as 1:
// running with no Landlock at all needs allowDegraded.
//
// Below ABI 8 each thread gets a domain of its own (see the package
// documentation): a caller that signals its children must start and signal
// them from one locked thread.
//
// Rules whose path does not exist are skipped and counted. Restrict never
// uses go-landlock's best-effort mode: the ABI comes from the kernel
// itself, and go-landlock is asked for exactly that.
func Restrict(plan Plan, minABI int, allowDegraded bool) (Result, error) {
	abi, kernel, err := usableABI()
	if need := max(minABI, 1); abi < need && !allowDegraded {
		if err != nil {
			return Result{}, fmt.Errorf("%w: need ABI %d: %w", ErrABITooLow, need, err)
		}
		return Result{KernelABI: kernel}, fmt.Errorf("%w: the kernel offers ABI %d, need %d", ErrABITooLow, abi, need)
	}
	res := Result{ABI: abi, KernelABI: kernel}
	res.Unenforced = unenforced(plan, abi)
	if abi == 0 {
		// The operator allowed running without Landlock; the Result says so.
		return res, nil
	}
	rules, closeFDs, err := pathRules(plan.Rules, abi, &res)
	defer closeFDs()
	if err != nil {
		return Result{KernelABI: kernel}, err
	}
	cfg := golandlock.Config{
		HandledAccessFS:  abiConfig(abi).HandledAccessFS,
		HandledAccessNet: netAccess(plan, abi),
		Scoped:           scopes(plan, abi),
	}
	if abi >= 7 {
		// Denials by the skill (after execve) are what an operator wants
		// in the audit log; the kernel leaves them out by default.
		cfg = cfg.EnableLoggingForSubprocesses()
	}
	// go-landlock enforces on every thread (TSYNC from ABI 8, libpsx
	// before) and sets no_new_privs; children inherit the domain.
	if err := cfg.Restrict(rules...); err != nil {
		return Result{KernelABI: kernel}, fmt.Errorf("landlock restrict (ABI %d): %w", abi, err)
	}
	res.Net = cfg.HandledAccessNet != 0
	res.Scoped = cfg.Scoped != 0
	return res, nil
}

// usableABI is the ABI Restrict enforces: the kernel's, capped at the
// newest go-landlock knows, and at 5 when the kernel's signal scoping has
// the bug of erratum 2, as go-landlock itself decides (it would otherwise
// refuse a V6 ruleset). A failed query is ABI 0 with its error.
func usableABI() (abi, kernel int, err error) {
	kernel, err = kernelABI()
	if err != nil {
		return 0, 0, err
	}
	abi = min(kernel, maxABI)
	if abi >= 6 {
		if errata, err := llsys.LandlockGetErrata(); err != nil || errata&0x2 == 0 {
			abi = 5
		}
	}
	return abi, kernel, nil
}

// pathRules turns the plan's rules into go-landlock rules at abi. Each path
// is opened once with O_PATH and handed to go-landlock as /proc/self/fd/N,
// so the rule lands on the very inode whose type was checked here, not on
// whatever the path names a moment later. closeFDs must be called once the
// ruleset is built.
func pathRules(plan []FSRule, abi int, res *Result) (rules []golandlock.Rule, closeFDs func(), err error) {
	var fds []int
	closeFDs = func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	if err := unix.Access("/proc/self/fd", unix.F_OK); err != nil {
		return nil, closeFDs, fmt.Errorf("landlock rules: /proc/self/fd: %w (is /proc mounted?)", err)
	}
	add := func(r FSRule, onlyRights golandlock.AccessFSSet) error {
		fd, isDir, err := openPath(r.Path)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			res.Skipped++
			res.SkippedPaths = append(res.SkippedPaths, r.Path)
			return nil
		}
		if err != nil {
			return err
		}
		fds = append(fds, fd)
		if isDir && !r.Dir {
			// A file grant must never become a tree grant.
			return fmt.Errorf("landlock rule %s: %w", r.Path, ErrRuleType)
		}
		access := fsAccess(r, isDir, abi)
		if onlyRights != 0 {
			access = onlyRights
		}
		if access == 0 {
			return nil
		}
		rules = append(rules, golandlock.PathAccess(access, "/proc/self/fd/"+strconv.Itoa(fd)))
		res.Rules++
		return nil
	}
	for _, r := range plan {
		if !filepath.IsAbs(r.Path) || filepath.Clean(r.Path) != r.Path {
			return nil, closeFDs, fmt.Errorf("landlock rule %q: %w: the path must be absolute and clean", r.Path, ErrBadRule)
		}
		if err := add(r, 0); err != nil {
			return nil, closeFDs, err
		}
	}
	if resolve := abiConfig(abi).HandledAccessFS & llsys.AccessFSResolveUnix; resolve != 0 {
		for _, s := range brokerSockets {
			if err := unix.Access(s, unix.F_OK); err != nil {
				continue // no broker in this sandbox (tests, a skill without tools)
			}
			if err := add(FSRule{Path: s}, resolve); err != nil {
				return nil, closeFDs, err
			}
		}
	}
	return rules, closeFDs, nil
}

// openPath opens path with O_PATH, following symlinks as the kernel does
// for a rule, and tells whether it names a directory.
func openPath(path string) (fd int, isDir bool, err error) {
	fd, err = unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, false, fmt.Errorf("landlock rule %s: open: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, false, fmt.Errorf("landlock rule %s: fstat: %w", path, err)
	}
	return fd, st.Mode&unix.S_IFMT == unix.S_IFDIR, nil
}
