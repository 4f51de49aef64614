//go:build integration

package integration

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// lines parses "key=value" lines a skill printed.
func lines(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

func wantExit(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
}

// Seed criteria 8 and 9: the skill sees exactly its variables and fds 0-2.
func TestEnvAndFds(t *testing.T) {
	e := newEnv(t)
	dir := e.skill("envfd", "", `#!/usr/bin/env python3
import os
for k in sorted(os.environ):
    print("env." + k + "=" + os.environ[k])
fd_dir = "/proc/self/fd"
fds = []
for name in os.listdir(fd_dir):
    try:
        target = os.readlink(fd_dir + "/" + name)
    except OSError:
        continue  # the descriptor listdir itself used, already closed
    fds.append(int(name))
print("fds=" + ",".join(str(f) for f in sorted(fds)))
print("uid=%d" % os.getuid())
`)
	r := e.exec(dir)
	wantExit(t, r, 0)
	got := lines(r.stdout)
	var names []string
	for k := range got {
		if strings.HasPrefix(k, "env.") {
			names = append(names, strings.TrimPrefix(k, "env."))
		}
	}
	slices.Sort(names)
	want := []string{"CYBEROS_BROKER_SOCKET", "CYBEROS_INVOCATION_ID", "CYBEROS_SKILL_ID", "CYBEROS_TENANT_ID", "HOME", "LANG", "PATH"}
	if !slices.Equal(names, want) {
		t.Fatalf("environment = %v, want exactly %v", names, want)
	}
	if got["env.CYBEROS_INVOCATION_ID"] != r.id || got["env.CYBEROS_SKILL_ID"] != "envfd" || got["env.CYBEROS_TENANT_ID"] != "default" {
		t.Fatalf("CYBEROS_* values: %v (invocation %s)", got, r.id)
	}
	// listdir's own descriptor may show as 3 and is gone by readlink time.
	if fds := strings.TrimSuffix(got["fds"], ",3"); fds != "0,1,2" {
		t.Fatalf("open fds = %q, want 0,1,2", got["fds"])
	}
	if uid, _ := strconv.Atoi(got["uid"]); uid < 200000 {
		t.Fatalf("skill runs as uid %d, want one of the invocation range", uid)
	}
}

// Seed criteria 10 and 11: RLIMIT_AS and the fork limit.
func TestMemoryAndForkLimits(t *testing.T) {
	e := newEnv(t)
	dir := e.skill("limits", "", `#!/usr/bin/env python3
import os, time
try:
    b = bytearray(1 << 30)
    print("malloc=ok")
except MemoryError:
    print("malloc=failed")
kids, failed = [], 0
for i in range(16):
    try:
        pid = os.fork()
    except OSError:
        failed += 1
        continue
    if pid == 0:
        time.sleep(2)
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
print("forked=%d" % len(kids))
print("fork_failed=%d" % failed)
`)
	r := e.exec(dir, "--timeout", "30s")
	wantExit(t, r, 0)
	got := lines(r.stdout)
	if got["malloc"] != "failed" {
		t.Errorf("a 1 GiB allocation under RLIMIT_AS 512 MiB: %q", got["malloc"])
	}
	forked, _ := strconv.Atoi(got["forked"])
	if forked > 8 || got["fork_failed"] == "0" {
		t.Errorf("forked %d of 16 children (%s failed); the 9th and later must fail", forked, got["fork_failed"])
	}
}

// Seed criteria 12 and 13: SIGTERM at 90% of the budget, SIGKILL at 100%
// with a skill.timeout row.
func TestTimeouts(t *testing.T) {
	e := newEnv(t)
	graceful := e.skill("graceful", "", `#!/bin/sh
start=$(date +%s%N)
trap 'echo "term_after_ms=$(( ($(date +%s%N) - start) / 1000000 ))"; exit 0' TERM
while :; do sleep 0.05; done
`)
	r := e.exec(graceful, "--timeout", "5s")
	wantExit(t, r, 124)
	ms, err := strconv.Atoi(lines(r.stdout)["term_after_ms"])
	if err != nil {
		t.Fatalf("the skill never reported SIGTERM:\n%s%s", r.stdout, r.stderr)
	}
	// 90% of 5 s is 4.5 s, counted from the supervisor's start, a little
	// before the shell's; never later than the kill at 5 s.
	if ms < 3500 || ms >= 5000 {
		t.Errorf("SIGTERM arrived after %d ms of a 5 s budget, want about 4500", ms)
	}
	stubborn := e.skill("stubborn", "", "#!/bin/sh\ntrap '' TERM\nwhile :; do sleep 0.05; done\n")
	r = e.exec(stubborn, "--timeout", "2s")
	wantExit(t, r, 124)
	if r.elapsed > 10*time.Second {
		t.Errorf("killed after %s, budget 2 s", r.elapsed)
	}
	k := kinds(e.rows(r.id))
	if !slices.Contains(k, "skill.timeout") || k[len(k)-1] != "skill.invoked_completed" {
		t.Fatalf("audit rows %v: want skill.timeout and skill.invoked_completed", k)
	}
}

// Seed criteria 16, 17 and 24 from inside a real sandbox.
func TestBrokerFromInside(t *testing.T) {
	e := newEnv(t)
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "x.txt"), []byte("hello file"), 0o644)
	dir := e.skill("brokered", fmt.Sprintf("allowed-tools: Read\nx-allowed-files: [%q]", data+"/**"), pyClient+`
connect()
r = call("tool.call", {"tool": "Read", "args": {"path": "`+data+`/x.txt"}})
print("read=" + r["result"]["body"])
r = call("tool.call", {"tool": "Read", "args": {"path": "/etc/passwd"}})
print("passwd_code=%d" % r["error"]["code"])
print("passwd_reason=" + r["error"]["data"]["reason"])
r = call("tool.call", {"tool": "Bash", "args": {"command": "id"}})
print("bash_code=%d" % r["error"]["code"])
print("bash_message=" + r["error"]["message"])
print("bash_reason=" + r["error"]["data"]["reason"])
big = json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tool.list", "params": {"pad": "x" * (2 << 20)}}).encode()
r = send_raw(big)
print("big_reason=" + r["error"]["data"]["reason"])
r = call("tool.list", {})
print("after_big=" + ",".join(t["name"] for t in r["result"]["tools"]))
`)
	r := e.exec(dir)
	wantExit(t, r, 0)
	got := lines(r.stdout)
	checks := map[string]string{
		"read": "hello file", "passwd_code": "-32603", "passwd_reason": "file_violation",
		"bash_code": "-32603", "bash_message": "tool_not_allowed", "bash_reason": "tool_not_in_allowed_tools",
		"big_reason": "request_too_large", "after_big": "Read",
	}
	for k, want := range checks {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
}

