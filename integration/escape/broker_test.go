//go:build integration

package escape

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Case 5, Read: the skill owns a writable declared directory, so it can
// race the broker from inside. A child swaps the allowed file with a
// symlink to /etc/shadow in a tight loop while the skill Reads it 2,000
// times through the broker: never shadow's bytes.
func TestEscapeBrokerReadSymlinkRace(t *testing.T) {
	e := newEnv(t)
	requires(t, readableShadow)
	shadow, _ := os.ReadFile("/etc/shadow")
	data := worldDir(t)
	dir := e.skill("esc-read-race", fmt.Sprintf("allowed-tools: Read, Write\nx-allowed-files: [%q]", data+"/**"), py+`
import mmap
D = sys.argv[1]
F = D + "/f"
with open(F, "w") as f:
    f.write("allowed contents\n")
counter = mmap.mmap(-1, 8)
racer = os.fork()
if racer == 0:
    n = 0
    while True:
        try:
            os.unlink(D + "/l.tmp")
        except OSError:
            pass
        os.symlink("/etc/shadow", D + "/l.tmp")
        os.rename(D + "/l.tmp", F)
        with open(D + "/r.tmp", "w") as f:
            f.write("allowed contents\n")
        os.rename(D + "/r.tmp", F)
        n += 1
        counter[0:8] = struct.pack("Q", n)
connect()
ok = denied = other = leaked = 0
reasons = {}
for i in range(2000):
    r = call("tool.call", {"tool": "Read", "args": {"path": F}})
    if "result" in r:
        if r["result"]["body"] == "allowed contents\n":
            ok += 1
        else:
            leaked += 1
            out("leak", r["result"]["body"][:40].replace("\n", "|"))
    else:
        reason = (r["error"].get("data") or {}).get("reason")
        reasons[reason] = reasons.get(reason, 0) + 1
        if reason == "file_violation":
            denied += 1
        else:
            other += 1
os.kill(racer, 9)
os.waitpid(racer, 0)
out("swaps", struct.unpack("Q", counter[0:8])[0])
out("ok", ok)
out("denied", denied)
out("other", other)
out("leaked", leaked)
out("reasons", json.dumps(reasons, sort_keys=True))
`)
	r := e.exec(dir, run{args: []string{data}})
	wantExit(t, r, 0)
	got := lines(r.stdout)
	if got["leaked"] != "0" || strings.Contains(r.stdout, string(shadow[:min(len(shadow), 16)])) {
		t.Fatalf("shadow's bytes reached the skill:\n%s", r.stdout)
	}
	ok, _ := strconv.Atoi(got["ok"])
	denied, _ := strconv.Atoi(got["denied"])
	other, _ := strconv.Atoi(got["other"])
	swaps, _ := strconv.Atoi(got["swaps"])
	if ok+denied+other != 2000 || ok == 0 || denied+other == 0 || swaps < 10 {
		t.Errorf("the race did not run both ways: %d ok, %d denied, %d other of 2,000 reads, %d swaps\n%s", ok, denied, other, swaps, r.stdout)
	}
	t.Logf("%d swaps; %d reads of the allowed file, %d file_violation, %d other %s", swaps, ok, denied, other, got["reasons"])
}

