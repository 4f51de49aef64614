package enforce

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/skillrun/skillrun/landlock"
	"github.com/skillrun/skillrun/skill"
)

// Fixed paths inside every sandbox (package landlock holds them for the
// packages that must not depend on this one).
const (
	SocketPath     = landlock.SocketPath
	ShimPath       = landlock.ShimPath
	ShimConfigPath = landlock.ShimConfigPath
	SkillPath      = landlock.SkillPath
)

// Limits are the resource limits of one invocation: cgroup values and the
// rlimits applied beside them.
type Limits struct {
	MemoryBytes  int64 `json:"memory_bytes"`  // memory cgroup limit
	PidsMax      int64 `json:"pids_max"`      // pids cgroup limit: the per-invocation fork limit
	CPUMillis    int64 `json:"cpu_millis"`    // cpu cgroup quota, in thousandths of a core
	AddressSpace int64 `json:"address_space"` // RLIMIT_AS, applied by the shim just before exec
	NProc        int64 `json:"nproc"`         // RLIMIT_NPROC
	NoFile       int64 `json:"nofile"`        // RLIMIT_NOFILE
	CoreBytes    int64 `json:"core_bytes"`    // RLIMIT_CORE
	CPUSeconds   int64 `json:"cpu_seconds"`   // RLIMIT_CPU, from the budget
	TmpBytes     int64 `json:"tmp_bytes"`     // size of the sandbox's tmpfs /tmp
}

// DefaultLimits are the operator defaults of DESIGN §4. pids.max counts
// threads too, and the sandbox's own shim and a Bash command's setup are Go
// processes with a handful of threads each: 64 leaves the skill's own
// RLIMIT_NPROC of 8 as the limit it meets, with the cgroup as the backstop.
func DefaultLimits() Limits {
	return Limits{
		MemoryBytes: 512 << 20, PidsMax: 64, CPUMillis: 1000, AddressSpace: 512 << 20,
		NProc: 8, NoFile: 1024, CoreBytes: 0, TmpBytes: 64 << 20,
	}
}

// DefaultCeilings bound what a skill's x-max-* may ask for.
func DefaultCeilings() Limits {
	return Limits{MemoryBytes: 8 << 30, PidsMax: 1024, AddressSpace: 64 << 30}
}

// Mount is one entry of the sandbox's mount table.
type Mount struct {
	Kind     string `json:"kind"` // bind, tmpfs, proc, dev
	Source   string `json:"source,omitempty"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"read_only"`
	Origin   string `json:"origin"` // "system", "skill", "broker", or the declared glob it serves
}

// FSRule is one Landlock path rule. A Dir rule covers everything beneath.
type FSRule = landlock.FSRule

// LandlockPlan is the Landlock ruleset the shim applies before exec.
type LandlockPlan = landlock.Plan

// Plan is the grant plan: every enforced grant of one invocation, derived
// from the declaration by the pure function MakePlan. validate prints it,
// runtime applies it, Verify proves it is no wider than the declaration.
type Plan struct {
	SkillID      string        `json:"skill_id"`
	SkillDir     string        `json:"skill_dir"` // on the host; mounted at SkillPath
	ContentHash  string        `json:"content_hash"`
	Entrypoint   string        `json:"entrypoint"` // inside the sandbox, under SkillPath
	Isolation    Isolation     `json:"isolation"`
	Declaration  Declaration   `json:"declaration"`
	BashRules    []string      `json:"bash_rules,omitempty"`
	Mounts       []Mount       `json:"mounts"`
	Landlock     LandlockPlan  `json:"landlock"`
	Seccomp      string        `json:"seccomp_profile"`
	Namespaces   []string      `json:"namespaces"`
	Limits       Limits        `json:"limits"`
	Budget       time.Duration `json:"budget_ns"`
	TermAfter    time.Duration `json:"term_after_ns"` // SIGTERM at 90% of the budget
	Env          []string      `json:"env"`           // names only; values are per invocation
	NoNewPrivs   bool          `json:"no_new_privs"`
	Capabilities []string      `json:"capabilities"` // kept capabilities: none
}

// PlanOptions are the operator's inputs to a plan.
type PlanOptions struct {
	Defaults Limits        // zero value: DefaultLimits
	Ceilings Limits        // zero value: DefaultCeilings
	Timeout  time.Duration // overrides the effort_minutes budget when set
	FS       FileSystem    // where x-allowed-files globs are expanded; nil: the host's
}

// SeccompProfile names the one profile of the seccomp package.
const SeccompProfile = "skillrun-default"

// sandboxEnv are the only variables a skill sees (DESIGN §4).
var sandboxEnv = []string{"CYBEROS_BROKER_SOCKET", "CYBEROS_SKILL_ID", "CYBEROS_INVOCATION_ID", "CYBEROS_TENANT_ID", "PATH", "HOME", "LANG"}

