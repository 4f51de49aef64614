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
// pass its exit code through, and the sandbox's /run/skillrun/shim is the
// binary LocateShim chose.
func TestExecShimBinaries(t *testing.T) {
	e := newEnv(t)
	dir := e.skill("shim-binaries", "", "#!/bin/sh\nstat -c 'shim_size=%s' /run/skillrun/shim\nid -u | sed 's/^/uid=/'\nexit 7\n")
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
			out := stdout.String()
			if want := "shim_size=" + strconv.FormatInt(st.Size(), 10); !strings.Contains(out, want) {
				t.Errorf("stdout %q, want %q: the sandbox runs another shim than %s", out, want, tc.wantShim)
			}
			if strings.Contains(out, "uid=0\n") || !strings.Contains(out, "uid=") {
				t.Errorf("stdout %q: the skill must run as its own unprivileged uid", out)
			}
		})
	}
}