// Case 5, Write and Edit: a child of the skill swaps a subdirectory of the
// declared directory with a symlink to a host directory outside it
// (renameat2 RENAME_EXCHANGE, atomically, in a loop) while the skill
// Writes and Edits files "in" the subdirectory through the broker, which
// runs as root. Nothing is written outside: the victim directory holds
// exactly what it held.
func TestEscapeBrokerWriteSymlinkRace(t *testing.T) {
	e := newEnv(t)
	data := worldDir(t)
	victim := t.TempDir()
	os.WriteFile(filepath.Join(victim, "edit.txt"), []byte("victim-old\n"), 0o644)
	victimInfo, _ := os.Stat(victim)
	dir := e.skill("esc-write-race", fmt.Sprintf("allowed-tools: Read, Write, Edit\nx-allowed-files: [%q]", data+"/**"), py+`
import mmap
D, V = sys.argv[1], sys.argv[2]
os.mkdir(D + "/sub")
with open(D + "/sub/edit.txt", "w") as f:
    f.write("victim-old\n")
os.symlink(V, D + "/lnk")
counter = mmap.mmap(-1, 8)
racer = os.fork()
if racer == 0:
    n = 0
    while True:
        raw(316, -100 & 0xffffffffffffffff, (D + "/sub").encode(), -100 & 0xffffffffffffffff, (D + "/lnk").encode(), 2)
        n += 1
        counter[0:8] = struct.pack("Q", n)
connect()
counts = {}
for i in range(1000):
    res = tool("Write", {"path": D + "/sub/w%d.txt" % i, "body": "escape %d\n" % i})
    k = "write_ok" if isinstance(res, dict) else "write_" + res
    counts[k] = counts.get(k, 0) + 1
    if i % 10 == 0:
        res = tool("Edit", {"path": D + "/sub/edit.txt", "old": "victim-old", "new": "edited-%d" % i})
        k = "edit_ok" if isinstance(res, dict) else "edit_" + res
        counts[k] = counts.get(k, 0) + 1
os.kill(racer, 9)
os.waitpid(racer, 0)
out("swaps", struct.unpack("Q", counter[0:8])[0])
out("counts", json.dumps(counts, sort_keys=True))
`)
	r := e.exec(dir, run{args: []string{data, victim}})
	wantExit(t, r, 0)
	ents, _ := os.ReadDir(victim)
	var names []string
	for _, d := range ents {
		names = append(names, d.Name())
	}
	if !slices.Equal(names, []string{"edit.txt"}) {
		t.Errorf("the broker wrote into the victim directory outside the declaration: %v", names)
	}
	if b, _ := os.ReadFile(filepath.Join(victim, "edit.txt")); string(b) != "victim-old\n" {
		t.Errorf("the broker edited the victim file: %q", b)
	}
	if info, _ := os.Stat(victim); !info.ModTime().Equal(victimInfo.ModTime()) {
		t.Errorf("the victim directory was modified at %s", info.ModTime())
	}
	got := lines(r.stdout)
	if swaps, _ := strconv.Atoi(got["swaps"]); swaps < 100 || !strings.Contains(got["counts"], "write_ok") || !strings.Contains(got["counts"], "write_error") {
		t.Errorf("the race did not run: %s swaps, %s", got["swaps"], got["counts"])
	}
	t.Logf("%s swaps; %s", got["swaps"], got["counts"])
}

// fdScanner records, while a run lasts, every descriptor target of a host
// process that matches one of the watched strings.
type fdScanner struct {
	mu      sync.Mutex
	watch   []string
	matches []string
	stop    chan struct{}
	done    chan struct{}
}

