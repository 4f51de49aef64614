package skill

import (
	"slices"
	"strings"
	"testing"
)

func mustParse(t *testing.T, src string) (Manifest, []Diagnostic) {
	t.Helper()
	return Parse("SKILL.md", []byte(src))
}

func errorsOf(diags []Diagnostic) []string {
	var out []string
	for _, d := range diags {
		if d.Severity == SeverityError {
			out = append(out, d.String())
		}
	}
	return out
}

func warningsOf(diags []Diagnostic) []string {
	var out []string
	for _, d := range diags {
		if d.Severity == SeverityWarning {
			out = append(out, d.String())
		}
	}
	return out
}

func TestParseDefaults(t *testing.T) {
	m, diags := mustParse(t, "---\nname: report\ndescription: Monthly report.\n---\n# Report\n")
	if errs := errorsOf(diags); len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if m.Name != "report" || m.Description != "Monthly report." {
		t.Fatalf("name/description = %q/%q", m.Name, m.Description)
	}
	if m.EffortMinutes != DefaultEffortMinutes || m.Entrypoint != DefaultEntrypoint {
		t.Fatalf("defaults: effort %d entrypoint %q", m.EffortMinutes, m.Entrypoint)
	}
	// Default deny: nothing declared means nothing granted.
	if m.AllowedTools != nil || m.AllowedMemoryScopes != nil || m.AllowedFiles != nil || m.AllowedDomains != nil {
		t.Fatalf("capabilities must default to none: %+v", m)
	}
	if m.BodyLine != 5 || m.Body != "# Report\n" {
		t.Fatalf("body at line %d: %q", m.BodyLine, m.Body)
	}
}

