package seccomp

import (
	"crypto/sha256"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
)

// program is Compile's output, generated with the golden files
// (`make seccomp-golden`): TestGolden fails when it differs from what
// Compile returns, and TestCompileMatchesLibcontainer proves Compile returns
// what libcontainer itself would load. Those need cgo and libseccomp;
// programSum, the profile's hash when program was generated, lets
// TestProgramIsCurrent catch a stale program in any build.
//
//go:embed program.bpf
var program []byte

//go:embed program.sum
var programSum string

// profileSum is the hash programSum records: SHA-256 of the profile as
// JSON (Rules, keys sorted), in hex.
func profileSum() string {
	b, err := json.Marshal(Rules())
	if err != nil {
		panic(err) // plain data: cannot fail
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// Program returns the sandbox's seccomp filter as the kernel takes it:
// struct sock_filter records in host byte order (amd64). The shim loads it
// (seccomp(2) with SECCOMP_FILTER_FLAG_TSYNC) before anything else it does,
// instead of libcontainer compiling the same program with libseccomp in
// every container's init, which cost about 5 ms of each cold start.
func Program() []byte { return slices.Clone(program) }
