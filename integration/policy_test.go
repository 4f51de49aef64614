//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// --on-violation=quarantine: the first attempt outside the declaration is
// denied, every later call gets quarantined (the process goes on), the
// skill is quarantined by content hash until an operator releases it.
func TestOnViolationQuarantine(t *testing.T) {
	e := newEnv(t)
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "f"), []byte("ok"), 0o644)
	dir := e.skill("violator", fmt.Sprintf("allowed-tools: Read\nx-allowed-files: [%q]", data+"/f"), pyClient+`
connect()
def reason(r):
    return r["error"]["data"]["reason"] if "error" in r else "ok"
print("first=" + reason(call("tool.call", {"tool": "Read", "args": {"path": "`+data+`/f"}})))
print("violation=" + reason(call("tool.call", {"tool": "Read", "args": {"path": "/etc/passwd"}})))
print("after=" + reason(call("tool.call", {"tool": "Read", "args": {"path": "`+data+`/f"}})))
`)
	r := e.exec(dir, "--on-violation", "quarantine")
	wantExit(t, r, 0)
	got := lines(r.stdout)
	if got["first"] != "ok" || got["violation"] != "file_violation" || got["after"] != "quarantined" {
		t.Fatalf("calls: %v", got)
	}
	if k := kinds(e.rows(r.id)); !slices.Contains(k, "skill.quarantined") {
		t.Errorf("rows %v lack skill.quarantined", k)
	}
	l := e.run("quarantine", "list", "--json")
	var list []map[string]string
	if err := json.Unmarshal([]byte(l.stdout), &list); err != nil || len(list) != 1 || list[0]["skill_id"] != "violator" {
		t.Fatalf("quarantine list: %s %v", l.stdout, err)
	}
	r = e.run("exec", dir)
	wantExit(t, r, 125)
	if !strings.Contains(r.stderr, "quarantined") || !strings.Contains(r.stderr, "skillrun quarantine release") {
		t.Errorf("exec of a quarantined skill: %s", r.stderr)
	}
	if rel := e.run("quarantine", "release", "violator"); rel.code != 0 {
		t.Fatalf("release: %s", rel.stderr)
	}
	wantExit(t, e.run("exec", dir), 0)
}

// --approvals=ask: a Bash command no rule covers is parked; the operator
// sees it verbatim and approves it, and the same call then runs in place.
// The verdict is remembered; a denial too.
func TestApprovalsAsk(t *testing.T) {
	e := newEnv(t)
	dir := e.skill("asker", "allowed-tools: Bash(true)", pyClient+`
connect()
for cmd in ["id -u", "echo second"]:
    r = call("tool.call", {"tool": "Bash", "args": {"command": cmd}})
    if "error" in r:
        print(cmd.split()[0] + "=" + r["error"]["data"]["reason"], flush=True)
    else:
        print(cmd.split()[0] + "=ran:" + r["result"]["stdout"].strip(), flush=True)
`)
	e.trust(dir)
	done := make(chan result, 1)
	go func() { done <- e.run("exec", "--approvals", "ask", "--approval-wait", "60s", dir) }()
	decide := func(command, verdict string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			var pending []map[string]string
			json.Unmarshal([]byte(e.run("approvals", "list", "--json").stdout), &pending)
			for _, p := range pending {
				if p["command"] == command {
					if r := e.run("approvals", verdict, p["id"]); r.code != 0 {
						t.Fatalf("approvals %s: %s", verdict, r.stderr)
					}
					return
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("%q never appeared in approvals list", command)
	}
	decide("id -u", "approve")
	decide("echo second", "deny")
	r := <-done
	wantExit(t, r, 0)
	got := lines(r.stdout)
	if !strings.HasPrefix(got["id"], "ran:2") || got["echo"] != "approval_denied" {
		t.Fatalf("first run: %v\nstderr:\n%s", got, r.stderr)
	}
	if k := kinds(e.rows(r.id)); !slices.Contains(k, "skill.approval_requested") {
		t.Errorf("rows %v lack skill.approval_requested", k)
	}
	// Remembered: nothing is parked the second time.
	r = e.run("exec", "--approvals", "ask", "--approval-wait", "2s", dir)
	wantExit(t, r, 0)
	got = lines(r.stdout)
	if !strings.HasPrefix(got["id"], "ran:") || got["echo"] != "approval_denied" {
		t.Fatalf("second run: %v\nstderr:\n%s", got, r.stderr)
	}
	// Headless default: denied, never auto-approved.
	other := e.skill("headless", "allowed-tools: Bash(true)", pyClient+`
connect()
r = call("tool.call", {"tool": "Bash", "args": {"command": "id -u"}})
print("id=" + r["error"]["data"]["reason"])
`)
	r = e.exec(other)
	wantExit(t, r, 0)
	if lines(r.stdout)["id"] != "command_not_allowed" {
		t.Errorf("headless default: %s", r.stdout)
	}
}
