//go:build integration

package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestExecShimBinaries runs one skill with the dedicated skillrun-shim
// installed beside skillrun (what `make build` produces) and with skillrun
// alone, which then plays the shim itself: both run the skill confined and
// pass its exit code through, the skill and a Bash command run under one
// seccomp filter each, and the sandbox's /run/skillrun/shim is the binary
// LocateShim chose.
func TestExecShimBinaries(t *testing.T) {
	e := newEnv(t)
	dir := e.skill("shim-binaries", "allowed-tools: Bash(grep -E ^Seccomp /proc/self/status)", pyClient+`
import subprocess
print("shim_size=%d" % os.stat("/run/skillrun/shim").st_size)
print("uid=%d" % os.getuid())
for l in open("/proc/self/status"):
    if l.startswith("Seccomp"):
        print("skill_" + l.replace("\t", "").strip())
connect()
r = call("tool.call", {"tool": "Bash", "args": {"command": "grep -E ^Seccomp /proc/self/status"}})
for l in r["result"]["stdout"].splitlines():
    print("bash_" + l.replace("\t", "").strip())
sys.exit(7)
`)
	e.trust(dir)

	alone := t.TempDir()
	if err := os.Chmod(alone, 0o755); err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(alone, "skillrun")
	if err := installBinary(skillrunBin, self); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, bin, wantShim string
	}{
		{"dedicated skillrun-shim", skillrunBin, filepath.Join(filepath.Dir(skillrunBin), "skillrun-shim")},
		{"skillrun as its own shim", self, self},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := os.Stat(tc.wantShim)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(t.Context(), tc.bin, "--root", e.root, "exec", dir)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err = cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != 7 {
				t.Fatalf("exit %d (%v), want the skill's 7; stderr: %s", code, err, stderr.String())
			}
			got := lines(stdout.String())
			if want := strconv.FormatInt(st.Size(), 10); got["shim_size"] != want {
				t.Errorf("shim_size=%q, want %s: the sandbox runs another shim than %s", got["shim_size"], want, tc.wantShim)
			}
			if uid, _ := strconv.Atoi(got["uid"]); uid <= 0 {
				t.Errorf("uid=%q: the skill must run as its own unprivileged uid", got["uid"])
			}
			// Exactly one filter, in filter mode, on the entrypoint and on a
			// command the Bash tool runs into the sandbox alike.
			for _, who := range []string{"skill", "bash"} {
				if !strings.Contains(stdout.String(), who+"_Seccomp:2\n") ||
					!strings.Contains(stdout.String(), who+"_Seccomp_filters:1\n") {
					t.Errorf("%s: want Seccomp:2 and Seccomp_filters:1 in\n%s", who, stdout.String())
				}
			}
		})
	}
}
