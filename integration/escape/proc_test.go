//go:build integration

package escape

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillrun/skillrun/landlock/shim"
)

// Case 1, runc CVE-2019-5736: the skill opens the binary that started it
// (/proc/self/exe, /proc/1/exe = the shim, the shim's own bind mount, and
// each again through /proc/self/fd after an O_PATH open) for writing.
// Every open fails, and the host's skillrun binary and Python are
// byte-for-byte what they were.
func TestEscapeRuncOverwriteExe(t *testing.T) {
	e := newEnv(t)
	python, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		t.Skipf("needs /usr/bin/python3: %v", err)
	}
	binBefore, pyBefore := fileHash(t, skillrunBin), fileHash(t, python)
	shimBefore := ""
	if fileExists(shimBin) {
		shimBefore = fileHash(t, shimBin)
	}
	dir := e.skill("esc-runc-exe", "", py+`
W = os.O_WRONLY
def reopen(path, flags):
    fd = os.open(path, os.O_PATH)
    try:
        return os.open("/proc/self/fd/%d" % fd, flags)
    finally:
        os.close(fd)
attempt("self_exe_w", lambda: os.open("/proc/self/exe", W))
attempt("self_exe_rw", lambda: os.open("/proc/self/exe", os.O_RDWR))
attempt("self_exe_trunc", lambda: os.open("/proc/self/exe", W | os.O_TRUNC))
attempt("shim_exe_w", lambda: os.open("/proc/1/exe", W))
attempt("shim_exe_r", lambda: os.open("/proc/1/exe", os.O_RDONLY))
attempt("shim_mount_w", lambda: os.open("/run/skillrun/shim", W))
attempt("shim_mount_rw", lambda: os.open("/run/skillrun/shim", os.O_RDWR))
attempt("self_exe_opath_reopen_w", lambda: reopen("/proc/self/exe", W))
attempt("shim_opath_reopen_w", lambda: reopen("/run/skillrun/shim", W))
attempt("python_opath_reopen_rw", lambda: reopen(os.readlink("/proc/self/exe"), os.O_RDWR))
fd = os.open("/run/skillrun/shim", os.O_RDONLY)
attempt("shim_rdonly_fd_reopen_w", lambda: os.open("/proc/self/fd/%d" % fd, W))
attempt("shim_truncate", lambda: os.truncate("/run/skillrun/shim", 0))
attempt("shim_ftruncate", lambda: os.ftruncate(fd, 0))
attempt("shim_chmod", lambda: os.chmod("/run/skillrun/shim", 0o777))
attempt("shim_rename", lambda: os.rename("/run/skillrun/shim", "/run/skillrun/shim.old"))
`)
	r := e.exec(dir, run{})
	wantExit(t, r, 0)
	expect(t, r, map[string]string{
		// The binaries are root's, mode 0755: the permission check answers
		// before the read-only mount does, except where O_TRUNC, chmod and
		// rename ask the mount for write access first.
		"self_exe_w": "EACCES", "self_exe_rw": "EACCES", "self_exe_trunc": "EROFS",
		"shim_exe_w": "EACCES", "shim_exe_r": "EACCES",
		"shim_mount_w": "EACCES", "shim_mount_rw": "EACCES",
		"self_exe_opath_reopen_w": "EACCES", "shim_opath_reopen_w": "EACCES", "python_opath_reopen_rw": "EACCES",
		"shim_rdonly_fd_reopen_w": "EACCES", "shim_truncate": "EACCES", "shim_ftruncate": "EINVAL",
		"shim_chmod": "EROFS", "shim_rename": "EROFS",
	})
	if got := fileHash(t, skillrunBin); got != binBefore {
		t.Errorf("the host's skillrun binary changed: %s -> %s", binBefore, got)
	}
	if shimBefore != "" {
		if got := fileHash(t, shimBin); got != shimBefore {
			t.Errorf("the host's skillrun-shim binary changed: %s -> %s", shimBefore, got)
		}
	}
	if got := fileHash(t, python); got != pyBefore {
		t.Errorf("the host's %s changed", python)
	}
}

