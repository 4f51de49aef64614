package runtime

import (
	"slices"
	"testing"

	"github.com/skillrun/skillrun/enforce"
)

// fullHost is a Linux host that supports the container sandbox; each case of
// TestIsolationFor takes one thing away.
func fullHost() enforce.Host {
	return enforce.Host{
		OS:                "linux",
		Kernel:            "6.18.0",
		Namespaces:        []string{"pid", "net", "mount", "ipc", "uts", "cgroup", "user"},
		UserNamespaces:    true,
		Seccomp:           true,
		LandlockABI:       7,
		CgroupVersion:     2,
		CgroupControllers: []string{"memory", "pids", "cpu"},
	}
}

func TestIsolationFor(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(*enforce.Host)
		want      enforce.Isolation
		wantUnmet []string
	}{
		{"full rootless host", func(*enforce.Host) {}, enforce.IsolationContainer, nil},
		{"root without user namespaces", func(h *enforce.Host) {
			h.Root, h.UserNamespaces = true, false
		}, enforce.IsolationContainer, nil},
		{"no cgroup or user namespace is not required", func(h *enforce.Host) {
			h.Namespaces = []string{"pid", "net", "mount", "ipc", "uts"}
		}, enforce.IsolationContainer, nil},
		{"landlock ABI 1 is enough", func(h *enforce.Host) { h.LandlockABI = 1 }, enforce.IsolationContainer, nil},
		{"cpu controller is not required", func(h *enforce.Host) {
			h.CgroupVersion, h.CgroupControllers = 1, []string{"memory", "pids"}
		}, enforce.IsolationContainer, nil},
		{"rootless without user namespaces", func(h *enforce.Host) { h.UserNamespaces = false },
			enforce.IsolationRlimitOnly, []string{"root or unprivileged user namespaces"}},
		{"landlock disabled", func(h *enforce.Host) { h.LandlockABI = 0 },
			enforce.IsolationRlimitOnly, []string{"Landlock"}},
		{"no seccomp", func(h *enforce.Host) { h.Seccomp = false },
			enforce.IsolationRlimitOnly, []string{"seccomp filters"}},
		{"no net or ipc namespace", func(h *enforce.Host) {
			h.Namespaces = []string{"pid", "mount", "uts", "user"}
		}, enforce.IsolationRlimitOnly, []string{"net namespace", "ipc namespace"}},
		{"v1 host without pids", func(h *enforce.Host) {
			h.CgroupVersion, h.CgroupControllers = 1, []string{"memory", "cpu"}
		}, enforce.IsolationRlimitOnly, []string{"pids cgroup controller"}},
		{"no cgroups at all", func(h *enforce.Host) {
			h.CgroupVersion, h.CgroupControllers = 0, nil
		}, enforce.IsolationRlimitOnly, []string{"memory cgroup controller", "pids cgroup controller"}},
		{"everything missing", func(h *enforce.Host) {
			*h = enforce.Host{OS: "linux"}
		}, enforce.IsolationRlimitOnly, []string{
			"pid namespace", "net namespace", "mount namespace", "ipc namespace", "uts namespace",
			"seccomp filters", "Landlock", "memory cgroup controller", "pids cgroup controller",
			"root or unprivileged user namespaces",
		}},
		{"not linux, even if it claims the facts", func(h *enforce.Host) { h.OS = "darwin" },
			enforce.IsolationRlimitOnly, []string{"Linux namespaces, seccomp, Landlock and cgroups, which darwin lacks"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := fullHost()
			tt.edit(&h)
			got, unmet := isolationFor(h)
			if got != tt.want || !slices.Equal(unmet, tt.wantUnmet) {
				t.Errorf("isolationFor() = %q, %q; want %q, %q", got, unmet, tt.want, tt.wantUnmet)
			}
		})
	}
}