// Seed criterion 24: two concurrent invocations have distinct sockets and
// neither can reach the other's.
func TestConcurrentInvocationsAreSeparate(t *testing.T) {
	e := newEnv(t)
	a := e.skill("holder", "allowed-tools: Read", pyClient+`
connect()
call("tool.list", {})
import time
time.sleep(4)
`)
	e.trust(a)
	done := make(chan result, 1)
	go func() { done <- e.run("exec", "--invocation-id", "it-holder", a) }()
	sockA := "/tmp/cyberos-skill-broker.it-holder.sock"
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(sockA); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("invocation A never created its socket")
		}
		time.Sleep(20 * time.Millisecond)
	}
	info, _ := os.Stat(sockA)
	if info.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", info.Mode().Perm())
	}
	b := e.skill("prober", "allowed-tools: Read", pyClient+`
connect()
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("`+sockA+`")
    print("reach=connected")
except OSError as err:
    print("reach=%s" % err.strerror)
print("own=" + os.environ["CYBEROS_BROKER_SOCKET"])
`)
	rb := e.exec(b, "--invocation-id", "it-prober")
	wantExit(t, rb, 0)
	got := lines(rb.stdout)
	if got["reach"] == "connected" || got["reach"] == "" {
		t.Errorf("invocation B reached A's socket: %q", got["reach"])
	}
	ra := <-done
	wantExit(t, ra, 0)
	if _, err := os.Stat(sockA); !os.IsNotExist(err) {
		t.Errorf("socket %s left behind: %v", sockA, err)
	}
}