// Case 2, CVE-2024-21626: a descriptor of a host directory leaked into
// the container. The skill lists its own and the shim's descriptors,
// probes every number up to 1023, and tries to climb out of each one, out
// of /proc/self/fd/N and out of /proc/1/cwd, to a canary file that exists
// only on the host.
func TestEscapeLeakedFDs(t *testing.T) {
	e := newEnv(t)
	canaryDir := t.TempDir()
	os.Chmod(canaryDir, 0o755)
	canary := filepath.Join(canaryDir, "canary")
	const secret = "host-canary-21626"
	os.WriteFile(canary, []byte(secret), 0o644)
	dir := e.skill("esc-leaked-fds", "", py+`
import stat
canary = sys.argv[1]
mine = []
for name in os.listdir("/proc/self/fd"):
    try:
        os.readlink("/proc/self/fd/" + name)
        mine.append(int(name))
    except OSError:
        pass
out("listed_fds", ",".join(str(f) for f in sorted(mine)))
import fcntl
valid = []
for fd in range(0, 1024):
    try:
        fcntl.fcntl(fd, fcntl.F_GETFD)
        valid.append(fd)
    except OSError:
        pass
out("valid_fds", ",".join(str(f) for f in valid))
out("dir_fds", sum(1 for fd in valid if stat.S_ISDIR(os.fstat(fd).st_mode)))
attempt("shim_fds", lambda: os.listdir("/proc/1/fd"))
for fd in (0, 1, 2):
    attempt("openat_%d_dotdot" % fd, lambda: os.open("../../../../.." + canary, os.O_RDONLY, dir_fd=fd))
    attempt("chdir_proc_fd_%d" % fd, lambda: os.chdir("/proc/self/fd/%d" % fd))
attempt("chdir_shim_cwd", lambda: os.chdir("/proc/1/cwd"))
attempt("open_shim_cwd_canary", lambda: open("/proc/1/cwd/../../../.." + canary).read())
attempt("open_self_cwd_canary", lambda: open("/proc/self/cwd/../../../.." + canary).read())
attempt("open_canary", lambda: open(canary).read())
out("cwd", os.getcwd())
`)
	r := e.exec(dir, run{args: []string{canary}})
	wantExit(t, r, 0)
	expect(t, r, map[string]string{
		"listed_fds": "0,1,2", "valid_fds": "0,1,2", "dir_fds": "0", "shim_fds": "EACCES",
		"openat_0_dotdot": "ENOTDIR", "openat_1_dotdot": "ENOTDIR", "openat_2_dotdot": "ENOTDIR",
		"chdir_proc_fd_0": "ENOTDIR", "chdir_proc_fd_1": "ENOTDIR", "chdir_proc_fd_2": "ENOTDIR",
		"chdir_shim_cwd": "EACCES", "open_shim_cwd_canary": "EACCES", "open_self_cwd_canary": "ENOENT",
		"open_canary": "ENOENT", "cwd": "/skill",
	})
	if strings.Contains(r.stdout, secret) {
		t.Errorf("the host canary's contents reached the skill:\n%s", r.stdout)
	}
}

// Case 6: /proc/self/root and the other magic links lead to the sandbox's
// own root only; the shim's root and cwd are closed to the skill, and a
// file that exists only on the host is not reached through any of them.
func TestEscapeProcRootMagicLinks(t *testing.T) {
	e := newEnv(t)
	canaryDir := t.TempDir()
	os.Chmod(canaryDir, 0o755)
	canary := filepath.Join(canaryDir, "canary")
	const secret = "host-canary-magic"
	os.WriteFile(canary, []byte(secret), 0o644)
	dir := e.skill("esc-proc-root", "", py+`
canary = sys.argv[1]
def same(a, b):
    x, y = os.stat(a), os.stat(b)
    return "1" if (x.st_dev, x.st_ino) == (y.st_dev, y.st_ino) else "0"
out("self_root_link", os.readlink("/proc/self/root"))
out("thread_root_link", os.readlink("/proc/thread-self/root"))
out("self_root_is_root", same("/proc/self/root", "/"))
out("self_root_dotdot_is_root", same("/proc/self/root/../../..", "/"))
attempt("self_root_shadow", lambda: open("/proc/self/root/../../etc/shadow").read())
attempt("self_root_passwd", lambda: open("/proc/self/root/etc/passwd").read())
attempt("self_root_home", lambda: os.stat("/proc/self/root/home"))
attempt("self_root_canary", lambda: open("/proc/self/root/../.." + canary).read())
attempt("self_root_skill", lambda: os.stat("/proc/self/root/skill/SKILL.md"))
attempt("shim_root_list", lambda: os.listdir("/proc/1/root"))
attempt("shim_root_shadow", lambda: open("/proc/1/root/etc/shadow").read())
attempt("shim_root_canary", lambda: open("/proc/1/root" + canary).read())
attempt("shim_cwd_list", lambda: os.listdir("/proc/1/cwd"))
attempt("shim_cwd_readlink", lambda: os.readlink("/proc/1/cwd"))
attempt("shim_environ", lambda: open("/proc/1/environ").read())
attempt("shim_map_files", lambda: os.listdir("/proc/1/map_files"))
`)
	r := e.exec(dir, run{args: []string{canary}})
	wantExit(t, r, 0)
	expect(t, r, map[string]string{
		"self_root_link": "/", "thread_root_link": "/", "self_root_is_root": "1", "self_root_dotdot_is_root": "1",
		"self_root_shadow": "ENOENT", "self_root_passwd": "ENOENT", "self_root_home": "ENOENT",
		"self_root_canary": "ENOENT", "self_root_skill": "ok",
		"shim_root_list": "EACCES", "shim_root_shadow": "EACCES", "shim_root_canary": "EACCES",
		"shim_cwd_list": "EACCES", "shim_cwd_readlink": "EACCES", "shim_environ": "EACCES", "shim_map_files": "EACCES",
	})
	if strings.Contains(r.stdout, secret) {
		t.Errorf("the host canary's contents reached the skill:\n%s", r.stdout)
	}
}

