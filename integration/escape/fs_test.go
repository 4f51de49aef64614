//go:build integration

package escape

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// 26+: /sys is not mounted, /proc/sys is read-only, the kernel's knobs
// and the skill's own OOM protection cannot be changed, and the skill's
// cgroups are all "/" (a cgroup namespace). The host's core_pattern is
// unchanged.
func TestEscapeSysAndProcSys(t *testing.T) {
	e := newEnv(t)
	corePattern, _ := os.ReadFile("/proc/sys/kernel/core_pattern")
	dir := e.skill("esc-sys", "", py+`
for p in ("/sys", "/sys/fs/cgroup", "/sys/kernel/security", "/sys/firmware"):
    attempt("stat" + p.replace("/", "_"), lambda: os.stat(p))
def write(p, v):
    with open(p, "w") as f:
        f.write(v)
attempt("core_pattern", lambda: write("/proc/sys/kernel/core_pattern", "|/tmp/x"))
attempt("hostname", lambda: write("/proc/sys/kernel/hostname", "pwned"))
attempt("drop_caches", lambda: write("/proc/sys/vm/drop_caches", "3"))
attempt("oom_score_adj_lower", lambda: write("/proc/self/oom_score_adj", "-1000"))
attempt("sysrq_trigger", lambda: write("/proc/sysrq-trigger", "h"))
attempt("kcore", lambda: open("/proc/kcore", "rb").read(1))
out("keys_bytes", len(open("/proc/keys").read()))
out("cgroups_all_root", "1" if all(l.endswith(":/") for l in open("/proc/self/cgroup").read().splitlines()) else "0")
`)
	r := e.exec(dir, run{})
	wantExit(t, r, 0)
	expect(t, r, map[string]string{
		"stat_sys": "ENOENT", "stat_sys_fs_cgroup": "ENOENT", "stat_sys_kernel_security": "ENOENT", "stat_sys_firmware": "ENOENT",
		"core_pattern": "EROFS", "hostname": "EROFS", "drop_caches": "EROFS",
		"oom_score_adj_lower": "EACCES", "keys_bytes": "0", "cgroups_all_root": "1",
	})
	got := lines(r.stdout)
	// Absent from some kernels (ENOENT), masked or read-only on others.
	for _, k := range []string{"sysrq_trigger", "kcore"} {
		if got[k] == "ok" || got[k] == "" {
			t.Errorf("%s = %q, want a failure", k, got[k])
		}
	}
	if after, _ := os.ReadFile("/proc/sys/kernel/core_pattern"); string(after) != string(corePattern) {
		t.Errorf("the host's core_pattern changed: %q -> %q", corePattern, after)
	}
}

// 26+: /dev holds exactly null, zero, full, random and urandom (plus
// libcontainer's links into /proc/self/fd and to pts/ptmx, which leads
// nowhere); no disk, memory, console, kvm, tun or fuse node; and no new
// node can be made.
func TestEscapeDevNodes(t *testing.T) {
	e := newEnv(t)
	dir := e.skill("esc-dev", "", py+`
for d in ("null", "zero", "full", "random", "urandom"):
    st = os.stat("/dev/" + d)
    out("dev_" + d, "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev)))
for d in ("tty", "console", "kmsg", "mem", "kmem", "port", "kvm", "fuse", "net/tun", "sda", "vda", "nvme0n1",
          "loop0", "loop-control", "userfaultfd", "pts", "shm", "hpet", "dri", "snd", "vhost-net", "cpu/0/msr"):
    attempt("stat_" + d.replace("/", "_"), lambda: os.stat("/dev/" + d))
attempt("open_ptmx", lambda: os.open("/dev/ptmx", os.O_RDWR))
attempt("mknod_mem_in_tmp", lambda: os.mknod("/tmp/mem", 0o20600, os.makedev(1, 1)))
attempt("mknod_disk_in_tmp", lambda: os.mknod("/tmp/disk", 0o60600, os.makedev(254, 0)))
attempt("mknod_in_dev", lambda: os.mknod("/dev/mem", 0o20600, os.makedev(1, 1)))
attempt("mknod_fifo_in_tmp", lambda: os.mknod("/tmp/fifo", 0o10600))
`)
	r := e.exec(dir, run{})
	wantExit(t, r, 0)
	want := map[string]string{
		"dev_null": "1:3", "dev_zero": "1:5", "dev_full": "1:7", "dev_random": "1:8", "dev_urandom": "1:9",
		"open_ptmx": "ENOENT", "mknod_mem_in_tmp": "EACCES", "mknod_disk_in_tmp": "EACCES", "mknod_in_dev": "EACCES",
		"mknod_fifo_in_tmp": "ok",
	}
	for _, d := range []string{"tty", "console", "kmsg", "mem", "kmem", "port", "kvm", "fuse", "net_tun", "sda", "vda", "nvme0n1",
		"loop0", "loop-control", "userfaultfd", "pts", "shm", "hpet", "dri", "snd", "vhost-net", "cpu_0_msr"} {
		want["stat_"+d] = "ENOENT"
	}
	expect(t, r, want)
}