func TestParseToolSpellings(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"snake list", "allowed_tools: [Read, MemoryRead]", []string{"Read", "MemoryRead"}},
		{"kebab space string", "allowed-tools: Bash Read Grep Glob", []string{"Bash", "Read", "Grep", "Glob"}},
		{"kebab comma string", "allowed-tools: Read, Write, Edit, Bash", []string{"Read", "Write", "Edit", "Bash"}},
		{"rules with spaces inside parens", "allowed-tools: Bash(gh issue view:*), Bash(git status), mcp__github__create_issue",
			[]string{"Bash(gh issue view:*)", "Bash(git status)", "mcp__github__create_issue"}},
		{"list of rules", "allowed-tools:\n  - Bash(test -f .claude/x.md:*)\n  - Bash(rm .claude/x.md)\n  - Read(.claude/x.md)",
			[]string{"Bash(test -f .claude/x.md:*)", "Bash(rm .claude/x.md)", "Read(.claude/x.md)"}},
		{"plugin root variable", "allowed-tools: Bash(${CLAUDE_PLUGIN_ROOT}/scripts/setup.sh:*) Task Read",
			[]string{"Bash(${CLAUDE_PLUGIN_ROOT}/scripts/setup.sh:*)", "Task", "Read"}},
		{"list items holding several", "allowed-tools: [\"Read, Grep\", Glob]", []string{"Read", "Grep", "Glob"}},
		{"null", "allowed-tools:", nil},
		{"webfetch domain", "allowed-tools: WebFetch(domain:api.example.com)", []string{"WebFetch(domain:api.example.com)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, diags := mustParse(t, "---\nname: x\ndescription: d\n"+tt.yaml+"\n---\n")
			if errs := errorsOf(diags); len(errs) != 0 {
				t.Fatalf("errors: %v", errs)
			}
			var got []string
			for _, r := range m.AllowedTools {
				got = append(got, r.String())
				if r.Line != 4 && !strings.Contains(tt.yaml, "\n") {
					t.Errorf("rule %s at line %d, want 4", r, r.Line)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("rules = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseRuleLinesInLists(t *testing.T) {
	m, _ := mustParse(t, "---\nname: x\ndescription: d\nallowed-tools:\n  - Read\n  - Bash(git status)\n---\n")
	if len(m.AllowedTools) != 2 || m.AllowedTools[0].Line != 5 || m.AllowedTools[1].Line != 6 {
		t.Fatalf("lines: %+v", m.AllowedTools)
	}
}

func TestParseExtensions(t *testing.T) {
	src := `---
name: report
description: d
allowed_tools: [Read, MemoryRead, HttpFetch]
disallowed_tools: [Bash]
allowed_memory_scopes: ["memories/projects/cyberos/**"]
effort_minutes: 3
x-allowed-files: ["/data/*.csv", "/tmp/**"]
x-allowed-domains: [api.example.com, "*.example.org"]
x-entrypoint: bin/run
x-max-memory: 256MiB
x-max-address-space: 1GiB
x-max-pids: 16
x-rate-limit: 10
version: 1.0
license: MIT
metadata:
  author: someone
  tags: [a, b]
---
`
	m, diags := mustParse(t, src)
	if errs := errorsOf(diags); len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if m.EffortMinutes != 3 || m.Entrypoint != "bin/run" || m.MaxMemory != 256<<20 || m.MaxAddressSpace != 1<<30 || m.MaxPids != 16 || m.RateLimit != 10 {
		t.Fatalf("numbers: %+v", m)
	}
	if m.Version != "1.0" {
		t.Fatalf("version %q: YAML 1.0 must stay the text 1.0, not a float", m.Version)
	}
	if !slices.Equal(m.AllowedFiles, []string{"/data/*.csv", "/tmp/**"}) || !slices.Equal(m.AllowedDomains, []string{"api.example.com", "*.example.org"}) {
		t.Fatalf("globs: %v %v", m.AllowedFiles, m.AllowedDomains)
	}
	if m.DisallowedTools[0].Tool != "Bash" || m.Metadata["author"] != "someone" || m.Metadata["tags"] == "" {
		t.Fatalf("disallowed/metadata: %+v %+v", m.DisallowedTools, m.Metadata)
	}
	if m.Line("x-max-pids") != 13 {
		t.Fatalf("line of x-max-pids = %d", m.Line("x-max-pids"))
	}
}

// TestParseErrors checks that each malformed value of a known key is an
// error naming SKILL.md, the line and the field.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"no frontmatter", "# just markdown\n", "SKILL.md:1: frontmatter: SKILL.md must start with a '---' line opening the YAML frontmatter"},
		{"unclosed", "---\nname: x\n", "SKILL.md:1: frontmatter: the '---' frontmatter block is never closed"},
		{"missing name", "---\ndescription: d\n---\n", "SKILL.md:3: name: required"},
		{"missing description", "---\nname: x\n---\n", "SKILL.md:3: description: required"},
		{"empty description", "---\nname: x\ndescription: \"\"\n---\n", "SKILL.md:3: description: must not be empty"},
		{"name not string", "---\nname: [a]\ndescription: d\n---\n", "SKILL.md:2: name: must be a string, not a list"},
		{"name with slash", "---\nname: a/b\ndescription: d\n---\n", "SKILL.md:2: name: must be at most 128 characters without '/' or control characters"},
		{"bad yaml", "---\nname: x\ndescription: a: b\n---\n", "SKILL.md:3: frontmatter: invalid YAML: mapping values are not allowed in this context"},
		{"not a mapping", "---\n- a\n- b\n---\n", "SKILL.md:2: frontmatter: frontmatter must be a mapping of keys to values"},
		{"effort text", "---\nname: x\ndescription: d\neffort_minutes: soon\n---\n", `SKILL.md:4: effort_minutes: must be a whole number, got "soon"`},
		{"effort zero", "---\nname: x\ndescription: d\neffort_minutes: 0\n---\n", "SKILL.md:4: effort_minutes: must be between 1 and 1440, got 0"},
		{"effort float", "---\nname: x\ndescription: d\neffort_minutes: 1.5\n---\n", `SKILL.md:4: effort_minutes: must be a whole number, got "1.5"`},
		{"relative file glob", "---\nname: x\ndescription: d\nx-allowed-files: [data/*.csv]\n---\n", `SKILL.md:4: x-allowed-files: "data/*.csv" must be an absolute path glob such as /data/**`},
		{"dotdot file glob", "---\nname: x\ndescription: d\nx-allowed-files:\n  - /tmp/../etc/**\n---\n", `SKILL.md:5: x-allowed-files: "/tmp/../etc/**": ".." segment; write the path it means`},
		{"bad glob", "---\nname: x\ndescription: d\nx-allowed-files: [\"/tmp/[x\"]\n---\n", `SKILL.md:4: x-allowed-files: "/tmp/[x" is not a valid glob: glob: syntax error at 7: unexpected end of input`},
		{"absolute memory scope", "---\nname: x\ndescription: d\nallowed_memory_scopes: [/memories/**]\n---\n", `SKILL.md:4: allowed_memory_scopes: "/memories/**" must be a relative memory path glob such as memories/projects/**`},
		{"domain with path", "---\nname: x\ndescription: d\nx-allowed-domains: [api.example.com/x]\n---\n", `SKILL.md:4: x-allowed-domains: "api.example.com/x" is not a host glob such as api.example.com or *.example.com`},
		{"escaping entrypoint", "---\nname: x\ndescription: d\nx-entrypoint: ../../bin/sh\n---\n", `SKILL.md:4: x-entrypoint: "../../bin/sh" must be a relative path inside the skill folder`},
		{"bad size", "---\nname: x\ndescription: d\nx-max-memory: lots\n---\n", `SKILL.md:4: x-max-memory: "lots" is not a size such as 256MiB or 1GiB`},
		{"tiny size", "---\nname: x\ndescription: d\nx-max-memory: 1KiB\n---\n", `SKILL.md:4: x-max-memory: 1KiB is below the minimum of 4MiB`},
		{"unbalanced rule", "---\nname: x\ndescription: d\nallowed-tools: Bash(git status\n---\n", `SKILL.md:4: allowed-tools: unclosed '(' in "Bash(git status"`},
		{"bad tool name", "---\nname: x\ndescription: d\nallowed-tools: [\"(x)\"]\n---\n", `SKILL.md:4: allowed-tools: "" is not a tool name`},
		{"duplicate key", "---\nname: x\ndescription: d\nname: y\n---\n", "SKILL.md:4: name: given twice"},
		{"both spellings", "---\nname: x\ndescription: d\nallowed_tools: [Read]\nallowed-tools: Bash\n---\n", "SKILL.md:5: allowed-tools: given twice, also as allowed_tools"},
		{"tool list of maps", "---\nname: x\ndescription: d\nallowed-tools:\n  - {a: b}\n---\n", "SKILL.md:5: allowed-tools: list items must be strings, not a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := mustParse(t, tt.src)
			errs := errorsOf(diags)
			if !slices.Contains(errs, tt.want) {
				t.Fatalf("errors = %q\nwant one = %q", errs, tt.want)
			}
		})
	}
}

// TestParseOddShapes covers the shapes public skills show: block scalars,
// list-valued hints, string booleans, foreign keys, !`cmd` bodies, CRLF.
func TestParseOddShapes(t *testing.T) {
	tests := []struct {
		name, src    string
		check        func(Manifest) bool
		wantWarnings []string
	}{
		{"folded description", "---\nname: fuzz\ntype: fuzzer\ndescription: >\n  Line one\n  line two.\n---\n",
			func(m Manifest) bool { return m.Description == "Line one line two.\n" },
			[]string{"SKILL.md:3: type: not a skillrun field; ignored"}},
		{"literal description", "---\nname: api\ndescription: |-\n  First.\n  Second: with colon.\n---\n",
			func(m Manifest) bool { return m.Description == "First.\nSecond: with colon." }, nil},
		{"list-valued hint", "---\nname: apk\ndescription: d\nargument-hint: [apk-file]\n---\n",
			func(m Manifest) bool {
				return len(m.Extra) == 1 && m.Extra[0].Key == "argument-hint" && m.Extra[0].Line == 4
			},
			[]string{"SKILL.md:4: argument-hint: used by Claude Code's slash commands; ignored here"}},
		{"string boolean", "---\nname: x\ndescription: d\nhide-from-slash-command-tool: \"true\"\ndisable-model-invocation: true\n---\n",
			func(m Manifest) bool { return len(m.Extra) == 2 }, nil},
		{"quoted number", "---\nname: x\ndescription: d\neffort_minutes: \"15\"\n---\n",
			func(m Manifest) bool { return m.EffortMinutes == 15 },
			[]string{"SKILL.md:4: effort_minutes: a number written as a string; read as 15"}},
		{"unknown extension", "---\nname: x\ndescription: d\nx-gpu: true\n---\n",
			func(m Manifest) bool { return m.Extra[0].Value == "true" },
			[]string{"SKILL.md:4: x-gpu: unknown extension; kept but not enforced"}},
		{"substitution body", "---\nname: x\ndescription: d\n---\nContext: !`git status`\nsome prose!`not\ncode`\n",
			func(m Manifest) bool { return len(m.Substitutions) == 1 && m.Substitutions[0].Command == "git status" },
			[]string{"SKILL.md:5: body: !`git status` is a shell substitution other hosts run at load time; skillrun never runs it"}},
		{"crlf and bom", "\ufeff---\r\nname: x\r\ndescription: d\r\n---\r\nbody\r\n",
			func(m Manifest) bool { return m.Name == "x" && m.Description == "d" }, nil},
		{"uppercase name", "---\nname: My Skill\ndescription: d\n---\n",
			func(m Manifest) bool { return m.Name == "My Skill" },
			[]string{`SKILL.md:2: name: "My Skill" is not lowercase letters, digits and hyphens as the Agent Skills format asks`}},
		{"anchors", "---\nname: x\ndescription: &d shared\nlicense: *d\n---\n",
			func(m Manifest) bool { return m.License == "shared" }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, diags := mustParse(t, tt.src)
			if errs := errorsOf(diags); len(errs) != 0 {
				t.Fatalf("errors: %v", errs)
			}
			if !tt.check(m) {
				t.Fatalf("manifest not as expected: %+v", m)
			}
			warns := warningsOf(diags)
			for _, w := range tt.wantWarnings {
				if !slices.Contains(warns, w) {
					t.Errorf("warnings = %q\nwant %q", warns, w)
				}
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"256MiB", 256 << 20}, {"1GiB", 1 << 30}, {"512M", 512 << 20}, {"500MB", 500e6}, {"1048576", 1 << 20}, {"4 KiB", 4096}, {"2T", 2 << 40},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "-1MiB", "1.5GiB", "1PiB", "99999999999999999999", "9999999999999TiB", "MiB"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
	if FormatSize(512<<20) != "512MiB" || FormatSize(1000) != "1000B" {
		t.Errorf("FormatSize: %s %s", FormatSize(512<<20), FormatSize(1000))
	}
}

func TestManifestCloneIsDeep(t *testing.T) {
	m, _ := mustParse(t, "---\nname: x\ndescription: d\nallowed-tools: Read\nmetadata: {a: b}\n---\n")
	s := NewSnapshot(m, "/x", "SKILL.md", "h", nil)
	got := s.Manifest()
	got.AllowedTools[0].Tool = "Bash"
	got.Metadata["a"] = "changed"
	again := s.Manifest()
	if again.AllowedTools[0].Tool != "Read" || again.Metadata["a"] != "b" {
		t.Fatalf("snapshot changed through a copy: %+v", again)
	}
}

func TestParseLoneCarriageReturn(t *testing.T) {
	_, diags := mustParse(t, "---\nname: x\ndescription: \"a\rb\"\n---\n")
	if errs := errorsOf(diags); len(errs) != 1 || errs[0] != "SKILL.md:3: frontmatter: a carriage return inside a line" {
		t.Fatalf("errors = %q", errs)
	}
}
