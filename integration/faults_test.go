//go:build integration

package integration

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/skillrun/skillrun/store"
)

// completedPayload returns the invoked_completed payload of an invocation.
func (e *env) completedPayload(id string) map[string]any {
	e.t.Helper()
	for _, r := range e.rows(id) {
		if r.Kind == "skill.invoked_completed" {
			var p map[string]any
			if err := json.Unmarshal(r.Payload, &p); err != nil {
				e.t.Fatal(err)
			}
			return p
		}
	}
	e.t.Fatalf("invocation %s has no invoked_completed row", id)
	return nil
}

// The supervisor SIGKILLed while a tool call is in flight: the replay shows
// the call started and never completed (the crash point), and gc cleans up.
// The command is "sleep 61.25", which no other test runs: processesOf
// looks at the whole host.
func TestCrashPointOnSupervisorKill(t *testing.T) {
	e := newEnv(t)
	dir := e.skill("inflight", "allowed-tools: Bash(sleep 61.25)", pyClient+`
connect()
print("calling", flush=True)
call("tool.call", {"tool": "Bash", "args": {"command": "sleep 61.25"}})
`)
	e.trust(dir)
	id := "it-crash-point"
	cmd := exec.Command(skillrunBin, "--root", e.root, "exec", "--invocation-id", id, dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !slicesContainsKind(e.rows(id), "skill.tool_call_started") {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the Bash call never started")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	r := e.run("broker", "replay", "--invocation", id)
	if !strings.Contains(r.stdout+r.stderr, "crash point") {
		t.Errorf("replay shows no crash point:\n%s%s", r.stdout, r.stderr)
	}
	if r := e.run("gc"); !strings.Contains(r.stdout, id) {
		t.Errorf("gc did not collect %s: %s", id, r.stdout)
	}
	if pids := processesOf(t, "sleep 61.25"); len(pids) > 0 {
		t.Errorf("the Bash command outlived its sandbox: %v", pids)
	}
}

func slicesContainsKind(rows []store.Row, kind string) bool {
	for _, r := range rows {
		if r.Kind == kind {
			return true
		}
	}
	return false
}

// A skill that dies in the middle of a call, and one that sends half a
// frame and stalls: the broker neither hangs nor leaks, other connections
// keep working, and everything is released when the invocation ends.
func TestSkillMisbehavesMidCall(t *testing.T) {
	e := newEnv(t)
	crasher := e.skill("crasher", "allowed-tools: Bash(sleep 2)", pyClient+`
connect()
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tool.call", "params": {"tool": "Bash", "args": {"command": "sleep 2"}}}).encode()
_sock.sendall(struct.pack(">I", len(body)) + body)
os.kill(os.getpid(), 9)
`)
	r := e.exec(crasher)
	wantExit(t, r, 128+9)
	staller := e.skill("staller", "allowed-tools: Read", pyClient+`
import socket, time
half = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
half.connect(os.environ["CYBEROS_BROKER_SOCKET"])
half.sendall(b"\x00\x10")  # two bytes of a length prefix, then nothing
connect()
r = call("tool.list", {})
print("other_connection=%d" % len(r["result"]["tools"]), flush=True)
time.sleep(60)
`)
	r = e.exec(staller, "--timeout", "3s")
	wantExit(t, r, 124)
	if lines(r.stdout)["other_connection"] != "1" {
		t.Errorf("a stalled connection blocked another: %s", r.stdout)
	}
	if _, err := os.Stat("/tmp/cyberos-skill-broker." + r.id + ".sock"); !os.IsNotExist(err) {
		t.Errorf("socket left after the timeout: %v", err)
	}
}

// The state store locked by another process for two seconds while a skill
// makes calls: the calls complete, the rows arrive later, none is lost.
func TestStoreLockedDuringCalls(t *testing.T) {
	e := newEnv(t)
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "f"), []byte("x"), 0o644)
	dir := e.skill("patient", fmt.Sprintf("allowed-tools: Read\nx-allowed-files: [%q]", data+"/f"), pyClient+`
import time
connect()
start = time.time()
for i in range(50):
    r = call("tool.call", {"tool": "Read", "args": {"path": "`+data+`/f"}})
    assert "result" in r, r
print("calls_ms=%d" % ((time.time() - start) * 1000))
`)
	e.trust(dir)
	// The store exists once trust ran; lock it as another process would.
	db, err := sql.Open("sqlite", filepath.Join(e.root, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() { done <- e.run("exec", dir) }()
	time.Sleep(300 * time.Millisecond) // let it begin: invoked_started needs the store
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	conn.ExecContext(context.Background(), "COMMIT")
	conn.Close()
	r := <-done
	wantExit(t, r, 0)
	p := e.completedPayload(r.id)
	if p["audit_rows_lost"] != float64(0) {
		t.Errorf("audit rows lost: %v", p["audit_rows_lost"])
	}
	count := 0
	for _, row := range e.rows(r.id) {
		if row.Kind == "skill.tool_call_completed" {
			count++
		}
	}
	if count != 50 {
		t.Errorf("%d completed rows, want 50", count)
	}
}

// 16 concurrent invocations × 1,000 calls: zero audit rows lost.
func TestConcurrentInvocationsLoseNoRows(t *testing.T) {
	e := newEnv(t)
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "f"), []byte("x"), 0o644)
	dir := e.skill("busy", fmt.Sprintf("allowed-tools: Read\nx-allowed-files: [%q]", data+"/f"), pyClient+`
connect()
for i in range(1000):
    r = call("tool.call", {"tool": "Read", "args": {"path": "`+data+`/f"}})
    assert "result" in r, r
`)
	e.trust(dir)
	var wg sync.WaitGroup
	results := make([]result, 16)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = e.run("exec", "--timeout", "5m", dir)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 {
			t.Errorf("invocation %d: exit %d: %s", i, r.code, r.stderr)
			continue
		}
		counts := map[string]int{}
		for _, row := range e.rows(r.id) {
			counts[row.Kind]++
		}
		if counts["skill.tool_call_started"] != 1000 || counts["skill.tool_call_completed"] != 1000 {
			t.Errorf("invocation %s: %v", r.id, counts)
		}
		if lost := e.completedPayload(r.id)["audit_rows_lost"]; lost != float64(0) {
			t.Errorf("invocation %s lost %v rows", r.id, lost)
		}
	}
}
