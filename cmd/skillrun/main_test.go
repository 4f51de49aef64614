package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run runs the CLI in-process as main would and returns the exit code and
// both streams.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := Run(t.Context(), args, strings.NewReader(""), &stdout, &stderr)
	code := exitCode(err, &stderr)
	return code, stdout.String(), stderr.String()
}

func writeSkill(t *testing.T, name, skillMD string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(skillMD), 0o644)
	os.WriteFile(filepath.Join(dir, "main"), []byte("#!/bin/sh\n"), 0o755)
	return dir
}

func TestValidateExample(t *testing.T) {
	code, out, errOut := run(t, "validate", "../../examples/skills/hello")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"examples/skills/hello: ok: skill hello", "tools:         Read", "/usr/lib/os-release", "isolation:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestValidateInvalid(t *testing.T) {
	good := writeSkill(t, "good", "---\nname: good\ndescription: d\n---\n")
	bad := writeSkill(t, "bad", "---\nname: bad\ndescription: d\nallowed-tools: Read, Raed\neffort_minutes: never\n---\n")
	code, out, errOut := run(t, "validate", good, bad)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	wantLine := filepath.Join(bad, "SKILL.md") + `:5: effort_minutes: must be a whole number, got "never"`
	if !strings.Contains(errOut, wantLine) {
		t.Fatalf("stderr lacks %q:\n%s", wantLine, errOut)
	}
	if !strings.Contains(out, good+": ok") || !strings.Contains(out, bad+": invalid") {
		t.Fatalf("stdout:\n%s", out)
	}
	if !strings.HasSuffix(errOut, "skillrun: 1 of 2 skills invalid\n") {
		t.Fatalf("last line of stderr: %q", errOut)
	}
	// With the frontmatter fixed, the unknown tool is the next error.
	os.WriteFile(filepath.Join(bad, "SKILL.md"), []byte("---\nname: bad\ndescription: d\nallowed-tools: Read, Raed\n---\n"), 0o644)
	_, _, errOut = run(t, "validate", bad)
	if want := filepath.Join(bad, "SKILL.md") + `:4: allowed_tools: unknown tool "Raed"`; !strings.Contains(errOut, want) {
		t.Fatalf("stderr lacks %q:\n%s", want, errOut)
	}
}

func TestValidateJSON(t *testing.T) {
	bad := writeSkill(t, "bad", "---\nname: bad\n---\n")
	code, out, errOut := run(t, "validate", "--json", "../../examples/skills/hello", bad)
	if code != 1 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var res []struct {
		Valid  bool `json:"valid"`
		Errors []struct {
			Line  int    `json:"line"`
			Field string `json:"field"`
		} `json:"errors"`
		Plan *struct {
			Limits struct {
				MemoryBytes int64 `json:"memory_bytes"`
			} `json:"limits"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(res) != 2 || !res[0].Valid || res[0].Plan.Limits.MemoryBytes != 64<<20 {
		t.Fatalf("first result: %+v", res)
	}
	if res[1].Valid || len(res[1].Errors) != 1 || res[1].Errors[0].Field != "description" || res[1].Errors[0].Line != 3 {
		t.Fatalf("second result: %+v", res[1])
	}
}

func TestDoctorJSON(t *testing.T) {
	code, out, _ := run(t, "doctor", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var h map[string]any
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"os", "root", "namespaces", "user_namespaces", "seccomp", "landlock_abi", "cgroup_version", "cgroup_controllers", "isolation"} {
		if _, ok := h[k]; !ok {
			t.Errorf("doctor --json lacks %q", k)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"validate"}, "skillrun: usage: requires at least 1 arg(s), only received 0 (see 'skillrun --help')\n"},
		{[]string{"frobnicate"}, `skillrun: usage: unknown command "frobnicate" for "skillrun" (see 'skillrun --help')` + "\n"},
		{[]string{"doctor", "--nope"}, "skillrun: usage: unknown flag: --nope (see 'skillrun --help')\n"},
		{[]string{"--log-level", "loud", "doctor"}, `skillrun: --log-level "loud": want debug, info, warn or error` + "\n"},
	}
	for _, tt := range tests {
		code, _, errOut := run(t, tt.args...)
		if code != exitUsage || errOut != tt.want {
			t.Errorf("%v: exit %d stderr %q\nwant exit 2, %q", tt.args, code, errOut, tt.want)
		}
	}
}

func TestValidateMissingFolder(t *testing.T) {
	code, _, errOut := run(t, "validate", "/nonexistent/skill")
	if code != 1 || !strings.Contains(errOut, "/nonexistent/skill") || strings.Contains(errOut, "goroutine") {
		t.Fatalf("exit %d stderr %q", code, errOut)
	}
}
