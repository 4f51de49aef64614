//go:build integration

package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillrun/skillrun/store"
)

// The supervisor SIGKILLed mid-run: the skill dies with it, and gc leaves
// no process, mount, cgroup, socket or state behind.
func TestGCAfterSupervisorKill(t *testing.T) {
	e := newEnv(t)
	dir := e.skill("sleeper", "", "#!/bin/sh\necho started\nexec sleep 300\n")
	e.trust(dir)
	id := "it-gc-victim"
	cmd := exec.Command(skillrunBin, "--root", e.root, "exec", "--invocation-id", id, dir)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "started") {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the skill never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	sock := "/tmp/cyberos-skill-broker." + id + ".sock"
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("socket: %v", err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	r := e.run("gc")
	wantExit(t, r, 0)
	if !strings.Contains(r.stdout, id) {
		t.Fatalf("gc did not collect %s:\n%s", id, r.stdout)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket left: %v", err)
	}
	for _, ctl := range []string{"memory", "pids", "cpu", ""} {
		p := filepath.Join("/sys/fs/cgroup", ctl, "skillrun", id)
		if _, err := os.Stat(p); err == nil {
			t.Errorf("cgroup %s left", p)
		}
	}
	if _, err := os.Stat(filepath.Join(e.root, "run", id)); !os.IsNotExist(err) {
		t.Errorf("state dir left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.root, "containers", id)); !os.IsNotExist(err) {
		t.Errorf("container state left: %v", err)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), id) {
		t.Errorf("a mount of %s is left on the host", id)
	}
	if pids := processesOf(t, "sleep 300"); len(pids) > 0 {
		t.Errorf("skill processes left: %v", pids)
	}
	st, err := store.Open(t.Context(), e.root)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	inv, err := st.Invocation(t.Context(), id)
	if err != nil || inv.Outcome != "supervisor_lost" {
		t.Fatalf("invocation after gc: %+v, %v", inv, err)
	}
	// A second gc finds nothing.
	if r := e.run("gc"); !strings.Contains(r.stdout, "nothing to collect") {
		t.Errorf("second gc: %s", r.stdout)
	}
}

// processesOf lists host pids whose command line contains s.
func processesOf(t *testing.T, s string) []string {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), s) {
			out = append(out, e.Name())
		}
	}
	return out
}

// The explicit fallback: a plain subprocess with rlimits, recorded as such.
func TestRlimitIsolation(t *testing.T) {
	e := newEnv(t)
	dir := e.skill("plain", "", "#!/bin/sh\necho \"uid=$(id -u)\"\necho \"as=$(ulimit -v)\"\n")
	r := e.exec(dir, "--isolation", "rlimit")
	wantExit(t, r, 0)
	got := lines(r.stdout)
	if got["as"] != "524288" || got["uid"] == "0" {
		t.Errorf("rlimit fallback: %v", got)
	}
	// The operator's default changes it; a bad size is a usage error.
	if got := lines(e.run("exec", "--isolation", "rlimit", "--max-address-space", "256MiB", dir).stdout); got["as"] != "262144" {
		t.Errorf("--max-address-space 256MiB: %v", got)
	}
	if bad := e.run("exec", "--max-memory", "lots", dir); bad.code != 2 {
		t.Errorf("--max-memory lots: exit %d: %s", bad.code, bad.stderr)
	}
	if !strings.Contains(r.stderr, "rlimit-only") {
		t.Errorf("no warning about the weaker isolation:\n%s", r.stderr)
	}
	var isolation string
	for _, row := range e.rows(r.id) {
		if row.Kind == "skill.invoked_completed" {
			isolation = string(row.Payload)
		}
	}
	if !strings.Contains(isolation, `"isolation":"rlimit-only"`) {
		t.Errorf("invoked_completed does not record rlimit-only: %s", isolation)
	}
}
