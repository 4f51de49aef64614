// Package escape is the escape corpus: attacks run as skills inside real
// sandboxes by the real static skillrun binary, each asserting that the
// attack fails with exactly the answer named and that the host artefact it
// aims at is unchanged. The tests build with the "integration" tag, need
// root and Linux (amd64), and skip, saying why, when a need is missing:
//
//	go test -tags "seccomp netgo osusergo integration" -count=1 -v ./integration/escape/
//
// TestMain builds the static binary from ../../cmd/skillrun, or copies the
// one SKILLRUN_ESCAPE_BIN names. Invocations get uids from a range drawn
// per run above 260000 (--uid-base), so that RLIMIT_NPROC, which counts
// per uid host-wide, and the process scans do not collide with other
// integration tests on the machine.
//
// # Cases
//
// Numbers are those of the corpus issue; "26+" are additions.
//
// Process and /proc:
//   - TestEscapeRuncOverwriteExe (1, CVE-2019-5736): open /proc/self/exe,
//     /proc/1/exe (the shim), the shim's mount, and each via /proc/self/fd
//     after O_PATH, for writing, truncate, chmod, rename. All fail; the
//     host's skillrun binary and Python hash the same after.
//   - TestEscapeLeakedFDs (2, CVE-2024-21626): only fds 0-2 exist (every
//     number to 1023 probed), none is a directory; openat(fd, "../..."),
//     chdir /proc/self/fd/N and /proc/1/cwd never reach a host canary.
//   - TestEscapeProcRootMagicLinks (6): /proc/self/root is the sandbox's
//     "/"; /proc/1/root, cwd, environ, map_files are closed; a host canary
//     is reached through none of them.
//   - TestEscapePtraceShim (10): ptrace attach/seize/traceme,
//     process_vm_readv/writev, pidfd_getfd, kcmp are EPERM; /proc/1/mem is
//     EACCES; the shim is untraced and still returns the skill's code.
//   - TestEscapeBashJoinerProcs (26+, CVE-2016-9962 class): during a Bash
//     tool call, no fd, cwd, root, exe, environ or mem of any process of
//     another uid (the joining shim) opens.
//   - TestEscapeShimReexec (26+): re-running the shim binary as uid 0, as
//     uid 1, and its exec stage with raised rlimits: 125, entrypoint never
//     runs as another identity.
//
// Denied syscalls (TestEscapeDeniedSyscalls, one skill per row):
//   - esc-io-uring (9): io_uring_setup/enter/register EPERM.
//   - esc-userfaultfd (11): userfaultfd EPERM, /dev/userfaultfd absent.
//   - esc-keyring (12): add_key, keyctl, request_key EPERM; no key-users
//     line for the uid on the host.
//   - esc-bpf (13), esc-perf-event (14): EPERM.
//   - esc-namespaces (15): clone3 ENOSYS; clone with each CLONE_NEW* flag,
//     unshare, setns EPERM; plain clone works.
//   - esc-file-handles (16): name_to_handle_at, open_by_handle_at EPERM.
//   - esc-mounts (17): mount, umount2, pivot_root, chroot and the new mount
//     API EPERM; /tmp still the sandbox's tmpfs.
//   - esc-personality, esc-rlimits, esc-host-state (26+): personalities
//     other than PER_LINUX, raising any rlimit or touching the shim's,
//     host name, clocks, modules, kexec, swap, syslog, I/O ports, LDT.
//
// Terminals and architectures:
//   - TestEscapeTIOCSTI (3), TestEscapeTIOCLINUX (4): with a host pty as
//     the skill's controlling tty, EPERM (also with high request bits);
//     nothing reaches the pty's input or echo.
//   - TestEscapeCompatSyscalls (18): int 0x80 and x32 syscalls are killed
//     by SIGSYS, in a child and as the entrypoint (exit 159).
//
// The broker and its tools:
//   - TestEscapeBrokerReadSymlinkRace (5): a symlink to /etc/shadow raced
//     over an allowed file during 2,000 Reads: never shadow's bytes.
//   - TestEscapeBrokerWriteSymlinkRace (5): a subdirectory raced with a
//     symlink to a host directory (RENAME_EXCHANGE) during 1,000 Writes and
//     100 Edits: the host directory is untouched.
//   - TestEscapeBrokerSCMRights (7): fds sent with requests are never held
//     by skillrun (its fd table is watched), none comes back, forged root
//     SCM_CREDENTIALS are EPERM.
//   - TestEscapeBrokerGlobGrepSymlinks (26+): symlinks to /etc, shadow, a
//     loop and a host dir: Glob and Grep stay inside the declaration.
//   - TestEscapeHttpFetchRebindAndRedirect (21): staged names to
//     loopback, metadata, private, 0.0.0.0, ::1, v4-mapped; redirects to
//     each, by name, IP spelling, userinfo, chain and scheme: all
//     domain_violation, the forbidden servers get no request.
//   - TestEscapeMemoryTraversal (22): encoded, doubled, absolute, NUL,
//     backslash, '..' above the root, look-alike dots, sibling prefix:
//     never an out-of-scope row; no emitted row outside the scope.
//
// Other invocations and the broker socket:
//   - TestEscapeOtherInvocationState (20): A's socket, the state root and
//     A's processes are invisible to B; with the host /tmp declared, A's
//     socket is EACCES/EROFS to B.
//   - TestEscapeOtherInvocationBrokerAcrossStateRoots (20, two --root
//     dirs): B must not get A's uid nor connect to A's broker.
//   - TestEscapeBrokerSocketTamper (26+): the skill must not chmod or
//     touch the host's broker socket, nor let another host user in.
//
// Signals and resources:
//   - TestEscapeKillOutsideSandbox (19): kill(-1), the shim, host pids of
//     root and of the invocation's own uid (by number, group, tgkill,
//     sigqueue, pidfd_open): both host processes survive.
//   - TestEscapeForkBomb (23): stops at RLIMIT_NPROC with EAGAIN; host
//     `true` stays under 1 s; no process of the uid is left.
//   - TestEscapeDiskFill (24): ENOSPC at the 64 MiB tmpfs; host /tmp and
//     the state root keep their space; the skill carries on.
//   - TestEscapeMemoryExhaustion (25): past x-max-memory 64MiB: exit 137,
//     outcome killed on skill.invoked_completed.
//
// File system, devices, network:
//   - TestEscapeSysAndProcSys, TestEscapeDevNodes, TestEscapeSetuidBinaries,
//     TestEscapeWriteSystemDirs (26+): no /sys, read-only /proc/sys, the
//     five device nodes only and no mknod, setuid and file-capability
//     binaries gain nothing, system dirs and the skill folder unwritable.
//   - TestEscapeSetuidBitInWritableDir (26+): no setuid/setgid file or
//     directory left in a declared writable host directory.
//   - TestEscapeHardLinksIntoWritableDir (26+): links from other mounts
//     EXDEV, of root-only files EPERM.
//   - TestEscapeAbstractUnixSockets (8): host abstract sockets (stream and
//     datagram) and a pathname socket are unreachable; the skill's own
//     abstract socket is unreachable from the host.
//   - TestEscapeNetwork (26+): only lo, no route, no new link; UDP out
//     unreachable; TCP connect and bind refused; raw, packet and rare
//     socket families refused; host listeners hear nothing.
package escape