// MakePlan derives the grant plan of snap on host h. It reads the file
// system only through opts.FS, to expand x-allowed-files globs into the
// files they name, and changes nothing.
func MakePlan(snap *skill.Snapshot, decl Declaration, h Host, opts PlanOptions) (Plan, []skill.Diagnostic, error) {
	m := snap.Manifest()
	if opts.Defaults == (Limits{}) {
		opts.Defaults = DefaultLimits()
	}
	if opts.Ceilings == (Limits{}) {
		opts.Ceilings = DefaultCeilings()
	}
	if opts.FS == nil {
		opts.FS = OSFileSystem{}
	}
	pb := &planBuilder{file: snap.File(), m: m, fs: opts.FS}
	p := Plan{
		SkillID: snap.ID(), SkillDir: snap.Dir(), ContentHash: snap.Hash(),
		Entrypoint:   path.Join(SkillPath, m.Entrypoint),
		Isolation:    h.Isolation,
		Declaration:  decl,
		Seccomp:      SeccompProfile,
		Namespaces:   []string{"pid", "net", "mount", "ipc", "uts", "cgroup"},
		Env:          slices.Clone(sandboxEnv),
		NoNewPrivs:   true,
		Capabilities: []string{},
	}
	if h.UserNamespaces && !h.Root {
		// As root the skill already runs under an unprivileged uid of its
		// own; a user namespace is what rootless operation needs.
		p.Namespaces = append(p.Namespaces, "user")
	}
	for _, r := range decl.Bash {
		p.BashRules = append(p.BashRules, r.String())
	}
	p.Budget = time.Duration(m.EffortMinutes) * time.Minute
	if opts.Timeout > 0 {
		p.Budget = opts.Timeout
	}
	p.TermAfter = p.Budget * 9 / 10
	p.Limits = pb.limits(opts.Defaults, opts.Ceilings, p.Budget)
	p.Mounts = pb.systemMounts(p.Limits.TmpBytes)
	p.Landlock = LandlockPlan{
		Rules:          pb.systemRules(snap.Dir()),
		DenyTCPBind:    true,
		DenyTCPConnect: true,
		ScopeAbstract:  true,
		ScopeSignal:    true,
		HostABI:        h.LandlockABI,
	}
	if err := pb.fileGrants(&p, decl); err != nil {
		return Plan{}, pb.diags, err
	}
	p.Mounts = append(p.Mounts, skillrunMounts(snap.Dir())...)
	pb.hostWarnings(h)
	if err := Verify(p, m, decl, opts.Defaults, opts.Ceilings); err != nil {
		return Plan{}, pb.diags, err
	}
	return p, pb.diags, nil
}

type planBuilder struct {
	file  string
	m     skill.Manifest
	fs    FileSystem
	diags []skill.Diagnostic
}

func (pb *planBuilder) errDiag(field, format string, args ...any) skill.Diagnostic {
	return skill.Diagnostic{File: pb.file, Line: pb.m.Line(field), Field: field, Message: fmt.Sprintf(format, args...), Severity: skill.SeverityError}
}

func (pb *planBuilder) warn(field, format string, args ...any) {
	pb.diags = append(pb.diags, skill.Diagnostic{File: pb.file, Line: pb.m.Line(field), Field: field, Message: fmt.Sprintf(format, args...)})
}

// limits applies the skill's x-max-* to the operator defaults. A skill may
// lower any limit; raising one above the default loosens isolation, so it
// is warned about, and it stops at the operator's ceiling.
func (pb *planBuilder) limits(def, ceil Limits, budget time.Duration) Limits {
	l := def
	l.CPUSeconds = int64((budget + time.Second - 1) / time.Second)
	set := func(field string, v int64, dst *int64, max int64) {
		if v == 0 {
			return
		}
		if v > max {
			pb.warn(field, "%s is above the operator ceiling %s; using the ceiling", human(field, v), human(field, max))
			v = max
		}
		if v > *dst {
			pb.warn(field, "raises the default %s to %s", human(field, *dst), human(field, v))
		}
		*dst = v
	}
	set("x-max-memory", pb.m.MaxMemory, &l.MemoryBytes, ceil.MemoryBytes)
	set("x-max-address-space", pb.m.MaxAddressSpace, &l.AddressSpace, ceil.AddressSpace)
	set("x-max-pids", pb.m.MaxPids, &l.PidsMax, ceil.PidsMax)
	return l
}

func human(field string, v int64) string {
	if field == "x-max-pids" {
		return fmt.Sprint(v)
	}
	return skill.FormatSize(v)
}

func (pb *planBuilder) hostWarnings(h Host) {
	if h.Isolation != IsolationContainer {
		pb.warn("", "this host runs skills with %s isolation: %s", h.Isolation, strings.Join(h.Problems, "; "))
		return
	}
	if h.LandlockABI < 4 {
		pb.warn("", "Landlock ABI %d: no TCP rules; the network namespace still confines the skill", h.LandlockABI)
	}
	if h.LandlockABI < 6 {
		pb.warn("", "Landlock ABI %d: no scoping of abstract sockets and signals", h.LandlockABI)
	}
}
