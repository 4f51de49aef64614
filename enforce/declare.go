package enforce

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/skillrun/skillrun/skill"
)

// Declaration is a manifest's capability fields read as policy: tool names
// resolved against the catalog, Claude Code spellings mapped onto native
// tools, Bash specifiers parsed. Compile and Plan both start from it, so
// what validate prints and what the broker enforces cannot drift apart.
type Declaration struct {
	SkillID    string     `json:"skill_id"`
	Tools      []string   `json:"tools"`                // allowed native or MCP tools, disallowed ones removed
	Disallowed []string   `json:"disallowed,omitempty"` // tools denied outright
	Foreign    []string   `json:"foreign,omitempty"`    // declared names no registry here provides
	Bash       []BashRule `json:"-"`                    // allow rules, when Bash is in Tools
	BashDeny   []BashRule `json:"-"`                    // deny rules from disallowed Bash(…)
	Memory     []string   `json:"memory_scopes"`
	Files      []string   `json:"files"`
	Domains    []string   `json:"domains"`
	FileWrite  bool       `json:"file_write"` // Write or Edit granted: x-allowed-files are writable
	RateLimit  int        `json:"rate_limit,omitempty"`
}

// PolicyError lists every error found compiling a declaration, positioned
// in SKILL.md like the loader's diagnostics.
type PolicyError struct {
	Diagnostics []skill.Diagnostic
}

func (e *PolicyError) Error() string {
	if len(e.Diagnostics) == 0 {
		return ErrInvalidPolicy.Error()
	}
	return e.Diagnostics[0].String()
}

func (e *PolicyError) Unwrap() error { return ErrInvalidPolicy }

// declarer collects diagnostics while reading a manifest.
type declarer struct {
	file  string
	diags []skill.Diagnostic
	errs  []skill.Diagnostic
}

func (d *declarer) warn(line int, field, format string, args ...any) {
	d.diags = append(d.diags, skill.Diagnostic{File: d.file, Line: line, Field: field, Message: fmt.Sprintf(format, args...)})
}

func (d *declarer) fail(line int, field, format string, args ...any) {
	d.errs = append(d.errs, skill.Diagnostic{File: d.file, Line: line, Field: field, Message: fmt.Sprintf(format, args...), Severity: skill.SeverityError})
}

// Declare reads m's capability fields against cat. file names SKILL.md in
// diagnostics. It returns warnings, and a *PolicyError when a name is
// unknown or a rule malformed: a typo must not pass silently.
func Declare(m skill.Manifest, file string, cat Catalog) (Declaration, []skill.Diagnostic, error) {
	d := &declarer{file: file}
	decl := Declaration{
		SkillID:   m.Name,
		Memory:    slices.Clone(m.AllowedMemoryScopes),
		Files:     slices.Clone(m.AllowedFiles),
		Domains:   slices.Clone(m.AllowedDomains),
		RateLimit: m.RateLimit,
	}
	denied := d.disallowed(&decl, m, cat)
	allowed := map[string]bool{}
	for _, r := range m.AllowedTools {
		d.allowRule(&decl, allowed, r, m, cat)
	}
	for name := range allowed {
		if !denied[name] {
			decl.Tools = append(decl.Tools, name)
		}
	}
	sort.Strings(decl.Tools)
	if !slices.Contains(decl.Tools, bashTool) {
		decl.Bash = nil
	}
	decl.FileWrite = slices.ContainsFunc(writeTools, func(t string) bool { return slices.Contains(decl.Tools, t) })
	d.checkDomains(decl.Domains, m.Line("x-allowed-domains"))
	d.warnBroad(decl, m)
	if len(d.errs) > 0 {
		return Declaration{}, d.diags, &PolicyError{Diagnostics: d.errs}
	}
	return decl, d.diags, nil
}

