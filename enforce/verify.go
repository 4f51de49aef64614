package enforce

import (
	"fmt"
	"slices"

	"github.com/gobwas/glob"
	"github.com/skillrun/skillrun/skill"
)

// LoaderDefect is a grant in the plan that no declared capability
// subsumes. It is skillrun's fault, never the skill's: the invocation is
// refused and audited as skill.loader_defect.
type LoaderDefect struct {
	Grant  string // the grant, rendered
	Reason string // why no declaration covers it
}

func (e *LoaderDefect) Error() string {
	return fmt.Sprintf("loader defect: %s: %s", e.Grant, e.Reason)
}

func (e *LoaderDefect) Unwrap() error { return ErrLoaderDefect }

func defect(grant, format string, args ...any) error {
	return &LoaderDefect{Grant: grant, Reason: fmt.Sprintf(format, args...)}
}

// Verify proves that every enforced grant of p is subsumed by decl (the
// declaration compiled independently from the manifest m), the system
// table, or the operator's limits. MakePlan calls it on every plan; it is
// exported so runtime can check a plan again right before applying it.
func Verify(p Plan, m skill.Manifest, decl Declaration, def, ceil Limits) error {
	for _, t := range p.Declaration.Tools {
		if !slices.Contains(decl.Tools, t) || slices.Contains(decl.Disallowed, t) {
			return defect("tool "+t, "not in allowed_tools, or disallowed")
		}
	}
	for _, r := range p.BashRules {
		if !slices.ContainsFunc(decl.Bash, func(b BashRule) bool { return b.String() == r }) {
			return defect("Bash rule "+r, "not declared")
		}
	}
	for _, pair := range []struct {
		name       string
		plan, decl []string
	}{{"memory scope", p.Declaration.Memory, decl.Memory}, {"domain", p.Declaration.Domains, decl.Domains}, {"file glob", p.Declaration.Files, decl.Files}} {
		for _, v := range pair.plan {
			if !slices.Contains(pair.decl, v) {
				return defect(pair.name+" "+v, "not declared")
			}
		}
	}
	if p.Declaration.FileWrite && !decl.FileWrite {
		return defect("file write", "neither Write nor Edit is allowed")
	}
	for _, r := range p.Landlock.Rules {
		if err := verifyRule(r, decl); err != nil {
			return err
		}
	}
	for _, mt := range p.Mounts {
		if err := verifyMount(mt, p.SkillDir, decl); err != nil {
			return err
		}
	}
	if !p.Landlock.DenyTCPBind || !p.Landlock.DenyTCPConnect || !slices.Contains(p.Namespaces, "net") {
		return defect("network", "the sandbox has no network grant; all network goes through the broker")
	}
	if !p.NoNewPrivs || len(p.Capabilities) > 0 {
		return defect("privileges", "no_new_privs must be set and every capability dropped")
	}
	return verifyLimits(p.Limits, m, def, ceil)
}

func verifyRule(r FSRule, decl Declaration) error {
	name := fmt.Sprintf("landlock %s (read=%t write=%t exec=%t dir=%t)", r.Path, r.Read, r.Write, r.Exec, r.Dir)
	switch r.Origin {
	case "system":
		g, ok := lookupSystem(r.Path)
		if !ok || (r.Read && !g.read) || (r.Write && !g.write) || (r.Exec && !g.exec) || (r.Dir && !g.isDir) {
			return defect(name, "not in the system table")
		}
		return nil
	case "skill":
		if r.Path != SkillPath || r.Write {
			return defect(name, "the skill folder is read+exec only")
		}
		return nil
	case "shim":
		if r.Path != ShimPath || r.Write || r.Dir {
			return defect(name, "only the shim binary itself is read+exec")
		}
		return nil
	}
	if !slices.Contains(decl.Files, r.Origin) {
		return defect(name, "its origin %q is not in x-allowed-files", r.Origin)
	}
	if r.Exec {
		return defect(name, "x-allowed-files grant no execute access")
	}
	if r.Write && !decl.FileWrite {
		return defect(name, "write access needs Write or Edit in allowed_tools")
	}
	if r.Dir {
		// A Landlock directory rule covers the whole subtree, so only a
		// declaration of that whole subtree subsumes it.
		if r.Origin != r.Path+"/**" {
			return defect(name, "a directory rule covers all of %s/**, which %q does not", r.Path, r.Origin)
		}
		return nil
	}
	g, err := glob.Compiler{Separators: []rune{'/'}, Globstar: true}.Compile(r.Origin)
	if err != nil || !g.Match(r.Path) {
		return defect(name, "%q does not match it", r.Origin)
	}
	return nil
}