// Case 10: the supervisor is not visible in the sandbox's pid namespace, so
// the skill goes for what it can see: the shim (pid 1). ptrace in every
// form, /proc/1/mem, process_vm_readv/writev, pidfd_getfd and kcmp fail;
// the shim is untraced afterwards and still supervises (the skill's own
// exit code comes back).
func TestEscapePtraceShim(t *testing.T) {
	e := newEnv(t)
	dir := e.skill("esc-ptrace", "", py+`
class IOV(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(64)
local = IOV(ctypes.cast(buf, ctypes.c_void_p), 64)
remote = IOV(0x400000, 64)
sc("ptrace_attach_shim", 101, 16, 1, 0, 0)
sc("ptrace_seize_shim", 101, 0x4206, 1, 0, 0)
sc("ptrace_traceme", 101, 0, 0, 0, 0)
pid = os.fork()
if pid == 0:
    time.sleep(5)
    os._exit(0)
sc("ptrace_attach_child", 101, 16, pid, 0, 0)
os.kill(pid, 9)
os.waitpid(pid, 0)
attempt("shim_mem_read", lambda: open("/proc/1/mem", "rb").read(1))
attempt("shim_mem_write", lambda: open("/proc/1/mem", "wb"))
sc("process_vm_readv_shim", 310, 1, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
sc("process_vm_writev_shim", 311, 1, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
r, err = raw(434, 1, 0)
out("pidfd_open_shim", "ok" if r >= 0 else ename(err))
if r >= 0:
    sc("pidfd_getfd_shim", 438, r, 0, 0)
    sc("pidfd_send_signal_shim", 424, r, 9, 0, 0)
sc("kcmp_shim", 312, os.getpid(), 1, 0, 0, 0)
status = open("/proc/1/status").read()
out("shim_tracer", [l.split()[1] for l in status.splitlines() if l.startswith("TracerPid:")][0])
sys.exit(7)
`)
	r := e.exec(dir, run{})
	wantExit(t, r, 7)
	expect(t, r, map[string]string{
		"ptrace_attach_shim": "EPERM", "ptrace_seize_shim": "EPERM", "ptrace_traceme": "EPERM", "ptrace_attach_child": "EPERM",
		"shim_mem_read": "EACCES", "shim_mem_write": "EACCES",
		"process_vm_readv_shim": "EPERM", "process_vm_writev_shim": "EPERM",
		"pidfd_open_shim": "ok", "pidfd_getfd_shim": "EPERM", "pidfd_send_signal_shim": "EPERM",
		"kcmp_shim": "EPERM", "shim_tracer": "0",
	})
}