// disallowed reads disallowed_tools. A specifier on a tool other than Bash
// cannot be enforced per argument here, so the whole tool is denied: for a
// deny list, over-denying is the safe reading.
func (d *declarer) disallowed(decl *Declaration, m skill.Manifest, cat Catalog) map[string]bool {
	denied := map[string]bool{}
	for _, r := range m.DisallowedTools {
		name := r.Tool
		if name == webFetchTool {
			name = httpFetchTool
		}
		if name == bashTool && r.HasSpec {
			rule, err := ParseBashRule(r.Specifier, true)
			if err != nil {
				d.fail(r.Line, "disallowed_tools", "%s: %v", r, err)
				continue
			}
			decl.BashDeny = append(decl.BashDeny, rule)
			continue
		}
		if r.HasSpec {
			d.warn(r.Line, "disallowed_tools", "%s: specifiers are not enforced on %s; the whole tool is denied", r, name)
		}
		if _, ok := cat.Lookup(name); !ok && !foreignTools[name] {
			if _, mcp := mcpServer(name); !mcp {
				d.fail(r.Line, "disallowed_tools", "unknown tool %q", name)
				continue
			}
		}
		if !denied[name] {
			denied[name] = true
			decl.Disallowed = append(decl.Disallowed, name)
		}
	}
	sort.Strings(decl.Disallowed)
	return denied
}

// allowRule reads one allowed_tools entry.
func (d *declarer) allowRule(decl *Declaration, allowed map[string]bool, r skill.ToolRule, m skill.Manifest, cat Catalog) {
	name := r.Tool
	switch {
	case name == webFetchTool:
		name = httpFetchTool
		if host, ok := strings.CutPrefix(r.Specifier, "domain:"); ok && r.HasSpec {
			decl.Domains = appendUnique(decl.Domains, host)
		} else if r.HasSpec {
			d.fail(r.Line, "allowed_tools", "%s: WebFetch takes only domain:HOST", r)
			return
		} else {
			d.warn(r.Line, "allowed_tools", "WebFetch maps to HttpFetch; hosts still come only from x-allowed-domains")
		}
	case name == bashTool:
		rule, err := ParseBashRule(r.Specifier, r.HasSpec)
		if err != nil {
			d.fail(r.Line, "allowed_tools", "%s: %v", r, err)
			return
		}
		decl.Bash = append(decl.Bash, rule)
	case foreignTools[name]:
		d.warn(r.Line, "allowed_tools", "%s is a tool of other agent hosts, not provided here; calls get unknown_tool", name)
		decl.Foreign = appendUnique(decl.Foreign, name)
		return
	case r.HasSpec:
		d.warn(r.Line, "allowed_tools", "%s: the specifier is not enforced on %s; its reach comes from the x- fields", r, name)
	}
	if _, ok := cat.Lookup(name); !ok {
		if server, mcp := mcpServer(name); mcp {
			d.warn(r.Line, "allowed_tools", "%s: MCP server %q is not configured; calls get unknown_tool", name, server)
			decl.Foreign = appendUnique(decl.Foreign, name)
			return
		}
		d.fail(r.Line, "allowed_tools", "unknown tool %q (no registry here provides it; a typo?)", name)
		return
	}
	allowed[name] = true
}

func (d *declarer) checkDomains(globs []string, line int) {
	if _, err := NewDomainPolicy(globs); err != nil {
		d.fail(line, "x-allowed-domains", "%v", err)
	}
}

// warnBroad says where a grant is wider than it may look: every option that
// loosens isolation gets a warning.
func (d *declarer) warnBroad(decl Declaration, m skill.Manifest) {
	for _, r := range decl.Bash {
		if r.Broad() {
			d.warn(m.Line("allowed_tools", "allowed-tools"), "allowed_tools", "%s is a broad grant: it allows %s", r, broadWhat(r))
		}
	}
	if len(decl.BashDeny) > 0 && slices.ContainsFunc(decl.Bash, BashRule.Broad) {
		d.warn(m.Line("disallowed_tools", "disallowed-tools"), "disallowed_tools",
			"Bash deny rules are matched per command part; under a broad Bash grant a wrapper (sh -c, eval, command, env, xargs) evades them")
	}
	for _, f := range decl.Files {
		if f == "/**" || f == "/*" {
			d.warn(m.Line("x-allowed-files"), "x-allowed-files", "%q grants the whole host filesystem", f)
		}
	}
	for _, h := range decl.Domains {
		if h == "*" || h == "**" {
			d.warn(m.Line("x-allowed-domains"), "x-allowed-domains", "%q allows every public host", h)
		}
	}
	for _, s := range decl.Memory {
		if s == "**" {
			d.warn(m.Line("allowed_memory_scopes"), "allowed_memory_scopes", "\"**\" grants the tenant's whole memory")
		}
	}
}

func broadWhat(r BashRule) string {
	if r.Kind == BashAny {
		return "any command"
	}
	return "any command starting with " + fmt.Sprintf("%q", r.Text)
}

func appendUnique(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