// Attacks from inside the sandbox that must fail.
func TestEscapesFail(t *testing.T) {
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	dir := e.skill("escapes", "", fmt.Sprintf(`#!/usr/bin/env python3
import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def sc(name, nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    print("%%s=%%s" %% (name, "ok" if r >= 0 else errno.errorcode.get(e, str(e))))
def attempt(name, fn):
    try:
        fn()
        print(name + "=ok")
    except OSError as err:
        print(name + "=" + errno.errorcode.get(err.errno, str(err.errno)))
attempt("read_host_file", lambda: open("/etc/hostname").read())
attempt("read_shadow", lambda: open("/etc/shadow").read())
attempt("write_usr", lambda: open("/usr/skillrun-escape", "w").write("x"))
attempt("write_proc_exe", lambda: open("/proc/self/exe", "wb").write(b"x"))
def tcp():
    s = socket.create_connection(("127.0.0.1", %d), timeout=2)
    s.close()
attempt("tcp_host_loopback", tcp)
sc("ptrace", 101, 0, 0, 0, 0)
sc("mount", 165, 0, 0, 0, 0, 0)
sc("unshare", 272, 0x10000000)
sc("keyctl", 250, 0, 0, 0, 0, 0)
sc("bpf", 321, 0, 0, 0)
sc("io_uring_setup", 425, 1, 0)
sc("userfaultfd", 323, 0)
sc("clone3", 435, 0, 0)
sc("open_by_handle_at", 304, 0, 0, 0)
buf = ctypes.c_char(b"x")
sc("tiocsti", 16, 0, 0x5412, ctypes.addressof(buf))
`, port))
	r := e.exec(dir)
	wantExit(t, r, 0)
	got := lines(r.stdout)
	for _, k := range []string{"read_host_file", "read_shadow", "write_usr", "write_proc_exe", "tcp_host_loopback",
		"ptrace", "mount", "unshare", "keyctl", "bpf", "io_uring_setup", "userfaultfd", "clone3", "open_by_handle_at", "tiocsti"} {
		if v, ok := got[k]; !ok || v == "ok" {
			t.Errorf("%s from inside the sandbox: %q, want a failure", k, v)
		}
	}
	if got["clone3"] != "ENOSYS" {
		t.Errorf("clone3 = %s, want ENOSYS (so libc falls back to clone)", got["clone3"])
	}
	for _, k := range []string{"ptrace", "mount", "unshare", "keyctl", "bpf", "io_uring_setup", "userfaultfd", "open_by_handle_at", "tiocsti"} {
		if got[k] != "EPERM" {
			t.Errorf("%s = %s, want EPERM from the seccomp filter", k, got[k])
		}
	}
	if _, err := os.Stat("/usr/skillrun-escape"); err == nil {
		os.Remove("/usr/skillrun-escape")
		t.Error("the skill wrote /usr/skillrun-escape on the host")
	}
	select {
	case <-accepted:
		t.Error("the skill connected to a port on the host's loopback")
	default:
	}
}

// Failure paths: each names its cause and exits with its own code.
func TestFailurePaths(t *testing.T) {
	e := newEnv(t)
	missing := e.skill("missing", "", "")
	r := e.exec(missing)
	wantExit(t, r, 127)
	if !strings.Contains(r.stderr, filepath.Join(missing, "main")) || !strings.Contains(r.stderr, "not found") {
		t.Errorf("stderr does not name the missing entrypoint:\n%s", r.stderr)
	}
	noexec := e.skill("noexec", "", "#!/bin/sh\necho hi\n")
	os.Chmod(filepath.Join(noexec, "main"), 0o644)
	r = e.exec(noexec)
	wantExit(t, r, 126)
	bad := e.skill("bad", "effort_minutes: soon", "#!/bin/sh\n")
	r = e.run("exec", bad)
	wantExit(t, r, 125)
	if !strings.Contains(r.stderr, "SKILL.md:4: effort_minutes:") {
		t.Errorf("stderr lacks SKILL.md:LINE:\n%s", r.stderr)
	}
	untrusted := e.skill("untrusted", "", "#!/bin/sh\necho ran\n")
	r = e.run("exec", untrusted)
	wantExit(t, r, 125)
	if strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, "skillrun trust") {
		t.Errorf("an untrusted skill ran or the error does not name the fix:\n%s%s", r.stdout, r.stderr)
	}
	exits := e.skill("exits", "", "#!/bin/sh\nexit 7\n")
	wantExit(t, e.exec(exits), 7)
	killed := e.skill("selfkill", "", "#!/bin/sh\nkill -USR1 $$\nsleep 5\n")
	wantExit(t, e.exec(killed), 128+10)
}

