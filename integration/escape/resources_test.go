//go:build integration

package escape

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skillrun/skillrun/store"
)

// hostSleep starts `sleep 60` on the host, as root or (with setpriv) as
// uid, and returns its pid and a check that it is still alive.
func hostSleep(t *testing.T, uid int) (int, func() bool) {
	t.Helper()
	var cmd *exec.Cmd
	if uid == 0 {
		cmd = exec.Command("sleep", "60")
	} else {
		id := strconv.Itoa(uid)
		cmd = exec.Command("setpriv", "--reuid="+id, "--regid="+id, "--clear-groups", "sleep", "60")
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	return cmd.Process.Pid, func() bool {
		select {
		case <-exited:
			return false
		default:
			return true
		}
	}
}

// Case 19: signals out of the sandbox. A host process of root and one of
// the invocation's own uid (outside the sandbox) run beside it. The skill
// kill(-1, SIGKILL)s (which kills its own child, proving the call does
// something), signals the shim, and signals both host pids by number, by
// group and through pidfd_open, tgkill and rt_sigqueueinfo. Both host
// processes survive, and so does the shim: the skill's own code comes back.
func TestEscapeKillOutsideSandbox(t *testing.T) {
	e := newEnv(t)
	requires(t, setpriv)
	// A fresh state root hands out the first uid of the range.
	rootPid, rootAlive := hostSleep(t, 0)
	uidPid, uidAlive := hostSleep(t, uidBase)
	dir := e.skill("esc-kill", "", py+`
hostpids = [int(a) for a in sys.argv[1:]]
out("uid", os.getuid())
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
sc("kill_all", 62, -1 & 0xffffffffffffffff, 9)
_, st = os.waitpid(child, 0)
out("child_killed_by", os.WTERMSIG(st) if os.WIFSIGNALED(st) else "exit")
sc("kill_all_again", 62, -1 & 0xffffffffffffffff, 9)
sc("kill_shim", 62, 1, 9)
sc("term_shim", 62, 1, 15)
# si_signo, si_errno, si_code = SI_QUEUE: what the kernel accepts from a
# process for another one.
info = ctypes.create_string_buffer(struct.pack("iii", 9, 0, -1) + b"\0" * 116)
for name, pid in (("root", hostpids[0]), ("same_uid", hostpids[1])):
    sc("kill_host_" + name, 62, pid, 9)
    sc("kill_host_group_" + name, 62, -pid & 0xffffffffffffffff, 9)
    sc("tgkill_host_" + name, 234, pid, pid, 9)
    sc("sigqueue_host_" + name, 129, pid, 9, info)
    sc("pidfd_open_host_" + name, 434, pid, 0)
sys.exit(3)
`)
	r := e.exec(dir, run{args: []string{strconv.Itoa(rootPid), strconv.Itoa(uidPid)}})
	wantExit(t, r, 3)
	want := map[string]string{
		"uid": strconv.Itoa(uidBase), "kill_all": "ok", "child_killed_by": "9", "kill_all_again": "ESRCH",
		"kill_shim": "EPERM", "term_shim": "EPERM",
	}
	for _, n := range []string{"root", "same_uid"} {
		for _, k := range []string{"kill_host_", "kill_host_group_", "tgkill_host_", "sigqueue_host_", "pidfd_open_host_"} {
			want[k+n] = "ESRCH"
		}
	}
	expect(t, r, want)
	time.Sleep(100 * time.Millisecond)
	if !rootAlive() {
		t.Errorf("the host's root process %d was killed", rootPid)
	}
	if !uidAlive() {
		t.Errorf("the host's process %d of uid %d was killed", uidPid, uidBase)
	}
}

// Case 23: a fork bomb. Every process forks and spins; the skill's own
// forks stop at RLIMIT_NPROC (8, with the pids cgroup behind it) with
// EAGAIN. While it rages, a host `true` starts in well under a second;
// the invocation ends with the skill's own code (or its timeout); and no
// process of the invocation's uid is left on the host afterwards.
func TestEscapeForkBomb(t *testing.T) {
	e := newEnv(t)
	dir := e.skill("esc-fork-bomb", "", py+`
out("uid", os.getuid())
def spin():
    while True:
        try:
            os.fork()
        except OSError:
            pass
        for _ in range(20000):
            pass
forked, err = 0, None
while forked < 10000:
    try:
        pid = os.fork()
    except OSError as e:
        err = ename(e.errno)
        break
    if pid == 0:
        spin()
    forked += 1
out("forked", forked)
out("fork_errno", err)
out("bombing", 1)
time.sleep(3)
out("done", 1)
`)
	var mu sync.Mutex
	var worst time.Duration
	var samples int
	var wg sync.WaitGroup
	p := e.start(dir, run{flags: []string{"--timeout", "30s"}, onLine: func(l string) {
		if l != "bombing=1" {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); {
				start := time.Now()
				exec.Command("true").Run()
				d := time.Since(start)
				mu.Lock()
				worst, samples = max(worst, d), samples+1
				mu.Unlock()
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}})
	r := p.wait()
	wg.Wait()
	if r.code != 0 && r.code != 124 {
		t.Fatalf("exit %d, want the skill's 0 or the timeout's 124\n%s%s", r.code, r.stdout, r.stderr)
	}
	got := lines(r.stdout)
	forked, _ := strconv.Atoi(got["forked"])
	if forked < 1 || forked > 7 || got["fork_errno"] != "EAGAIN" {
		t.Errorf("the skill forked %d times, then %q; want 1-7 (RLIMIT_NPROC 8), then EAGAIN", forked, got["fork_errno"])
	}
	if samples == 0 || worst >= time.Second {
		t.Errorf("the host was not responsive during the bomb: %d runs of true, the slowest %s", samples, worst)
	}
	uid, _ := strconv.Atoi(got["uid"])
	if left := waitNoProcs(uid, 5*time.Second); uid == 0 || len(left) > 0 {
		t.Errorf("processes of the invocation's uid %d left on the host: %v", uid, left)
	}
	t.Logf("forked %d, exit %d in %s; host `true` slowest %s over %d runs", forked, r.code, r.elapsed, worst, samples)
}

// dirBytes is the size of the files under root.
func dirBytes(root string) int64 {
	var n int64
	filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

func freeBytes(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// Case 24: filling /tmp. The skill's /tmp is a 64 MiB tmpfs: writing until
// it fails stops with ENOSPC after about 64 MiB, and the skill carries on
// once it frees the space. The state root does not grow, and the host's
// /tmp does not lose 64 MiB while the skill's is full and get it back when
// the skill deletes its file (either alone could be other work on the
// host; both together would be the skill's writes).
func TestEscapeDiskFill(t *testing.T) {
	e := newEnv(t)
	dir := e.skill("esc-disk-fill", "", py+`
st = os.statvfs("/tmp")
out("tmp_bytes", st.f_blocks * st.f_frsize)
tmp = [l for l in open("/proc/self/mountinfo").read().splitlines() if l.split()[4] == "/tmp"][-1]
out("tmp_fstype", tmp.split(" - ")[1].split()[0])
written, chunk = 0, b"x" * (1 << 20)
fd = os.open("/tmp/fill", os.O_WRONLY | os.O_CREAT, 0o600)
try:
    while True:
        written += os.write(fd, chunk)
except OSError as err:
    out("fill_errno", ename(err.errno))
os.close(fd)
out("written_mib", written >> 20)
out("full", 1)
time.sleep(0.3)
os.unlink("/tmp/fill")
out("freed", 1)
time.sleep(0.3)
attempt("write_after", lambda: open("/tmp/small", "w").write("ok"))
`)
	hostTmp := os.TempDir()
	free, rootBefore := freeBytes(t, hostTmp), dirBytes(e.root)
	var freeFull, freeFreed, rootFull int64 = -1, -1, -1
	r := e.exec(dir, run{onLine: func(l string) {
		switch l {
		case "full=1":
			freeFull, rootFull = freeBytes(t, hostTmp), dirBytes(e.root)
		case "freed=1":
			freeFreed = freeBytes(t, hostTmp)
		}
	}})
	wantExit(t, r, 0)
	expect(t, r, map[string]string{"tmp_bytes": strconv.Itoa(64 << 20), "tmp_fstype": "tmpfs", "fill_errno": "ENOSPC", "write_after": "ok"})
	if mib, _ := strconv.Atoi(lines(r.stdout)["written_mib"]); mib < 60 || mib > 64 {
		t.Errorf("wrote %d MiB into /tmp, want the 64 MiB of its tmpfs", mib)
	}
	if freeFull < 0 || freeFreed < 0 {
		t.Fatal("the skill never reported a full, then freed, /tmp")
	}
	if grew := rootFull - rootBefore; grew > 16<<20 {
		t.Errorf("the state root grew by %d MiB while the skill's /tmp was full", grew>>20)
	}
	const sign = 48 << 20
	if drop, back := free-freeFull, freeFreed-freeFull; drop > sign && back > sign {
		t.Errorf("the host's %s lost %d MiB while the skill's /tmp was full and got %d MiB back when it deleted its file", hostTmp, drop>>20, back>>20)
	}
}

// Case 25: memory past x-max-memory. With x-max-memory 64MiB and
// x-max-address-space 1GiB (so that RLIMIT_AS is not what stops it), the
// skill allocates and touches 8 MiB at a time: the memory cgroup's OOM
// killer ends it. Exit 137, and the invocation's last audit row records
// outcome killed, not a timeout.
func TestEscapeMemoryExhaustion(t *testing.T) {
	e := newEnv(t)
	dir := e.skill("esc-oom", "x-max-memory: 64MiB\nx-max-address-space: 1GiB", py+`
chunks = []
for i in range(128):
    b = bytearray(8 << 20)
    for j in range(0, len(b), 4096):
        b[j] = 1
    chunks.append(b)
    out("mib", (i + 1) * 8)
out("survived", 1)
`)
	r := e.exec(dir, run{})
	wantExit(t, r, 137)
	got := lines(r.stdout)
	if mib, _ := strconv.Atoi(got["mib"]); got["survived"] != "" || mib > 64 {
		t.Errorf("the skill touched %d MiB under a 64 MiB limit (survived=%q)", mib, got["survived"])
	}
	rows := e.rows(r.id)
	var kinds []string
	for _, row := range rows {
		kinds = append(kinds, row.Kind)
	}
	if slices.Contains(kinds, store.KindTimeout) || len(rows) == 0 || rows[len(rows)-1].Kind != store.KindInvokedCompleted {
		t.Fatalf("audit rows %v: want skill.invoked_completed last and no skill.timeout", kinds)
	}
	var done struct {
		Outcome  string `json:"outcome"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal(rows[len(rows)-1].Payload, &done); err != nil {
		t.Fatal(err)
	}
	if done.Outcome != "killed" || done.ExitCode != 137 {
		t.Errorf("invoked_completed: outcome %q, exit code %d; want killed, 137 (%s)", done.Outcome, done.ExitCode, strings.TrimSpace(string(rows[len(rows)-1].Payload)))
	}
}
