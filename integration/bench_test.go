//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkExecNoop is the cold start of one invocation, end to end: the
// skillrun process, state store, plan, broker socket, container with
// seccomp, Landlock and cgroups, a no-op entrypoint, teardown and audit.
func BenchmarkExecNoop(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: the sandbox uses namespaces, cgroups and per-invocation uids")
	}
	root := b.TempDir()
	dir := filepath.Join(b.TempDir(), "noop")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: noop\ndescription: does nothing\n---\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "main"), []byte("#!/bin/sh\n"), 0o755)
	if out, err := exec.Command(skillrunBin, "--root", root, "trust", dir).CombinedOutput(); err != nil {
		b.Fatalf("trust: %v: %s", err, out)
	}
	b.ResetTimer()
	for b.Loop() {
		if out, err := exec.Command(skillrunBin, "--root", root, "exec", dir).CombinedOutput(); err != nil {
			b.Fatalf("exec: %v: %s", err, out)
		}
	}
}
