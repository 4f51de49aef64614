package enforce

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillrun/skillrun/skill"
)

// testCatalog is the native tool set, spelled out here because enforce
// cannot import the tools package (it sits beside it, not above it).
type testCatalog map[string]bool

func (c testCatalog) Lookup(name string) (ToolSpec, bool) {
	if !c[name] {
		return ToolSpec{}, false
	}
	return ToolSpec{Name: name}, true
}

var natives = testCatalog{
	"Bash": true, "Read": true, "Write": true, "Edit": true, "Glob": true, "Grep": true,
	"MemoryRead": true, "MemorySearch": true, "MemoryEmit": true, "HttpFetch": true, "HttpPost": true,
	"mcp__github__create_issue": true,
}

// snapshotOf parses a frontmatter block into a snapshot, failing the test
// on any load error.
func snapshotOf(t testing.TB, frontmatter string) *skill.Snapshot {
	t.Helper()
	m, diags := skill.Parse("SKILL.md", []byte("---\nname: test-skill\ndescription: d\n"+frontmatter+"\n---\n"))
	for _, d := range diags {
		if d.Severity == skill.SeverityError {
			t.Fatalf("fixture: %s", d)
		}
	}
	return skill.NewSnapshot(m, "/skills/test-skill", "SKILL.md", "hash", diags)
}

func compile(t testing.TB, frontmatter string) *Enforcer {
	t.Helper()
	e, _, err := Compile(snapshotOf(t, frontmatter), natives)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return e
}

// wantDenial checks err is a *Denial with reason and the matching sentinel.
func wantDenial(t *testing.T, err error, reason Reason) {
	t.Helper()
	d, ok := AsDenial(err)
	if !ok {
		t.Fatalf("err = %v, want a %s denial", err, reason)
	}
	if d.Reason != reason || !errors.Is(err, reason.Sentinel()) {
		t.Fatalf("denial %v, want reason %s", d, reason)
	}
	if d.SkillID != "test-skill" {
		t.Fatalf("denial carries skill id %q", d.SkillID)
	}
}

