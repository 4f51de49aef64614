package runtime

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/skillrun/skillrun/enforce"
)

// Probe measures what this host can enforce. Each fact comes from the kernel
// (a syscall, a file under /proc or /sys, a throwaway child process), never
// from the OS name or version; each missing feature adds one line to
// Problems naming what said no. Its only side effect is a short-lived child
// process in a new user namespace, which is how user namespaces are tested.
func Probe(ctx context.Context) enforce.Host {
	return decide(probe(ctx, true))
}

// ProbeForExec is Probe for an invocation about to start. As root it skips
// the user-namespace child (about 2-3 ms of every cold start): a root
// supervisor builds its containers without a user namespace, so the answer
// could not change what exec does. UserNamespaces then stays false and is
// not evidence either way; `skillrun doctor` reports it.
func ProbeForExec(ctx context.Context) enforce.Host {
	return decide(probe(ctx, os.Geteuid() != 0))
}

func decide(h enforce.Host) enforce.Host {
	iso, unmet := isolationFor(h)
	h.Isolation = iso
	if len(unmet) > 0 {
		h.Problems = append(h.Problems, fmt.Sprintf(
			"isolation: %s; the container sandbox needs %s", iso, strings.Join(unmet, ", ")))
	}
	return h
}

// containerNamespaces are the namespaces every container gets (DESIGN §4).
// cgroup is wanted too but not required: without it the skill only sees the
// names of host cgroups, not their limits.
var containerNamespaces = []string{"pid", "net", "mount", "ipc", "uts"}

// isolationFor decides the isolation level a host supports and, when that is
// less than a container, lists what is missing. It is pure so that any host
// can be described in a test.
func isolationFor(h enforce.Host) (enforce.Isolation, []string) {
	if h.OS != "linux" {
		// The requirements below are Linux facts; another OS meets none of
		// them, and one line says so better than ten.
		return enforce.IsolationRlimitOnly, []string{
			fmt.Sprintf("Linux namespaces, seccomp, Landlock and cgroups, which %s lacks", h.OS)}
	}
	var unmet []string
	for _, ns := range containerNamespaces {
		if !h.HasNamespace(ns) {
			unmet = append(unmet, ns+" namespace")
		}
	}
	if !h.Seccomp {
		unmet = append(unmet, "seccomp filters")
	}
	if h.LandlockABI < 1 {
		unmet = append(unmet, "Landlock")
	}
	for _, c := range []string{"memory", "pids"} {
		if !slices.Contains(h.CgroupControllers, c) {
			unmet = append(unmet, c+" cgroup controller")
		}
	}
	// Rootless operation maps the skill's uid through a user namespace;
	// as root, libcontainer can set up the container without one.
	if !h.Root && !h.UserNamespaces {
		unmet = append(unmet, "root or unprivileged user namespaces")
	}
	if len(unmet) > 0 {
		return enforce.IsolationRlimitOnly, unmet
	}
	return enforce.IsolationContainer, nil
}
