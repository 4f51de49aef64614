// Package landlock confines a skill's entrypoint with Landlock, the Linux
// security module through which an unprivileged process restricts its own
// file system and network access.
//
// Only the ABI query exists yet: [ABI] asks the kernel which Landlock ABI it
// speaks, for `skillrun doctor` (through runtime.Probe) and for the shim.
//
// # Where the rules are applied
//
// A Landlocked thread can no longer mount, so Landlock cannot run inside
// libcontainer's init. The container process is instead skillrun's own small
// shim: it builds the ruleset, locks its OS thread, sets no_new_privs,
// restricts itself and execs the entrypoint.
//
// # The rules
//
//   - Read and execute on the host system directories the entrypoint needs
//     and on the resolved skill folder.
//   - Exactly the declared x-allowed-files: read access, plus write access
//     only when the skill is allowed the Write or Edit tool.
//   - ABI ≥ 4: every TCP bind and connect is denied; all network traffic goes
//     through the broker socket.
//   - ABI ≥ 6: scoping denies abstract Unix sockets and signals that would
//     leave the sandbox.
//
// # Versions
//
// The shim degrades down the ABI versions and records the ABI it really
// enforced on the invocation. Below skillrun's minimum ABI it fails closed
// rather than running the skill unconfined. The ABI is read with [ABI]
// itself, never inferred from go-landlock's best-effort mode: that mode
// silently becomes a no-op when a seccomp filter blocks
// landlock_create_ruleset.
package landlock