// A skill that declared tools and never connects is recorded no_connect
// and stopped; a successful tool call leaves exactly one started and one
// completed row.
func TestNoConnectAndToolRows(t *testing.T) {
	e := newEnv(t)
	silent := e.skill("silent", "allowed-tools: Read", "#!/bin/sh\nexec sleep 60\n")
	r := e.exec(silent, "--connect-timeout", "1s")
	wantExit(t, r, 125)
	if !strings.Contains(r.stderr, "did not connect") {
		t.Errorf("stderr does not say why:\n%s", r.stderr)
	}
	if k := kinds(e.rows(r.id)); !slices.Contains(k, "skill.no_connect") {
		t.Errorf("rows %v lack skill.no_connect", k)
	}
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "f"), []byte("x"), 0o644)
	caller := e.skill("caller", fmt.Sprintf("allowed-tools: Read\nx-allowed-files: [%q]", data+"/f"), pyClient+`
connect()
call("tool.call", {"tool": "Read", "args": {"path": "`+data+`/f"}})
call("tool.call", {"tool": "Bash", "args": {"command": "id"}})
`)
	r = e.exec(caller)
	wantExit(t, r, 0)
	count := map[string]int{}
	for _, k := range kinds(e.rows(r.id)) {
		count[k]++
	}
	want := map[string]int{"skill.invoked_started": 1, "skill.tool_call_started": 1, "skill.tool_call_completed": 1, "skill.tool_denied": 1, "skill.invoked_completed": 1}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("%s rows: %d, want %d (all: %v)", k, count[k], n, count)
		}
	}
}

// Bash runs inside the invocation's own sandbox, and only what the rules
// allow, part by part.
func TestBashInsideSandbox(t *testing.T) {
	e := newEnv(t)
	dir := e.skill("basher", "allowed-tools: Bash(id -u), Bash(ls /home /root /etc/hostname), Bash(cat /usr/lib/os-release:*)", pyClient+`
connect()
def bash(cmd):
    r = call("tool.call", {"tool": "Bash", "args": {"command": cmd}})
    if "error" in r:
        return "denied:" + r["error"]["data"]["reason"]
    return "ok:%d:%s%s" % (r["result"]["exit_code"], r["result"]["stdout"].strip().replace("\n", " "), r["result"]["stderr"].strip().replace("\n", " "))
print("uid=" + bash("id -u"))
print("root=" + bash("ls /home /root /etc/hostname"))
print("compound=" + bash("id -u && cat /etc/shadow"))
print("subst=" + bash("cat /usr/lib/os-release $(cat /etc/shadow)"))
print("other=" + bash("cat /etc/shadow"))
`)
	r := e.exec(dir)
	wantExit(t, r, 0)
	got := lines(r.stdout)
	uid, _ := strconv.Atoi(strings.TrimPrefix(got["uid"], "ok:0:"))
	if uid < 200000 {
		t.Errorf("Bash ran as %q, want the invocation's uid", got["uid"])
	}
	// The host has all three; the sandbox's root has none of them.
	if strings.Count(got["root"], "No such file or directory") != 3 {
		t.Errorf("Bash sees host paths: %q", got["root"])
	}
	for _, k := range []string{"compound", "subst", "other"} {
		if got[k] != "denied:command_not_allowed" && !(k == "other" && got[k] == "denied:command_not_allowed") {
			t.Errorf("%s = %q, want denied:command_not_allowed", k, got[k])
		}
	}
}

// The skill owns its socket (so it can connect to a 0600 file) but cannot
// open it up to other users of the host: the mount is read-only.
func TestSocketCannotBeChmodded(t *testing.T) {
	e := newEnv(t)
	dir := e.skill("chmodder", "allowed-tools: Read", pyClient+`
import errno
connect()
try:
    os.chmod(os.environ["CYBEROS_BROKER_SOCKET"], 0o666)
    print("chmod=ok")
except OSError as err:
    print("chmod=" + errno.errorcode[err.errno])
r = call("tool.list", {})
print("still_works=%d" % len(r["result"]["tools"]))
`)
	r := e.exec(dir, "--invocation-id", "it-chmod")
	wantExit(t, r, 0)
	got := lines(r.stdout)
	if got["chmod"] == "ok" || got["still_works"] != "1" {
		t.Fatalf("chmod of the socket: %v", got)
	}
}