// A Bash tool call starts a root shim that joins the running sandbox
// (libcontainer's setns path, where runc CVE-2016-9962 and CVE-2024-21626
// struck). While one runs, the skill scans /proc for every process that is
// not its own uid and tries its descriptors, cwd, root, exe, environ and
// memory: nothing opens.
func TestEscapeBashJoinerProcs(t *testing.T) {
	e := newEnv(t)
	dir := e.skill("esc-joiner", "allowed-tools: Bash(sleep 1)", py+`
import threading
connect()
res = {}
def bash():
    res["bash"] = tool("Bash", {"command": "sleep 1"})
th = threading.Thread(target=bash)
th.start()
me = os.getuid()
foreign, opened, seen = set(), [], set()
deadline = time.time() + 1.5
while time.time() < deadline and th.is_alive():
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            st = open("/proc/%s/status" % p).read()
        except OSError:
            continue
        uid = int([l.split()[1] for l in st.splitlines() if l.startswith("Uid:")][0])
        seen.add(p)
        if uid == me:
            continue
        foreign.add(p)
        for what, fn in (("fd", lambda: os.listdir("/proc/%s/fd" % p)),
                         ("cwd", lambda: os.listdir("/proc/%s/cwd" % p)),
                         ("root", lambda: os.listdir("/proc/%s/root" % p)),
                         ("exe", lambda: os.open("/proc/%s/exe" % p, os.O_RDONLY)),
                         ("environ", lambda: open("/proc/%s/environ" % p).read()),
                         ("mem", lambda: open("/proc/%s/mem" % p, "rb"))):
            try:
                fn()
                opened.append(p + ":" + what)
            except OSError:
                pass
th.join()
out("bash_exit", res["bash"]["exit_code"] if isinstance(res["bash"], dict) else res["bash"])
out("foreign_seen", len(foreign))
out("opened", ",".join(opened))
`)
	r := e.exec(dir, run{})
	wantExit(t, r, 0)
	expect(t, r, map[string]string{"bash_exit": "0", "opened": ""})
	got := lines(r.stdout)
	if got["foreign_seen"] == "0" {
		t.Errorf("the skill saw no process of another uid (not even the shim): the scan did not run\n%s", r.stdout)
	}
	t.Logf("processes of another uid seen during the Bash call: %s", got["foreign_seen"])
}

// 26+: the shim (skillrun-shim, or skillrun itself) is executable inside
// the sandbox (it re-executes itself as the exec stage). The skill execs it
// again with configs of its own: as uid 0 (refused by the config check),
// as uid 1 (setuid needs a capability the skill lacks; the shim's Go
// threads usually meet RLIMIT_NPROC first, and fork fails with EAGAIN),
// and the exec stage alone with its rlimits raised. Each exits 125 naming
// why, and the entrypoint (`id`) never runs.
func TestEscapeShimReexec(t *testing.T) {
	// A filter that allows everything: the sandbox's own stays in force,
	// as seccomp filters only ever stack.
	const allowAll = "BgAAAAAA/38=" // BPF_RET|BPF_K SECCOMP_RET_ALLOW
	cfg := func(uid int) string {
		return fmt.Sprintf(`{"protocol": %d, "entrypoint": "/usr/bin/id", "args": [], "env": [], "dir": "/skill", "uid": %d, "gid": %d, `+
			`"landlock": {"rules": [{"path": "/", "dir": true, "read": true, "exec": true}]}, "min_landlock_abi": 1, "rlimits": [], "seccomp": "%s"}`, shim.Protocol, uid, uid, allowAll)
	}
	raise := fmt.Sprintf(`{"protocol": %d, "entrypoint": "/usr/bin/id", "args": [], "env": [], "dir": "/skill", `+
		`"rlimits": [{"name": "RLIMIT_NPROC", "resource": 6, "soft": 100000, "hard": 100000}]}`, shim.Protocol)
	cases := []struct {
		name, stage, config string
		why                 []string // one of these
	}{
		{"esc-shim-uid0", shim.ShimCommand, cfg(0), []string{"the skill needs an unprivileged uid"}},
		{"esc-shim-uid1", shim.ShimCommand, cfg(1), []string{"as uid 1: operation not permitted", "as uid 1: resource temporarily unavailable"}},
		{"esc-exec-stage-rlimit", shim.ExecCommand, raise, []string{"setrlimit RLIMIT_NPROC: operation not permitted"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			// exec, not a child: RLIMIT_NPROC (8) counts the Go runtime's
			// threads, and Python's process would leave too few to fork.
			// The shim is a Go program: under the default RLIMIT_AS of
			// 512 MiB it cannot start at all, which would make this case
			// pass for the wrong reason.
			dir := e.skill(c.name, "x-max-address-space: 4GiB",
				"#!/bin/sh\nGOMAXPROCS=1 exec /run/skillrun/shim "+c.stage+" '"+c.config+"'\n")
			r := e.exec(dir, run{})
			wantExit(t, r, 125)
			if !slices.ContainsFunc(c.why, func(w string) bool { return strings.Contains(r.stderr, w) }) {
				t.Errorf("stderr does not say one of %q:\n%s", c.why, r.stderr)
			}
			if strings.Contains(r.stdout, "uid=") {
				t.Errorf("the entrypoint ran: %s", r.stdout)
			}
		})
	}
}
