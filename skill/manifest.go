package skill

import (
	"maps"
	"slices"
)

// Defaults of the v1 declaration (DESIGN §2).
const (
	DefaultEntrypoint    = "main"
	DefaultEffortMinutes = 10
	// MaxEffortMinutes bounds the budget a skill may ask for: a day.
	MaxEffortMinutes = 24 * 60
)

// ToolRule is one entry of allowed_tools or disallowed_tools: a tool name
// and, for rules such as Bash(git status) or WebFetch(domain:x), the text
// between the parentheses, verbatim. What a specifier means is decided by
// the enforce package, not here.
type ToolRule struct {
	Tool      string `json:"tool"`
	Specifier string `json:"specifier,omitempty"`
	HasSpec   bool   `json:"has_specifier,omitempty"`
	Line      int    `json:"line"`
}

// String renders the rule as it would be written: Tool or Tool(spec).
func (r ToolRule) String() string {
	if !r.HasSpec {
		return r.Tool
	}
	return r.Tool + "(" + r.Specifier + ")"
}

// Field is a frontmatter key kept as found: unknown keys are reported and
// carried along, never silently dropped.
type Field struct {
	Key   string `json:"key"`
	Line  int    `json:"line"`
	Value string `json:"value"` // the value re-encoded as YAML
}

// Substitution is a !`cmd` shell substitution found in the body. Claude Code
// runs these at expansion time; skillrun never does, and validate says so.
type Substitution struct {
	Command string `json:"command"`
	Line    int    `json:"line"`
}

// Manifest is the parsed and validated declaration of one skill. Use it
// through a Snapshot; a Manifest obtained from Snapshot.Manifest is a copy.
type Manifest struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Version     string `json:"version,omitempty"`
	License     string `json:"license,omitempty"`

	AllowedTools        []ToolRule `json:"allowed_tools"`
	DisallowedTools     []ToolRule `json:"disallowed_tools"`
	AllowedMemoryScopes []string   `json:"allowed_memory_scopes"`
	EffortMinutes       int        `json:"effort_minutes"`

	AllowedFiles    []string `json:"x_allowed_files"`
	AllowedDomains  []string `json:"x_allowed_domains"`
	Entrypoint      string   `json:"x_entrypoint"`
	MaxMemory       int64    `json:"x_max_memory,omitempty"`        // bytes; 0 = operator default
	MaxAddressSpace int64    `json:"x_max_address_space,omitempty"` // bytes; 0 = operator default
	MaxPids         int64    `json:"x_max_pids,omitempty"`          // 0 = operator default
	RateLimit       int      `json:"x_rate_limit,omitempty"`        // tool calls per minute; 0 = unbounded

	Metadata map[string]string `json:"metadata,omitempty"`
	Extra    []Field           `json:"extra,omitempty"`

	// Lines maps each key present in the frontmatter (as spelled) to its
	// line in SKILL.md, so later stages can point at the declaration.
	Lines map[string]int `json:"-"`

	Body          string         `json:"-"`
	BodyLine      int            `json:"-"`
	Substitutions []Substitution `json:"substitutions,omitempty"`
}

// Clone returns a deep copy: nothing in the copy shares memory with m.
func (m Manifest) Clone() Manifest {
	c := m
	c.AllowedTools = slices.Clone(m.AllowedTools)
	c.DisallowedTools = slices.Clone(m.DisallowedTools)
	c.AllowedMemoryScopes = slices.Clone(m.AllowedMemoryScopes)
	c.AllowedFiles = slices.Clone(m.AllowedFiles)
	c.AllowedDomains = slices.Clone(m.AllowedDomains)
	c.Metadata = maps.Clone(m.Metadata)
	c.Extra = slices.Clone(m.Extra)
	c.Lines = maps.Clone(m.Lines)
	c.Substitutions = slices.Clone(m.Substitutions)
	return c
}

// Line is the SKILL.md line of the first of keys present, or 0.
func (m Manifest) Line(keys ...string) int {
	for _, k := range keys {
		if l, ok := m.Lines[k]; ok {
			return l
		}
	}
	return 0
}

// Snapshot is the immutable result of loading a skill: the manifest parsed
// once at invocation start, the resolved folder it came from, and the
// content hash of that folder. Every check of an invocation reads the same
// Snapshot; its accessors hand out copies.
type Snapshot struct {
	m        Manifest
	dir      string
	file     string
	hash     string
	warnings []Diagnostic
}

// NewSnapshot freezes m. Load is the usual way to get one; tests and
// callers that build manifests by hand use this.
func NewSnapshot(m Manifest, dir, file, hash string, warnings []Diagnostic) *Snapshot {
	return &Snapshot{m: m.Clone(), dir: dir, file: file, hash: hash, warnings: slices.Clone(warnings)}
}

// Manifest returns a copy of the declaration.
func (s *Snapshot) Manifest() Manifest { return s.m.Clone() }

// ID is the skill's identifier in audit rows and the sandbox environment:
// its declared name.
func (s *Snapshot) ID() string { return s.m.Name }

// Dir is the skill folder with every symlink resolved.
func (s *Snapshot) Dir() string { return s.dir }

// File is the path of SKILL.md as the user named it, for messages.
func (s *Snapshot) File() string { return s.file }

// Hash is the hex SHA-256 content hash of the resolved skill tree.
func (s *Snapshot) Hash() string { return s.hash }

// Warnings returns the warning-level diagnostics found while loading.
func (s *Snapshot) Warnings() []Diagnostic { return slices.Clone(s.warnings) }
