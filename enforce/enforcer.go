package enforce

import (
	"net/url"

	"github.com/skillrun/skillrun/skill"
)

// Enforcer is one invocation's policy, compiled once from the snapshot.
// Its checks are safe for concurrent use and never change: a skill cannot
// widen its grants mid-invocation, whatever it writes to disk.
type Enforcer struct {
	skillID    string
	tools      map[string]bool
	disallowed map[string]bool
	foreign    map[string]bool
	bash       *BashPolicy
	bashDeny   *BashPolicy
	memory     globSet
	files      globSet
	domains    *DomainPolicy
	fileWrite  bool
	decl       Declaration
}

// Compile builds the Enforcer for snap. Globs are compiled here, once: a
// glob that does not compile is a *PolicyError, never a silent no-match.
func Compile(snap *skill.Snapshot, cat Catalog) (*Enforcer, []skill.Diagnostic, error) {
	decl, warns, err := Declare(snap.Manifest(), snap.File(), cat)
	if err != nil {
		return nil, warns, err
	}
	e, err := compileDeclaration(decl)
	return e, warns, err
}

func compileDeclaration(decl Declaration) (*Enforcer, error) {
	e := &Enforcer{
		skillID:    decl.SkillID,
		tools:      setOf(decl.Tools),
		disallowed: setOf(decl.Disallowed),
		foreign:    setOf(decl.Foreign),
		fileWrite:  decl.FileWrite,
		decl:       decl,
	}
	if e.tools[bashTool] {
		e.bash = NewBashPolicy(decl.Bash)
	}
	if len(decl.BashDeny) > 0 {
		e.bashDeny = NewBashPolicy(decl.BashDeny)
	}
	var err error
	if e.memory, err = compileGlobs("allowed_memory_scopes", decl.Memory, '/'); err != nil {
		return nil, err
	}
	if e.files, err = compileGlobs("x-allowed-files", decl.Files, '/'); err != nil {
		return nil, err
	}
	if e.domains, err = NewDomainPolicy(decl.Domains); err != nil {
		return nil, err
	}
	return e, nil
}

func setOf(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// SkillID is the id denials and audit rows carry.
func (e *Enforcer) SkillID() string { return e.skillID }

// Declaration returns the policy as compiled.
func (e *Enforcer) Declaration() Declaration { return e.decl }

// FileWrite reports whether x-allowed-files are writable (Write or Edit).
func (e *Enforcer) FileWrite() bool { return e.fileWrite }

func (e *Enforcer) deny(reason Reason, tool, detail string) *Denial {
	return &Denial{Reason: reason, Tool: tool, SkillID: e.skillID, Detail: detail}
}

// CheckTool is the first check of every call. Disallowed wins over
// allowed; a declared tool that no registry here provides is unknown_tool.
func (e *Enforcer) CheckTool(name string) error {
	switch {
	case e.disallowed[name]:
		return e.deny(ReasonToolDisallowed, name, "")
	case e.tools[name]:
		return nil
	case e.foreign[name]:
		return e.deny(ReasonUnknownTool, name, "not provided by this broker")
	}
	return e.deny(ReasonToolNotAllowed, name, "")
}

// CheckMemoryPath canonicalises p and matches it against the memory
// scopes. It returns the canonical path, which is the only one the tool
// may use from then on.
func (e *Enforcer) CheckMemoryPath(tool, p string) (string, error) {
	c, err := CanonicalMemoryPath(p)
	if err != nil {
		return "", e.deny(ReasonScopeViolation, tool, err.Error())
	}
	if !e.memory.match(c) {
		return "", e.deny(ReasonScopeViolation, tool, c)
	}
	return c, nil
}

// MemoryAllowed reports whether a canonical path is in scope; MemorySearch
// filters each result row through it.
func (e *Enforcer) MemoryAllowed(canonical string) bool { return e.memory.match(canonical) }

// CheckFilePath matches an already resolved real path (ResolveFilePath)
// against x-allowed-files. It is the hot path: no allocation on success.
func (e *Enforcer) CheckFilePath(tool, real string) error {
	if !e.files.match(real) {
		return e.deny(ReasonFileViolation, tool, real)
	}
	return nil
}

// CheckFile resolves p and checks the real path, returning it.
func (e *Enforcer) CheckFile(tool, p string) (string, error) {
	real, err := ResolveFilePath(p)
	if err != nil {
		return "", e.deny(ReasonFileViolation, tool, err.Error())
	}
	if err := e.CheckFilePath(tool, real); err != nil {
		return "", err
	}
	return real, nil
}

// CheckURL checks a URL for HttpFetch/HttpPost and every redirect hop.
func (e *Enforcer) CheckURL(tool, raw string) (*url.URL, error) {
	u, err := e.domains.CheckURL(raw)
	if err != nil {
		if d, ok := AsDenial(err); ok {
			d.Tool, d.SkillID = tool, e.skillID
			return nil, d
		}
		return nil, e.deny(ReasonDomainViolation, tool, err.Error())
	}
	return u, nil
}

// HostLiteral reports whether the declaration names host literally, which
// is the only way a loopback or private address becomes reachable.
func (e *Enforcer) HostLiteral(host string) bool { return e.domains.Literal(host) }

// CheckBash checks a Bash command: a disallowed Bash(…) rule matching any
// part denies it, then every part must be allowed.
func (e *Enforcer) CheckBash(command string) error {
	if e.bash == nil {
		return e.deny(ReasonToolNotAllowed, bashTool, "")
	}
	if e.bashDeny != nil && e.bashDeny.MatchesAny(command) {
		return e.deny(ReasonCommandNotAllowed, bashTool, "matches a disallowed_tools Bash rule")
	}
	if err := e.bash.Check(command); err != nil {
		if d, ok := AsDenial(err); ok {
			d.SkillID = e.skillID
			return d
		}
		return e.deny(ReasonCommandNotAllowed, bashTool, err.Error())
	}
	return nil
}
