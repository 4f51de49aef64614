package seccomp

import "errors"

// ErrUnknownSyscall is returned by Compile when a name in the profile is
// unknown to the libseccomp it runs with. libcontainer would skip such an
// entry silently; Compile refuses so that the golden file and the property
// tests never describe a filter that lacks a rule.
var ErrUnknownSyscall = errors.New("syscall unknown to libseccomp")
