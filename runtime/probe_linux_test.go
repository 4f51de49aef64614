package runtime

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillrun/skillrun/enforce"
)

// need is one precondition of a test; requires skips the test with the
// first unmet reason, so each test declares its needs in one line.
type need struct {
	ok  func() bool
	why string
}

var root = need{func() bool { return os.Geteuid() == 0 },
	"needs root: cgroup write access and the isolation verdict depend on privilege"}

func requires(t *testing.T, needs ...need) {
	t.Helper()
	for _, n := range needs {
		if !n.ok() {
			t.Skip(n.why)
		}
	}
}

// TestProbe checks the facts HOST-NOTES measured on this kind of machine
// that hold for any user: a 6.x kernel with Landlock, seccomp filters, a
// cgroup hierarchy and the container namespaces.
func TestProbe(t *testing.T) {
	start := time.Now()
	h := Probe(t.Context())
	took := time.Since(start)
	dump, _ := json.MarshalIndent(h, "", "  ")
	t.Logf("Probe took %v:\n%s", took, dump)

	if h.OS != "linux" {
		t.Errorf("OS = %q, want linux", h.OS)
	}
	if !strings.HasPrefix(h.Kernel, "6.") {
		t.Errorf("Kernel = %q, want 6.x", h.Kernel)
	}
	if h.LandlockABI < 1 {
		t.Errorf("LandlockABI = %d, want ≥ 1", h.LandlockABI)
	}
	if !h.Seccomp {
		t.Errorf("Seccomp = false, want true")
	}
	if h.CgroupVersion != 1 && h.CgroupVersion != 2 {
		t.Errorf("CgroupVersion = %d, want 1 or 2", h.CgroupVersion)
	}
	for _, ns := range []string{"pid", "net", "mount"} {
		if !h.HasNamespace(ns) {
			t.Errorf("Namespaces = %q, want %s among them", h.Namespaces, ns)
		}
	}
}

// TestProbeAsRoot checks the facts that follow from running as root here:
// the cgroups are writable, so this host gets the container sandbox.
func TestProbeAsRoot(t *testing.T) {
	requires(t, root)
	h := Probe(t.Context())
	if !h.Root || !h.UserNamespaces {
		t.Errorf("Root, UserNamespaces = %v, %v; want true, true", h.Root, h.UserNamespaces)
	}
	for _, c := range []string{"memory", "pids"} {
		if !slices.Contains(h.CgroupControllers, c) {
			t.Errorf("CgroupControllers = %q, want %s among them", h.CgroupControllers, c)
		}
	}
	if h.Isolation != enforce.IsolationContainer {
		t.Errorf("Isolation = %q, want container; problems: %q", h.Isolation, h.Problems)
	}
}

// TestProbeCanceled: a canceled context costs the user-namespace fact, with
// a reason, and nothing else.
func TestProbeCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	h := Probe(ctx)
	if h.UserNamespaces {
		t.Errorf("UserNamespaces = true under a canceled context")
	}
	if !slices.ContainsFunc(h.Problems, func(p string) bool { return strings.HasPrefix(p, "user namespaces: ") }) {
		t.Errorf("Problems = %q, want a user namespaces line", h.Problems)
	}
}

func TestStatusField(t *testing.T) {
	const status = "Name:\tcat\nSeccomp:\t2\nSeccomp_filters:\t1\n"
	tests := []struct {
		name, want string
		found      bool
	}{
		{"Seccomp", "2", true},
		{"Seccomp_filters", "1", true},
		{"NoNewPrivs", "", false},
	}
	for _, tt := range tests {
		got, found := statusField(status, tt.name)
		if got != tt.want || found != tt.found {
			t.Errorf("statusField(%q) = %q, %v; want %q, %v", tt.name, got, found, tt.want, tt.found)
		}
	}
}

func TestMissingWords(t *testing.T) {
	tests := []struct {
		list string
		want []string
	}{
		{"kill_process kill_thread trap errno user_notif trace log allow\n", nil},
		{"kill_thread trap errno allow", []string{"kill_process"}},
		{"", []string{"errno", "kill_process"}},
	}
	for _, tt := range tests {
		if got := missingWords(tt.list, "errno", "kill_process"); !slices.Equal(got, tt.want) {
			t.Errorf("missingWords(%q) = %q, want %q", tt.list, got, tt.want)
		}
	}
}

func BenchmarkProbe(b *testing.B) {
	for b.Loop() {
		Probe(b.Context())
	}
}

// TestProbeForExecAsRoot: exec's probe skips the user-namespace child as
// root, and so must reach the same verdict as the full probe without it.
func TestProbeForExecAsRoot(t *testing.T) {
	requires(t, root)
	full, quick := Probe(t.Context()), ProbeForExec(t.Context())
	if quick.Isolation != full.Isolation {
		t.Errorf("ProbeForExec isolation = %s, Probe = %s", quick.Isolation, full.Isolation)
	}
	if quick.UserNamespaces {
		t.Errorf("ProbeForExec as root reports user namespaces, which it must not have probed")
	}
	if !slices.Equal(quick.Namespaces, full.Namespaces) || quick.LandlockABI != full.LandlockABI ||
		quick.Seccomp != full.Seccomp || !slices.Equal(quick.CgroupControllers, full.CgroupControllers) {
		t.Errorf("ProbeForExec = %+v\nProbe = %+v: every fact but user namespaces must agree", quick, full)
	}
}