// setuidProbe prints the ids and effective capabilities it runs with.
const setuidProbe = `
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void) {
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	printf("probe_ruid=%d\nprobe_euid=%d\nprobe_egid=%d\n", getuid(), geteuid(), getegid());
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "CapEff:", 7) == 0)
			printf("probe_capeff=%s", line + 8);
	return 0;
}
`

// 26+: setuid binaries and file capabilities. The test installs a probe
// under the host's /usr/local/lib (removed afterwards), setuid root, and a
// copy with cap_dac_override,cap_setuid+ep; the skill runs both and the
// host's own setuid `su`. no_new_privs and the nosuid mount of /usr keep
// every one at the skill's uid with no capability.
func TestEscapeSetuidBinaries(t *testing.T) {
	e := newEnv(t)
	requires(t, cc)
	lib, err := os.MkdirTemp("/usr/local/lib", "skillrun-escape-")
	if err != nil {
		t.Skipf("needs a writable /usr/local/lib for the setuid probe: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(lib) })
	os.Chmod(lib, 0o755)
	suid, fcap := filepath.Join(lib, "suid"), filepath.Join(lib, "fcap")
	compileC(t, setuidProbe, suid)
	compileC(t, setuidProbe, fcap)
	if err := os.Chmod(suid, 0o4755|fs.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	os.Chmod(suid, fs.ModeSetuid|0o755)
	hasCaps := exec.Command("setcap", "cap_dac_override,cap_setuid+ep", fcap).Run() == nil
	dir := e.skill("esc-setuid", "", py+`
import subprocess
def probe(name, path):
    try:
        o = subprocess.run([path], capture_output=True, text=True, timeout=10).stdout
    except OSError as err:
        out(name, ename(err.errno))
        return
    for l in o.splitlines():
        k, v = l.split("=", 1)
        out(name + "." + k, v.strip())
out("uid", os.getuid())
probe("suid", sys.argv[1])
probe("fcap", sys.argv[2])
st = os.stat(sys.argv[1])
out("suid_bit_visible", "1" if st.st_mode & 0o4000 else "0")
o = subprocess.run(["/usr/bin/su", "-c", "id -u", "root"], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=10)
out("su_exit", o.returncode)
out("su_printed_root", "1" if o.stdout.strip() == "0" else "0")
nnp = [l.split()[1] for l in open("/proc/self/status").read().splitlines() if l.startswith("NoNewPrivs:")][0]
out("no_new_privs", nnp)
usr = [l for l in open("/proc/self/mountinfo").read().splitlines() if l.split()[4] == "/usr"][-1]
out("usr_nosuid", "1" if "nosuid" in usr.split()[5].split(",") else "0")
`)
	r := e.exec(dir, run{args: []string{suid, fcap}})
	wantExit(t, r, 0)
	uid := lines(r.stdout)["uid"]
	want := map[string]string{
		"suid_bit_visible": "1", "no_new_privs": "1", "usr_nosuid": "1", "su_printed_root": "0",
		"suid.probe_ruid": uid, "suid.probe_euid": uid, "suid.probe_egid": uid, "suid.probe_capeff": "0000000000000000",
	}
	if hasCaps {
		for k, v := range map[string]string{"fcap.probe_euid": uid, "fcap.probe_capeff": "0000000000000000"} {
			want[k] = v
		}
	} else {
		t.Log("setcap failed: the file-capability probe runs without capabilities")
	}
	expect(t, r, want)
	if lines(r.stdout)["su_exit"] == "0" {
		t.Errorf("su succeeded inside the sandbox:\n%s", r.stdout)
	}
}

// 26+: writing the sandbox's system directories: the loader cache, /etc,
// /usr, the skill folder, /run/skillrun and the root itself. All fail;
// the host's loader cache and the skill's own files are unchanged and no
// file appeared in the host's /etc or /usr.
func TestEscapeWriteSystemDirs(t *testing.T) {
	e := newEnv(t)
	ldBefore := fileHash(t, "/etc/ld.so.cache")
	dir := e.skill("esc-write-system", "", py+`
W, C = os.O_WRONLY, os.O_WRONLY | os.O_CREAT
attempt("ld_so_cache_w", lambda: os.open("/etc/ld.so.cache", W))
attempt("ld_so_cache_trunc", lambda: os.open("/etc/ld.so.cache", W | os.O_TRUNC))
attempt("create_etc", lambda: os.open("/etc/skillrun-escape", C, 0o644))
attempt("create_usr", lambda: os.open("/usr/skillrun-escape", C, 0o644))
attempt("create_usr_local", lambda: os.open("/usr/local/skillrun-escape", C, 0o644))
attempt("alternatives_symlink", lambda: os.symlink("/tmp/x", "/etc/alternatives/skillrun-escape"))
attempt("skill_main_trunc", lambda: os.open("/skill/main", W | os.O_TRUNC))
attempt("skill_create", lambda: os.open("/skill/new", C, 0o755))
attempt("skill_rename", lambda: os.rename("/skill/main", "/skill/main2"))
attempt("run_skillrun_create", lambda: os.open("/run/skillrun/x", C, 0o644))
attempt("root_mkdir", lambda: os.mkdir("/escape"))
`)
	main := filepath.Join(dir, "main")
	mainBefore := fileHash(t, main)
	r := e.exec(dir, run{})
	wantExit(t, r, 0)
	expect(t, r, map[string]string{
		"ld_so_cache_w": "EACCES", "ld_so_cache_trunc": "EROFS", "create_etc": "EROFS", "create_usr": "EROFS",
		"create_usr_local": "EROFS", "alternatives_symlink": "EROFS", "skill_main_trunc": "EROFS", "skill_create": "EROFS",
		"skill_rename": "EROFS", "run_skillrun_create": "EROFS", "root_mkdir": "EROFS",
	})
	if fileHash(t, "/etc/ld.so.cache") != ldBefore {
		t.Error("the host's /etc/ld.so.cache changed")
	}
	if fileHash(t, main) != mainBefore {
		t.Error("the skill's own main changed on the host")
	}
	for _, p := range []string{"/etc/skillrun-escape", "/usr/skillrun-escape", "/usr/local/skillrun-escape", "/etc/alternatives/skillrun-escape"} {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("the skill created %s on the host", p)
		}
	}
}

// 26+: setuid and setgid bits in a declared writable directory. The
// directory is bind-mounted nosuid inside the sandbox, but on the host it
// is an ordinary directory: a file the skill marks setuid there is a
// setuid-<invocation uid> program for any host user who runs it, and a
// setgid directory hands the invocation's gid to what others create in
// it. The skill tries chmod 06755 on a copy of id, O_CREAT with mode
// 04755, and chmod 02777 on a directory; no file under the directory may
// carry either bit afterwards. The seccomp filter refuses the bits in
// every mode argument, so even the sandbox's own /tmp refuses them (and
// /tmp is noexec besides).
func TestEscapeSetuidBitInWritableDir(t *testing.T) {
	e := newEnv(t)
	data := worldDir(t)
	dir := e.skill("esc-setuid-bit", fmt.Sprintf("allowed-tools: Read, Write\nx-allowed-files: [%q]", data+"/**"), py+`
import shutil
D = sys.argv[1]
connect()
shutil.copy("/usr/bin/id", D + "/id")
attempt("chmod_setuid_setgid", lambda: os.chmod(D + "/id", 0o6755))
attempt("creat_setuid", lambda: os.close(os.open(D + "/created", os.O_CREAT | os.O_WRONLY, 0o4755)))
os.mkdir(D + "/sgid")
attempt("chmod_setgid_dir", lambda: os.chmod(D + "/sgid", 0o2777))
shutil.copy("/usr/bin/id", "/tmp/id")
attempt("chmod_setuid_tmp", lambda: os.chmod("/tmp/id", 0o4755))
attempt("exec_setuid_tmp", lambda: os.execv("/tmp/id", ["/tmp/id"]))
`)
	r := e.exec(dir, run{args: []string{data}})
	wantExit(t, r, 0)
	expect(t, r, map[string]string{"chmod_setuid_setgid": "EPERM", "creat_setuid": "EPERM", "chmod_setgid_dir": "EPERM",
		"chmod_setuid_tmp": "EPERM", "exec_setuid_tmp": "EACCES"})
	var marked []string
	filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, err := d.Info()
		if err == nil && info.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			st := info.Sys().(*syscall.Stat_t)
			marked = append(marked, fmt.Sprintf("%s %v uid %d gid %d", p, info.Mode(), st.Uid, st.Gid))
		}
		return nil
	})
	if len(marked) > 0 {
		t.Errorf("the skill left setuid/setgid files on the host (skill side: chmod %s, creat %s, dir %s):\n  %s",
			lines(r.stdout)["chmod_setuid_setgid"], lines(r.stdout)["creat_setuid"], lines(r.stdout)["chmod_setgid_dir"],
			strings.Join(marked, "\n  "))
		if ok, _ := setpriv(); ok {
			// What that means: any host user runs as the invocation's uid.
			b, _ := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", filepath.Join(data, "id")).CombinedOutput()
			t.Errorf("uid 65534 running %s/id on the host gets: %s", data, strings.TrimSpace(string(b)))
		}
	}
}

