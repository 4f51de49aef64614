// Package seccomp holds the sandbox's seccomp profile as data and turns it
// into the filter the sandbox's shim loads ([Program], compiled ahead of
// time by [Compile], exactly as libcontainer would compile it).
//
// # The profile
//
// One table (profile.go) maps each allowed amd64 syscall name to a [Rule]:
// allowed whatever the arguments, allowed only when one of a few argument
// comparisons matches, or failing with a chosen errno. Every conditional or
// errno entry says why. Anything not in the table fails with EPERM. The
// base is Docker's default profile for a container without capabilities;
// what the sandbox takes out of it, and what it must never let in, is a
// second table with reasons ([Denied]). The unusual entries:
//
//   - clone only without CLONE_NEW* flags; clone3 fails with ENOSYS because
//     its flags are in memory a filter cannot read, and libc and Go then
//     fall back to clone.
//   - ioctl except TIOCSTI and TIOCLINUX, compared on the low 32 bits the
//     kernel reads. libseccomp drops a conditional ERRNO rule next to an
//     unconditional ALLOW, so the exception is written as the union of
//     masked comparisons covering every other request value.
//   - personality only to query or to set PER_LINUX; socket only for Unix,
//     IP and netlink; socketpair only for Unix.
//   - landlock_* are allowed: a process may always confine itself further.
//
// [Rules] returns the table; [Rule.Allows] says what it means for one call.
//
// # The filter
//
// [Config] translates the table into libcontainer's configs.Seccomp, which
// the runtime puts in the container config (with NoNewPrivileges set).
// libcontainer then builds the filter with libseccomp and loads it on its
// init thread just before exec. Two things come from libcontainer rather
// than from the table, and the tests pin both:
//
//   - runc prepends a stub that answers ENOSYS for syscall numbers above
//     the highest one in the table, so newer syscalls (fchmodat2, ...) look
//     unimplemented and libc falls back, instead of failing with EPERM.
//   - other architectures (i386 `int 0x80`) and the x32 ABI hit libseccomp's
//     default bad-architecture action, SECCOMP_RET_KILL_THREAD: a
//     single-threaded caller dies of SIGSYS; in a multi-threaded one only
//     the calling thread dies. libcontainer offers no way to ask for
//     KILL_PROCESS.
//
// [Compile] returns that program byte for byte without loading it; a test
// reads back what libcontainer really loaded and compares.
//
// # The golden file
//
// testdata/filter.golden is the compiled program, one instruction a line
// with the syscall or action it concerns; testdata/filter.pfc.golden is
// libseccomp's pseudo code for the same rules. TestGolden fails when the
// filter changes; after a deliberate change regenerate both with
//
//	go test -tags "seccomp netgo osusergo" ./seccomp -run TestGolden -update
//
// # Builds
//
// The table, [Rules] and [Program] build everywhere; [Config] on Linux
// (libcontainer's configs package is Linux-only); [Compile] needs Linux,
// cgo and the seccomp build tag, and elsewhere returns an error wrapping
// errors.ErrUnsupported. Program is Compile's output kept in the package
// (program.bpf, with the profile's hash in program.sum), so the running
// supervisor needs no libseccomp: `make seccomp-golden` regenerates it
// with the golden files, and TestProgramIsCurrent (no cgo needed) fails
// when the profile has changed since.
package seccomp