func scanFDs(pid int) *fdScanner {
	s := &fdScanner{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		for {
			ents, _ := os.ReadDir(dir)
			for _, d := range ents {
				target, err := os.Readlink(filepath.Join(dir, d.Name()))
				if err != nil {
					continue
				}
				s.mu.Lock()
				for _, w := range s.watch {
					if strings.Contains(target, w) {
						s.matches = append(s.matches, target)
					}
				}
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return s
}

func (s *fdScanner) add(w string) {
	s.mu.Lock()
	s.watch = append(s.watch, w)
	s.mu.Unlock()
}

func (s *fdScanner) finish() []string {
	close(s.stop)
	<-s.done
	return s.matches
}

// Case 7: SCM_RIGHTS over the broker socket. The skill sends a memfd and
// both ends of a pipe with each request (whole, split across frames, 50
// times); the broker answers normally, never holds one of them (the host
// watches skillrun's descriptor table for them throughout), and never
// sends a descriptor back. Forged SCM_CREDENTIALS claiming root are
// refused by the kernel.
func TestEscapeBrokerSCMRights(t *testing.T) {
	e := newEnv(t)
	dir := e.skill("esc-scm-rights", "allowed-tools: Read", py+`
import array
connect()
m = os.memfd_create("skillrun-escape-scm")
pr, pw = os.pipe()
out("pipe", "pipe:[%d]" % os.fstat(pr).st_ino)
time.sleep(0.2)
rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [m, pr, pw]))]
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tool.list", "params": {}}).encode()
frame = struct.pack(">I", len(body)) + body
received = []
def recv_exact(n):
    data = b""
    while len(data) < n:
        d, anc, flags, _ = _sock.recvmsg(n - len(data), socket.CMSG_SPACE(64 * 4))
        if not d:
            raise EOFError("closed")
        data += d
        for lvl, typ, cd in anc:
            if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                a = array.array("i")
                a.frombytes(cd[:len(cd) - len(cd) % 4])
                received.extend(a)
    return data
def reply():
    (n,) = struct.unpack(">I", recv_exact(4))
    return json.loads(recv_exact(n))
_sock.sendmsg([frame], rights)
out("whole_reply", ",".join(t["name"] for t in reply()["result"]["tools"]))
_sock.sendmsg([frame[:2]], rights)
time.sleep(0.05)
_sock.sendmsg([frame[2:]], rights)
out("split_reply", ",".join(t["name"] for t in reply()["result"]["tools"]))
answered = 0
for i in range(50):
    _sock.sendmsg([frame], rights)
    if "result" in reply():
        answered += 1
out("answered", answered)
creds = struct.pack("iII", 1, 0, 0)
attempt("scm_credentials_as_root", lambda: _sock.sendmsg([frame], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, creds)]))
out("fds_received", len(received))
time.sleep(0.5)
out("after", ",".join(t["name"] for t in call("tool.list", {})["result"]["tools"]))
`)
	var sc *fdScanner
	p := e.start(dir, run{onLine: func(l string) {
		if v, ok := strings.CutPrefix(l, "pipe="); ok {
			sc.add(v)
		}
	}})
	sc = scanFDs(p.cmd.Process.Pid)
	sc.add("memfd:skillrun-escape-scm")
	r := p.wait()
	leaked := sc.finish()
	wantExit(t, r, 0)
	expect(t, r, map[string]string{
		"whole_reply": "Read", "split_reply": "Read", "answered": "50",
		"scm_credentials_as_root": "EPERM", "fds_received": "0", "after": "Read",
	})
	if len(leaked) > 0 {
		t.Errorf("skillrun held descriptors the skill sent: %v", slices.Compact(slices.Sorted(slices.Values(leaked))))
	}
}

// 26+: Glob and Grep walk a declared directory in which the skill planted
// symlinks to /etc, to /etc/shadow, to the directory itself (a loop) and
// to a host directory beside it. No result names a path outside the
// declaration and no line of a file outside it comes back.
func TestEscapeBrokerGlobGrepSymlinks(t *testing.T) {
	e := newEnv(t)
	requires(t, readableShadow)
	data := worldDir(t)
	outside := t.TempDir()
	os.Chmod(outside, 0o755)
	const marker = "outside-marker-zq"
	os.WriteFile(filepath.Join(outside, "o.txt"), []byte(marker+"\n"), 0o644)
	dir := e.skill("esc-glob-grep", fmt.Sprintf("allowed-tools: Read, Write, Glob, Grep\nx-allowed-files: [%q]", data+"/**"), py+`
D, O = sys.argv[1], sys.argv[2]
with open(D + "/in.txt", "w") as f:
    f.write("root inside\n")
os.symlink("/etc", D + "/etc")
os.symlink("/etc/shadow", D + "/shadow")
os.symlink(D, D + "/loop")
os.symlink(O, D + "/outside")
os.symlink(O + "/o.txt", D + "/o.txt")
connect()
r = tool("Glob", {"pattern": D + "/**"})
out("glob", ",".join(sorted(p[len(D):] for p in r["paths"])) if isinstance(r, dict) else r)
r = tool("Glob", {"pattern": D + "/*/*"})
out("glob_depth2", ",".join(sorted(p[len(D):] for p in r["paths"])) if isinstance(r, dict) else r)
r = tool("Grep", {"pattern": "root|zq", "path": D})
out("grep", ",".join(sorted("%s:%s" % (m["path"][len(D):], m["text"]) for m in r["matches"])) if isinstance(r, dict) else r)
r = tool("Grep", {"pattern": "root|zq", "path": D + "/etc"})
out("grep_via_link", r if not isinstance(r, dict) else ",".join(m["path"] for m in r["matches"]))
`)
	r := e.exec(dir, run{args: []string{data, outside}})
	wantExit(t, r, 0)
	got := lines(r.stdout)
	for _, k := range []string{"glob", "glob_depth2", "grep", "grep_via_link"} {
		v := got[k]
		if strings.Contains(v, "/etc/") || strings.Contains(v, outside) || strings.Contains(v, marker) || strings.Contains(v, "root:") {
			t.Errorf("%s reached outside the declared directory: %q", k, v)
		}
	}
	expect(t, r, map[string]string{"grep": "/in.txt:root inside", "grep_via_link": "error:file_violation"})
	t.Logf("glob: %s; depth 2: %s", got["glob"], got["glob_depth2"])
}