func verifyMount(mt Mount, skillDir string, decl Declaration) error {
	name := fmt.Sprintf("mount %s %s -> %s (ro=%t)", mt.Kind, mt.Source, mt.Target, mt.ReadOnly)
	switch mt.Origin {
	case "system":
		g, ok := lookupSystem(mt.Target)
		kindOK := g.mount == mt.Kind || (g.mount == "bind" && mt.Kind == "symlink")
		if !ok || !kindOK || (!mt.ReadOnly && !g.write) || (mt.Kind == "bind" && mt.Source != mt.Target) {
			return defect(name, "not in the system table")
		}
		return nil
	case "skill":
		if mt.Source != skillDir || mt.Target != SkillPath || !mt.ReadOnly {
			return defect(name, "the skill folder is mounted read-only at "+SkillPath)
		}
		return nil
	case "broker":
		if mt.Target != SocketPath || !mt.ReadOnly {
			return defect(name, "the broker socket is mounted read-only at one fixed path")
		}
		return nil
	case "shim":
		if (mt.Target != ShimPath && mt.Target != ShimConfigPath) || !mt.ReadOnly {
			return defect(name, "the shim and its configuration are mounted read-only at fixed paths")
		}
		return nil
	}
	if !slices.Contains(decl.Files, mt.Origin) {
		return defect(name, "its origin %q is not in x-allowed-files", mt.Origin)
	}
	root, literal := literalRoot(mt.Origin)
	if literal {
		root = mt.Origin
	}
	if mt.Kind != "bind" || mt.Source != root || mt.Target != root {
		return defect(name, "a declared path is bound at its own root %s", root)
	}
	if !mt.ReadOnly && !decl.FileWrite {
		return defect(name, "a writable mount needs Write or Edit in allowed_tools")
	}
	return nil
}

// verifyLimits checks each limit against what the skill or the operator
// allows: the skill's x-max-* capped at the ceiling, else the default.
func verifyLimits(l Limits, m skill.Manifest, def, ceil Limits) error {
	allowed := func(declared, dflt, ceiling int64) int64 {
		if declared == 0 {
			return dflt
		}
		return min(declared, ceiling)
	}
	checks := []struct {
		name     string
		got, max int64
	}{
		{"memory cgroup", l.MemoryBytes, allowed(m.MaxMemory, def.MemoryBytes, ceil.MemoryBytes)},
		{"RLIMIT_AS", l.AddressSpace, allowed(m.MaxAddressSpace, def.AddressSpace, ceil.AddressSpace)},
		{"pids cgroup", l.PidsMax, allowed(m.MaxPids, def.PidsMax, ceil.PidsMax)},
		{"RLIMIT_NPROC", l.NProc, def.NProc},
		{"RLIMIT_NOFILE", l.NoFile, def.NoFile},
		{"RLIMIT_CORE", l.CoreBytes, def.CoreBytes},
		{"cpu quota", l.CPUMillis, def.CPUMillis},
		{"tmpfs /tmp", l.TmpBytes, def.TmpBytes},
	}
	for _, c := range checks {
		if c.got <= 0 && c.name != "RLIMIT_CORE" || c.got > c.max {
			return defect(fmt.Sprintf("%s %d", c.name, c.got), "the declaration and operator allow at most %d", c.max)
		}
	}
	return nil
}
