//go:build !linux

package shim

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Main fails: the shim confines a skill inside a Linux container, and
// elsewhere there is none to confine it in.
func Main([]string) int {
	fmt.Fprintf(os.Stderr, "skillrun shim: the shim is Linux-only: %v\n", errors.ErrUnsupported)
	return setupFailed
}

// ExecStageMain is the rlimit-only fallback's exec stage on other Unix
// systems: only fds 0-2 reach the skill, the rlimits are applied (RLIMIT_AS
// last) and the entrypoint is executed without a PATH lookup. It returns
// only on failure: 127 not found, 126 not executable, 125 setup.
func ExecStageMain(args []string) int {
	spec, step, err := parseExecSpec(args)
	if err != nil {
		return execStageFail(step, err)
	}
	var lim syscall.Rlimit
	maxFD := 1024
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < 1<<16 {
		maxFD = int(lim.Cur)
	}
	for fd := 3; fd < maxFD; fd++ {
		syscall.CloseOnExec(fd)
	}
	if spec.Dir != "" {
		if err := os.Chdir(spec.Dir); err != nil {
			return execStageFail("chdir", err)
		}
	}
	for _, r := range spec.Rlimits {
		if err := syscall.Setrlimit(r.Resource, &syscall.Rlimit{Cur: r.Soft, Max: r.Hard}); err != nil {
			return execStageFail("setrlimit "+r.Name, err)
		}
	}
	err = syscall.Exec(spec.Entrypoint, append([]string{spec.Entrypoint}, spec.Args...), spec.Env)
	fmt.Fprintf(os.Stderr, "skillrun: exec %s: %v\n", spec.Entrypoint, err)
	if errors.Is(err, syscall.ENOENT) {
		return 127
	}
	return 126
}

func execStageFail(step string, err error) int {
	fmt.Fprintf(os.Stderr, "skillrun: exec stage: %s: %v\n", step, err)
	return setupFailed
}
