package enforce

// Isolation is the level of confinement an invocation gets.
type Isolation string

const (
	// IsolationContainer is the full sandbox: namespaces, seccomp, Landlock,
	// cgroups and rlimits.
	IsolationContainer Isolation = "container"
	// IsolationRlimitOnly is a plain subprocess with rlimits: the explicit
	// fallback, and what non-Linux hosts get.
	IsolationRlimitOnly Isolation = "rlimit-only"
)

// Host is what the machine can enforce, as probed by runtime.Probe. It is
// plain data so that Plan stays a pure function and tests can describe any
// host they like.
type Host struct {
	OS                string    `json:"os"`
	Kernel            string    `json:"kernel,omitempty"`
	Root              bool      `json:"root"`
	Namespaces        []string  `json:"namespaces"`         // of pid, net, mount, ipc, uts, cgroup, user
	UserNamespaces    bool      `json:"user_namespaces"`    // an unprivileged user namespace can be created
	Seccomp           bool      `json:"seccomp"`            // seccomp filter mode is available
	LandlockABI       int       `json:"landlock_abi"`       // 0 when Landlock is absent or disabled
	CgroupVersion     int       `json:"cgroup_version"`     // 1 (v1 or hybrid) or 2 (unified); 0 if none
	CgroupControllers []string  `json:"cgroup_controllers"` // controllers skillrun can use
	Problems          []string  `json:"problems,omitempty"` // why a feature is missing, one line each
	Isolation         Isolation `json:"isolation"`          // what exec will use on this host
}

// HasNamespace reports whether the host can create the named namespace.
func (h Host) HasNamespace(name string) bool {
	for _, n := range h.Namespaces {
		if n == name {
			return true
		}
	}
	return false
}
