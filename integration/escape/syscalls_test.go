//go:build integration

package escape

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// syscallCase is one row of the denied-syscall corpus: a Python attack run
// as its own skill, the exact answers it must get, and optionally a host
// artefact checked before and after.
type syscallCase struct {
	name   string // the skill's name and the subtest's
	script string
	want   map[string]string
	// host, if set, runs before the skill and returns the check to run
	// after it, with the invocation's uid.
	host func(t *testing.T) func(t *testing.T, uid string)
}

// TestEscapeDeniedSyscalls holds cases 9 and 11 to 17 and the personality,
// rlimit and host-state rows of 26+: each attack is a raw syscall from
// ctypes that the seccomp filter (or, where named, the kernel's own
// permission check) must refuse with exactly the errno given.
func TestEscapeDeniedSyscalls(t *testing.T) {
	for _, c := range syscallCases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			var after func(*testing.T, string)
			if c.host != nil {
				after = c.host(t)
			}
			dir := e.skill(c.name, "", py+"out('uid', os.getuid())\n"+c.script)
			r := e.exec(dir, run{})
			wantExit(t, r, 0)
			expect(t, r, c.want)
			if after != nil {
				after(t, lines(r.stdout)["uid"])
			}
		})
	}
}

var syscallCases = []syscallCase{
	{
		// Case 9: io_uring runs its operations outside seccomp's view.
		name: "esc-io-uring",
		script: `
params = ctypes.create_string_buffer(120)
sc("io_uring_setup", 425, 8, params)
sc("io_uring_enter", 426, 0, 1, 0, 0, 0, 0)
sc("io_uring_register", 427, 0, 0, 0, 0)
`,
		want: map[string]string{"io_uring_setup": "EPERM", "io_uring_enter": "EPERM", "io_uring_register": "EPERM"},
	},
	{
		// Case 11: userfaultfd stalls the kernel at will; the device node
		// that offers it without the syscall is not in the sandbox's /dev.
		name: "esc-userfaultfd",
		script: `
sc("userfaultfd", 323, os.O_CLOEXEC | os.O_NONBLOCK)
sc("userfaultfd_user_mode_only", 323, 1)
attempt("dev_userfaultfd", lambda: os.open("/dev/userfaultfd", os.O_RDWR))
`,
		want: map[string]string{"userfaultfd": "EPERM", "userfaultfd_user_mode_only": "EPERM", "dev_userfaultfd": "ENOENT"},
	},
	{
		// Case 12: the kernel keyring is not namespaced. The host's
		// /proc/key-users gains no line for the invocation's uid.
		name: "esc-keyring",
		script: `
payload = b"skillrun-escape-payload"
sc("add_key", 248, b"user", b"skillrun-escape", payload, len(payload), -4 & 0xffffffffffffffff)
sc("keyctl_get_user_keyring", 250, 0, -4 & 0xffffffffffffffff, 1)
sc("keyctl_join_session", 250, 1, b"skillrun-escape")
sc("request_key", 249, b"user", b"skillrun-escape", 0, -4 & 0xffffffffffffffff)
`,
		want: map[string]string{"add_key": "EPERM", "keyctl_get_user_keyring": "EPERM", "keyctl_join_session": "EPERM", "request_key": "EPERM"},
		host: func(t *testing.T) func(*testing.T, string) {
			return func(t *testing.T, uid string) {
				b, err := os.ReadFile("/proc/key-users")
				if err != nil {
					t.Skipf("no /proc/key-users: %v", err)
				}
				if regexp.MustCompile(`(?m)^\s*` + uid + `:`).Match(b) {
					t.Errorf("the host's /proc/key-users has keys of the invocation's uid %s:\n%s", uid, b)
				}
			}
		},
	},
	{
		// Case 13: eBPF programs and maps.
		name: "esc-bpf",
		script: `
attr = ctypes.create_string_buffer(struct.pack("IIII", 2, 4, 4, 1) + b"\0" * 112)
sc("bpf_map_create", 321, 0, attr, 128)
prog = ctypes.create_string_buffer(128)
sc("bpf_prog_load", 321, 5, prog, 128)
sc("bpf_btf_load", 321, 18, prog, 128)
`,
		want: map[string]string{"bpf_map_create": "EPERM", "bpf_prog_load": "EPERM", "bpf_btf_load": "EPERM"},
	},
	{
		// Case 14: performance counters.
		name: "esc-perf-event",
		script: `
attr = ctypes.create_string_buffer(struct.pack("IIQ", 1, 128, 0) + b"\0" * 112)
sc("perf_event_open_sw", 298, attr, 0, -1 & 0xffffffffffffffff, -1 & 0xffffffffffffffff, 0)
attr_hw = ctypes.create_string_buffer(struct.pack("IIQ", 0, 128, 0) + b"\0" * 112)
sc("perf_event_open_hw_any_pid", 298, attr_hw, -1 & 0xffffffffffffffff, 0, -1 & 0xffffffffffffffff, 0)
`,
		want: map[string]string{"perf_event_open_sw": "EPERM", "perf_event_open_hw_any_pid": "EPERM"},
	},
	{
		// Case 15: new namespaces are the classic first step out. clone3
		// hides its flags from the filter, so it is ENOSYS (libc falls
		// back to clone); clone with any namespace flag, unshare and setns
		// are EPERM. A plain clone (fork) still works.
		name: "esc-namespaces",
		script: `
def clone(name, flags):
    r, e = raw(56, flags | 17, 0, 0, 0, 0)
    if r == 0:
        os._exit(0)
    if r > 0:
        os.waitpid(r, 0)
        out(name, "ok")
    else:
        out(name, ename(e))
args = ctypes.create_string_buffer(struct.pack("QQQQQQQQ", 0x10000000, 0, 0, 0, 17, 0, 0, 0) + b"\0" * 24)
sc("clone3_newuser", 435, args, 88)
sc("clone3_plain", 435, ctypes.create_string_buffer(struct.pack("QQQQQ", 0, 0, 0, 0, 17) + b"\0" * 48), 88)
for n, f in (("newuser", 0x10000000), ("newns", 0x00020000), ("newpid", 0x20000000), ("newnet", 0x40000000),
             ("newipc", 0x08000000), ("newuts", 0x04000000), ("newcgroup", 0x02000000)):
    clone("clone_" + n, f)
clone("clone_plain", 0)
sc("unshare_newuser", 272, 0x10000000)
sc("unshare_newns", 272, 0x00020000)
sc("unshare_newnet", 272, 0x40000000)
sc("unshare_files", 272, 0x400)
fd = os.open("/proc/self/ns/net", os.O_RDONLY)
sc("setns_own_net", 308, fd, 0)
attempt("open_shim_mntns", lambda: os.open("/proc/1/ns/mnt", os.O_RDONLY))
`,
		want: map[string]string{
			"clone3_newuser": "ENOSYS", "clone3_plain": "ENOSYS",
			"clone_newuser": "EPERM", "clone_newns": "EPERM", "clone_newpid": "EPERM", "clone_newnet": "EPERM",
			"clone_newipc": "EPERM", "clone_newuts": "EPERM", "clone_newcgroup": "EPERM", "clone_plain": "ok",
			"unshare_newuser": "EPERM", "unshare_newns": "EPERM", "unshare_newnet": "EPERM", "unshare_files": "EPERM",
			"setns_own_net": "EPERM", "open_shim_mntns": "EACCES",
		},
	},
	{
		// Case 16: file handles open files by inode number, past the
		// mount namespace (the "shocker" escape).
		name: "esc-file-handles",
		script: `
fh = ctypes.create_string_buffer(struct.pack("Ii", 128, 0) + b"\0" * 128)
mnt = ctypes.c_int(0)
sc("name_to_handle_at", 303, -100 & 0xffffffffffffffff, b"/skill/main", fh, ctypes.byref(mnt), 0)
root = os.open("/skill", os.O_RDONLY | os.O_DIRECTORY)
forged = ctypes.create_string_buffer(struct.pack("Ii", 8, 1) + struct.pack("Q", 2) + b"\0" * 120)
sc("open_by_handle_at_forged_root_inode", 304, root, forged, os.O_RDONLY)
`,
		want: map[string]string{"name_to_handle_at": "EPERM", "open_by_handle_at_forged_root_inode": "EPERM"},
	},
	{
		// Case 17: mounts and root changes, old and new mount API. The
		// sandbox's own /tmp is still its tmpfs afterwards.
		name: "esc-mounts",
		script: `
AT = -100 & 0xffffffffffffffff
sc("mount_tmpfs", 165, b"tmpfs", b"/tmp", b"tmpfs", 0, 0)
sc("mount_bind_root", 165, b"/", b"/tmp", 0, 0x1000, 0)
sc("mount_remount_rw", 165, 0, b"/usr", 0, 0x20 | 0x1000, 0)
sc("umount2_tmp", 166, b"/tmp", 2)
sc("umount2_proc", 166, b"/proc", 2)
sc("pivot_root", 155, b"/tmp", b"/tmp")
sc("chroot", 161, b"/tmp")
sc("fsopen", 430, b"tmpfs", 0)
sc("fspick", 433, AT, b"/", 0)
sc("open_tree_clone", 428, AT, b"/", 1)
sc("move_mount", 429, AT, b"/tmp", AT, b"/usr", 0)
sc("mount_setattr", 442, AT, b"/usr", 0, 0, 0)
tmp = [l for l in open("/proc/self/mountinfo").read().splitlines() if l.split()[4] == "/tmp"]
out("tmp_is_tmpfs", "1" if tmp and " - tmpfs " in tmp[-1] else "0")
`,
		want: map[string]string{
			"mount_tmpfs": "EPERM", "mount_bind_root": "EPERM", "mount_remount_rw": "EPERM",
			"umount2_tmp": "EPERM", "umount2_proc": "EPERM", "pivot_root": "EPERM", "chroot": "EPERM",
			"fsopen": "EPERM", "fspick": "EPERM", "open_tree_clone": "EPERM", "move_mount": "EPERM", "mount_setattr": "EPERM",
			"tmp_is_tmpfs": "1",
		},
	},
	{
		// 26+: personalities that switch off ASLR or make reads imply
		// exec; only PER_LINUX and the query pass.
		name: "esc-personality",
		script: `
sc("read_implies_exec", 135, 0x0400000)
sc("addr_no_randomize", 135, 0x0040000)
sc("per_linux32", 135, 0x0008)
sc("mmap_page_zero", 135, 0x0100000)
sc("high_bits_read_implies_exec", 135, 0x100000000 | 0x0400000)
sc("query", 135, 0xffffffff)
sc("per_linux", 135, 0)
`,
		want: map[string]string{
			"read_implies_exec": "EPERM", "addr_no_randomize": "EPERM", "per_linux32": "EPERM", "mmap_page_zero": "EPERM",
			"high_bits_read_implies_exec": "EPERM", "query": "ok", "per_linux": "ok",
		},
	},
	{
		// 26+: rlimits only go down. Raising any of the sandbox's limits
		// back up, or touching the shim's, is refused by the kernel
		// (no CAP_SYS_RESOURCE); lowering one's own still works.
		name: "esc-rlimits",
		script: `
class RL(ctypes.Structure):
    _fields_ = [("cur", ctypes.c_ulong), ("max", ctypes.c_ulong)]
def raise_(name, res, pid=0):
    old = RL()
    raw(302, pid, res, 0, ctypes.byref(old))
    new = RL(old.max + 1 if old.max < (1 << 62) else old.max, old.max + 1 if old.max < (1 << 62) else old.max)
    sc(name, 302, pid, res, ctypes.byref(new), 0)
raise_("raise_nproc", 6)
raise_("raise_as", 9)
raise_("raise_nofile", 7)
raise_("raise_core", 4)
raise_("raise_cpu", 0)
raise_("raise_shim_nproc", 6, 1)
sc("lower_shim_nofile", 302, 1, 7, ctypes.byref(RL(16, 16)), 0)
old = RL()
raw(302, 0, 7, 0, ctypes.byref(old))
sc("lower_own_nofile", 302, 0, 7, ctypes.byref(RL(old.cur - 1, old.max - 1)), 0)
`,
		want: map[string]string{
			"raise_nproc": "EPERM", "raise_as": "EPERM", "raise_nofile": "EPERM", "raise_core": "EPERM", "raise_cpu": "EPERM",
			"raise_shim_nproc": "EPERM", "lower_shim_nofile": "EPERM", "lower_own_nofile": "ok",
		},
	},
	{
		// 26+: host-wide kernel state: names, clocks, modules, kexec,
		// swap, the kernel log, accounting, I/O ports, LDT. The host's
		// name is unchanged afterwards.
		name: "esc-host-state",
		script: `
ts = ctypes.create_string_buffer(16)
buf = ctypes.create_string_buffer(4096)
sc("sethostname", 170, b"pwned", 5)
sc("setdomainname", 171, b"pwned", 5)
sc("clock_settime", 227, 0, ts)
sc("settimeofday", 164, ts, 0)
sc("adjtimex", 159, ctypes.create_string_buffer(256))
sc("reboot_cad_off", 169, 0xfee1dead, 672274793, 0, 0)
sc("init_module", 175, buf, 64, b"")
sc("finit_module", 313, 0, b"", 0)
sc("delete_module", 176, b"ext4", 0)
sc("kexec_load", 246, 0, 0, 0, 0)
sc("swapon", 167, b"/tmp/swap", 0)
sc("syslog_read_all", 103, 3, buf, 4096)
sc("acct", 163, 0)
sc("iopl", 172, 3)
sc("ioperm", 173, 0x80, 1, 1)
sc("modify_ldt", 154, 1, ctypes.create_string_buffer(16), 16)
sc("fanotify_init", 300, 0, 0)
sc("quotactl", 179, 0, b"/", 0, 0)
`,
		want: map[string]string{
			"sethostname": "EPERM", "setdomainname": "EPERM", "clock_settime": "EPERM", "settimeofday": "EPERM",
			"adjtimex": "EPERM", "reboot_cad_off": "EPERM", "init_module": "EPERM", "finit_module": "EPERM",
			"delete_module": "EPERM", "kexec_load": "EPERM", "swapon": "EPERM", "syslog_read_all": "EPERM",
			"acct": "EPERM", "iopl": "EPERM", "ioperm": "EPERM", "modify_ldt": "EPERM", "fanotify_init": "EPERM",
			"quotactl": "EPERM",
		},
		host: func(t *testing.T) func(*testing.T, string) {
			before, _ := os.Hostname()
			return func(t *testing.T, _ string) {
				if after, _ := os.Hostname(); after != before || strings.Contains(after, "pwned") {
					t.Errorf("the host's name changed: %q -> %q", before, after)
				}
			}
		},
	},
}