// The seed spec's acceptance criteria 1–7, at the policy level.
func TestSeedCriteria(t *testing.T) {
	t.Run("1 allowed tool", func(t *testing.T) {
		e := compile(t, "allowed_tools: [MemoryRead]\nallowed_memory_scopes: [\"memories/projects/cyberos/**\"]")
		if err := e.CheckTool("MemoryRead"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.CheckMemoryPath("MemoryRead", "memories/projects/cyberos/notes/x.md"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("2 tool not in allowed_tools", func(t *testing.T) {
		e := compile(t, "allowed_tools: [MemoryRead]")
		wantDenial(t, e.CheckTool("Bash"), ReasonToolNotAllowed)
		if got := ReasonToolNotAllowed.Class(); got != "tool_not_allowed" {
			t.Fatalf("class %q", got)
		}
	})
	t.Run("3 disallowed wins", func(t *testing.T) {
		e := compile(t, "allowed_tools: [Bash, Read]\ndisallowed_tools: [Bash]")
		wantDenial(t, e.CheckTool("Bash"), ReasonToolDisallowed)
		wantDenial(t, e.CheckBash("ls"), ReasonToolNotAllowed)
		if err := e.CheckTool("Read"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("4 memory scope", func(t *testing.T) {
		e := compile(t, "allowed_tools: [MemoryRead]\nallowed_memory_scopes: [\"memories/projects/cyberos/**\"]")
		if _, err := e.CheckMemoryPath("MemoryRead", "memories/projects/cyberos/x.md"); err != nil {
			t.Fatal(err)
		}
		_, err := e.CheckMemoryPath("MemoryRead", "memories/people/y.md")
		wantDenial(t, err, ReasonScopeViolation)
	})
	t.Run("5 canonicalisation before glob", func(t *testing.T) {
		e := compile(t, "allowed_tools: [MemoryRead]\nallowed_memory_scopes: [\"memories/projects/cyberos/**\"]")
		for _, p := range []string{
			"memories/projects/cyberos/../people/y.md",
			"memories/projects/cyberos/./../../people/y.md",
			"memories/projects/cyberos/../../../../etc/passwd",
			"memories/projects/cyberos/%2e%2e/people/y.md",
			"memories/projects/cyberos/\x00/../people",
		} {
			_, err := e.CheckMemoryPath("MemoryRead", p)
			wantDenial(t, err, ReasonScopeViolation)
		}
		if c, err := e.CheckMemoryPath("MemoryRead", "/memories//projects/cyberos/a/../b.md"); err != nil || c != "memories/projects/cyberos/b.md" {
			t.Fatalf("canonical %q, %v", c, err)
		}
	})
	t.Run("6 file path", func(t *testing.T) {
		dir, _ := filepath.EvalSymlinks(t.TempDir())
		os.WriteFile(filepath.Join(dir, "x.txt"), []byte("x"), 0o644)
		os.Symlink("/etc/passwd", filepath.Join(dir, "escape"))
		e := compile(t, "allowed_tools: [Read]\nx-allowed-files: [\""+dir+"/**\"]")
		if real, err := e.CheckFile("Read", filepath.Join(dir, "x.txt")); err != nil || real != filepath.Join(dir, "x.txt") {
			t.Fatalf("allowed file: %q, %v", real, err)
		}
		_, err := e.CheckFile("Read", "/etc/passwd")
		wantDenial(t, err, ReasonFileViolation)
		// A symlink inside the allowed tree is judged by where it leads.
		_, err = e.CheckFile("Read", filepath.Join(dir, "escape"))
		wantDenial(t, err, ReasonFileViolation)
		_, err = e.CheckFile("Read", dir+"/../../etc/passwd")
		wantDenial(t, err, ReasonFileViolation)
		_, err = e.CheckFile("Read", "x.txt")
		wantDenial(t, err, ReasonFileViolation)
	})
	t.Run("6 seed /tmp/**", func(t *testing.T) {
		e := compile(t, "allowed_tools: [Read]\nx-allowed-files: [\"/tmp/**\"]")
		if err := e.CheckFilePath("Read", "/tmp/x.txt"); err != nil {
			t.Fatal(err)
		}
		wantDenial(t, e.CheckFilePath("Read", "/etc/passwd"), ReasonFileViolation)
	})
	t.Run("7 domain", func(t *testing.T) {
		e := compile(t, "allowed_tools: [HttpFetch]\nx-allowed-domains: [api.example.com]")
		if _, err := e.CheckURL("HttpFetch", "https://api.example.com/x"); err != nil {
			t.Fatal(err)
		}
		_, err := e.CheckURL("HttpFetch", "https://evil.com/y")
		wantDenial(t, err, ReasonDomainViolation)
	})
}

func TestDefaultDeny(t *testing.T) {
	e := compile(t, "")
	for _, tool := range []string{"Read", "Bash", "MemoryRead", "HttpFetch"} {
		wantDenial(t, e.CheckTool(tool), ReasonToolNotAllowed)
	}
	_, err := e.CheckMemoryPath("MemoryRead", "anything")
	wantDenial(t, err, ReasonScopeViolation)
	wantDenial(t, e.CheckFilePath("Read", "/tmp/x"), ReasonFileViolation)
	_, err = e.CheckURL("HttpFetch", "https://example.com/")
	wantDenial(t, err, ReasonDomainViolation)
	wantDenial(t, e.CheckBash("true"), ReasonToolNotAllowed)
}

func TestForeignAndMCPTools(t *testing.T) {
	e := compile(t, "allowed-tools: Read Task AskUserQuestion mcp__github__create_issue mcp__serena__find_symbol")
	wantDenial(t, e.CheckTool("Task"), ReasonUnknownTool)
	wantDenial(t, e.CheckTool("mcp__serena__find_symbol"), ReasonUnknownTool)
	if err := e.CheckTool("mcp__github__create_issue"); err != nil {
		t.Fatal(err)
	}
}

func TestWebFetchMapsToHttpFetch(t *testing.T) {
	e := compile(t, "allowed-tools: WebFetch(domain:docs.example.com)")
	if err := e.CheckTool("HttpFetch"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CheckURL("HttpFetch", "https://docs.example.com/a"); err != nil {
		t.Fatal(err)
	}
	_, err := e.CheckURL("HttpFetch", "https://example.com/a")
	wantDenial(t, err, ReasonDomainViolation)
}

func TestBashRulesThroughEnforcer(t *testing.T) {
	e := compile(t, "allowed-tools: Bash(git status), Bash(npm test:*)\ndisallowed-tools: Bash(npm test --unsafe:*)")
	for _, ok := range []string{"git status", "npm test", "npm test -- --watch", "git status && npm test"} {
		if err := e.CheckBash(ok); err != nil {
			t.Errorf("CheckBash(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"git status && cat /etc/shadow", "npm test $(cat /etc/shadow)", "npm test --unsafe now", "ls"} {
		wantDenial(t, e.CheckBash(bad), ReasonCommandNotAllowed)
	}
	any := compile(t, "allowed-tools: Bash\ndisallowed-tools: Bash(rm:*)")
	if err := any.CheckBash("ls -la | wc -l"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"rm -rf /", "ls; rm x", "X=1 rm x", "echo $(rm x)", "if true; then rm x; fi"} {
		wantDenial(t, any.CheckBash(bad), ReasonCommandNotAllowed)
	}
}

func TestDeclareErrors(t *testing.T) {
	tests := []struct {
		name, fm, want string
	}{
		{"typo", "allowed-tools: Read, Raed", `SKILL.md:4: allowed_tools: unknown tool "Raed" (no registry here provides it; a typo?)`},
		{"typo in deny", "disallowed-tools: [Bsah]", `SKILL.md:4: disallowed_tools: unknown tool "Bsah"`},
		{"bad webfetch", "allowed-tools: WebFetch(https://x)", `SKILL.md:4: allowed_tools: WebFetch(https://x): WebFetch takes only domain:HOST`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Compile(snapshotOf(t, tt.fm), natives)
			var pe *PolicyError
			if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("err = %v, want *PolicyError", err)
			}
			if pe.Diagnostics[0].String() != tt.want {
				t.Fatalf("got  %s\nwant %s", pe.Diagnostics[0], tt.want)
			}
		})
	}
}

func TestDeclareWarnings(t *testing.T) {
	_, warns, err := Compile(snapshotOf(t, "allowed-tools: Bash Task Read(./x) WebFetch\nx-allowed-files: [\"/**\"]"), natives)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"SKILL.md:4: allowed_tools: Task is a tool of other agent hosts, not provided here; calls get unknown_tool":       true,
		"SKILL.md:4: allowed_tools: Read(./x): the specifier is not enforced on Read; its reach comes from the x- fields": true,
		"SKILL.md:4: allowed_tools: WebFetch maps to HttpFetch; hosts still come only from x-allowed-domains":             true,
		"SKILL.md:4: allowed_tools: Bash is a broad grant: it allows any command":                                         true,
		`SKILL.md:5: x-allowed-files: "/**" grants the whole host filesystem`:                                             true,
	}
	for _, w := range warns {
		delete(want, w.String())
	}
	for w := range want {
		t.Errorf("missing warning: %s", w)
	}
}

// BenchmarkCheckFilePath is the hot path of every file tool: a resolved
// path against the globs. Target: ≤ 1 µs, 0 allocs.
func BenchmarkCheckFilePath(b *testing.B) {
	e := compile(b, "allowed_tools: [Read]\nx-allowed-files: [\"/data/reports/**\", \"/srv/*/in/*.csv\", \"/tmp/**\"]")
	b.ReportAllocs()
	for b.Loop() {
		if err := e.CheckFilePath("Read", "/srv/acme/in/2026-10.csv"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckMemoryPath canonicalises and matches an already canonical
// path. Target: ≤ 1 µs, 0 allocs.
func BenchmarkCheckMemoryPath(b *testing.B) {
	e := compile(b, "allowed_tools: [MemoryRead]\nallowed_memory_scopes: [\"memories/people/**\", \"memories/projects/cyberos/**\"]")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.CheckMemoryPath("MemoryRead", "memories/projects/cyberos/notes/auth-design.md"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckTool(b *testing.B) {
	e := compile(b, "allowed-tools: Read Write MemoryRead HttpFetch")
	b.ReportAllocs()
	for b.Loop() {
		if err := e.CheckTool("MemoryRead"); err != nil {
			b.Fatal(err)
		}
	}
}
