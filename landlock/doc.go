// Package landlock confines a skill's entrypoint with Landlock, the Linux
// security module through which an unprivileged process restricts its own
// file system and network access.
//
// [ABI] asks the kernel which Landlock ABI it speaks, for `skillrun doctor`
// (through runtime.Probe) and for the shim. [Restrict] applies a grant
// plan's Plan to the calling process and returns a [Result]
// saying what was really enforced, to be recorded on the invocation.
// [Granted] tells what a set of rules grants on one path.
//
// # Where the rules are applied
//
// A Landlocked thread can no longer mount, so Landlock cannot run inside
// libcontainer's init. The container process is instead skillrun's own small
// shim (landlock/shim, shim.Main): it restricts itself, every thread at once, and
// then starts the exec stage, which inherits the domain across fork and
// execve and execs the entrypoint.
//
// Below ABI 8 go-landlock restricts the threads one by one (libpsx), and
// each thread ends up in a Landlock domain of its own. With signal scoping
// a process may signal only into its own domain or below, so a child can
// be signalled only from the thread that started it: the shim starts and
// signals the skill from one locked thread. From ABI 8 (TSYNC) all threads
// share one domain.
//
// # The rules
//
// Every file system right the ABI knows is handled, so whatever no rule
// grants is denied. A plan rule maps to rights as follows; a rule on a
// single file gets only the file rights of its row.
//
//	Read   read_file, and read_dir on a directory
//	Exec   execute
//	Write  write_file, truncate (ABI ≥ 3); on a directory also make_reg,
//	       make_dir, make_sym, make_fifo, make_sock, remove_file,
//	       remove_dir and refer (ABI ≥ 2)
//
// Never granted: make_char and make_block, ioctl_dev (ABI ≥ 5; descriptors
// inherited from before the restriction, such as a tty on stdin, keep
// working), and resolve_unix (ABI ≥ 9) except on the broker socket.
//
//   - ABI ≥ 4: TCP bind and connect are handled with no rule, so every TCP
//     bind and connect is denied; all network traffic goes through the
//     broker socket.
//   - ABI ≥ 6: scoping denies connecting to abstract Unix sockets and
//     sending signals outside the sandbox's domain.
//
// A rule whose path does not exist in the sandbox is skipped and counted; a
// rule for a file that names a directory is refused ([ErrRuleType]).
//
// # Versions
//
// Restrict enforces the newest ABI the kernel offers and records it. Below
// the caller's minimum it fails closed ([ErrABITooLow]) rather than running
// the skill less confined, unless the operator allowed degradation. The ABI
// is read with [ABI] itself, never inferred from go-landlock's best-effort
// mode: that mode silently becomes a no-op when a seccomp filter blocks
// landlock_create_ruleset.
package landlock