// 26+: hard links into a declared writable directory. Linking the shim,
// the skill's own entrypoint, Python, the loader cache or the broker
// socket in from another mount is EXDEV, and so is every trick through a
// descriptor (AT_EMPTY_PATH, /proc/self/fd); linking a root-only file that
// lies in the directory is EPERM (protected_hardlinks). The host's
// skillrun binary keeps one link and the directory holds only what the
// host put there.
func TestEscapeHardLinksIntoWritableDir(t *testing.T) {
	e := newEnv(t)
	data := worldDir(t)
	rootOnly := filepath.Join(data, "root-only")
	os.WriteFile(rootOnly, []byte("root only"), 0o600)
	dir := e.skill("esc-hardlink", fmt.Sprintf("allowed-tools: Read, Write\nx-allowed-files: [%q]", data+"/**"), py+`
D = sys.argv[1]
connect()
for name, src in (("shim", "/run/skillrun/shim"), ("entrypoint", "/skill/main"), ("python", os.path.realpath("/usr/bin/python3")),
                  ("ld_so_cache", "/etc/ld.so.cache"), ("broker_socket", "/run/skillrun/broker.sock")):
    attempt("link_" + name, lambda: os.link(src, D + "/" + name))
attempt("link_root_only", lambda: os.link(D + "/root-only", D + "/mine"))
fd = os.open("/run/skillrun/shim", os.O_PATH)
sc("linkat_empty_path_shim", 265, fd, b"", -100 & 0xffffffffffffffff, (D + "/shim2").encode(), 0x1000)
sc("linkat_proc_fd_shim", 265, -100 & 0xffffffffffffffff, ("/proc/self/fd/%d" % fd).encode(), -100 & 0xffffffffffffffff, (D + "/shim3").encode(), 0x400)
attempt("rename_entrypoint_in", lambda: os.rename("/skill/main", D + "/main"))
`)
	r := e.exec(dir, run{args: []string{data}})
	wantExit(t, r, 0)
	expect(t, r, map[string]string{
		"link_shim": "EXDEV", "link_entrypoint": "EXDEV", "link_python": "EXDEV", "link_ld_so_cache": "EXDEV",
		"link_broker_socket": "EXDEV", "link_root_only": "EPERM", "linkat_empty_path_shim": "EXDEV",
		"linkat_proc_fd_shim": "EXDEV", "rename_entrypoint_in": "EXDEV",
	})
	for _, bin := range []string{skillrunBin, shimBin} {
		var st syscall.Stat_t
		if err := syscall.Stat(bin, &st); err == nil && st.Nlink != 1 {
			t.Errorf("the host's %s has %d links", bin, st.Nlink)
		}
	}
	ents, _ := os.ReadDir(data)
	var names []string
	for _, d := range ents {
		names = append(names, d.Name())
	}
	if !slices.Equal(names, []string{"root-only"}) {
		t.Errorf("the writable directory holds %v, want only root-only", names)
	}
	if b, _ := os.ReadFile(rootOnly); string(b) != "root only" {
		t.Errorf("root-only changed: %q", b)
	}
}
