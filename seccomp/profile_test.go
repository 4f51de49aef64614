package seccomp

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"
)

// mustDeny is the denial list of DESIGN §4 and the seccomp issue, kept
// here apart from denied so that taking a name out of denied (and then
// adding it to the profile) fails a test.
var mustDeny = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2",
	"pivot_root", "chroot", "unshare", "setns", "keyctl", "add_key",
	"request_key", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
	"io_uring_enter", "io_uring_register", "open_by_handle_at",
	"name_to_handle_at", "kexec_load", "kexec_file_load", "init_module",
	"finit_module", "delete_module", "acct", "swapon", "swapoff", "reboot",
	"settimeofday", "clock_settime", "adjtimex", "syslog", "quotactl",
	"lookup_dcookie", "fanotify_init", "mount_setattr", "move_mount",
	"open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "pidfd_getfd",
	"vhangup", "iopl", "ioperm", "uselib", "nfsservctl",
}

func TestDeniedStaysOut(t *testing.T) {
	for _, name := range mustDeny {
		if _, ok := denied[name]; !ok {
			t.Errorf("%s is not in denied", name)
		}
	}
	for name, why := range denied {
		if _, ok := profile[name]; ok {
			t.Errorf("%s is in the profile but denied: %s", name, why)
		}
		if why == "" {
			t.Errorf("denied %s has no reason", name)
		}
	}
}

// TestDockerParity holds the profile to "everything Docker's default
// profile denies is denied": it allows no name Docker does not, and where
// Docker allows a syscall only under a condition, so does the profile (the
// conditions themselves are checked one by one below).
func TestDockerParity(t *testing.T) {
	f, err := os.Open("testdata/docker-default-amd64.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	docker := map[string]string{} // name → Docker's condition, "" if none
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, cond, _ := strings.Cut(line, "|")
		docker[strings.TrimSpace(name)] = strings.TrimSpace(cond)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for name, r := range profile {
		cond, ok := docker[name]
		switch {
		case !ok:
			t.Errorf("%s is allowed here but not by Docker's default profile", name)
		case cond != "" && !r.Conditional() && r.Errno == 0:
			t.Errorf("%s is allowed unconditionally here; Docker only if %s", name, cond)
		}
	}
}

// TestUnusualEntriesSayWhy: every conditional or errno entry carries its
// reason, and a plain entry carries nothing half-filled.
func TestUnusualEntriesSayWhy(t *testing.T) {
	for name, r := range profile {
		unusual := r.Conditional() || r.Errno != 0
		if unusual && len(strings.TrimSpace(r.Why)) < 20 {
			t.Errorf("%s: conditional or errno entry without a real reason: %q", name, r.Why)
		}
		if r.Conditional() && r.Errno != 0 {
			t.Errorf("%s: both conditions and an errno; the filter cannot mean that", name)
		}
		for _, a := range r.AnyOf {
			if a.Index > 5 || (a.Op != Equal && a.Op != MaskedEqual) || a.Value&^a.Mask != 0 && a.Op == MaskedEqual {
				t.Errorf("%s: malformed comparison %+v", name, a)
			}
		}
	}
}

// TestNamesLookLikeSyscalls catches names that a map literal would accept
// twice in different spellings ("Read", "read ").
func TestNamesLookLikeSyscalls(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	for _, table := range []map[string]bool{keys(profile), keys(denied)} {
		for name := range table {
			if !valid.MatchString(name) {
				t.Errorf("%q is not a syscall name", name)
			}
		}
	}
}

func keys[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

func TestRulesIsACopy(t *testing.T) {
	r := Rules()
	r["ioctl"].AnyOf[0] = Arg{}
	delete(r, "read")
	if profile["ioctl"].AnyOf[0] == (Arg{}) || profile["read"].Errno != 0 {
		t.Fatal("Rules exposes the profile itself")
	}
	if _, ok := profile["read"]; !ok {
		t.Fatal("Rules exposes the profile map")
	}
	d := Denied()
	delete(d, "ptrace")
	if _, ok := denied["ptrace"]; !ok {
		t.Fatal("Denied exposes the table itself")
	}
}
