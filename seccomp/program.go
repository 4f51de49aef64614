package seccomp

import (
	_ "embed"
	"slices"
)

// program is Compile's output, generated with the golden files
// (`make seccomp-golden`): TestGolden fails when it differs from what
// Compile returns, and TestCompileMatchesLibcontainer proves Compile returns
// what libcontainer itself would load.
//
//go:embed program.bpf
var program []byte

// Program returns the sandbox's seccomp filter as the kernel takes it:
// struct sock_filter records in host byte order (amd64). The shim loads it
// (seccomp(2) with SECCOMP_FILTER_FLAG_TSYNC) before anything else it does,
// instead of libcontainer compiling the same program with libseccomp in
// every container's init, which cost about 5 ms of each cold start.
func Program() []byte { return slices.Clone(program) }
