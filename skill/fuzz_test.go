package skill

import (
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary SKILL.md bytes to the parser. Invariants: no
// panic; every diagnostic names a field and a line inside the file (or 0);
// a parse without errors has a name and a description.
func FuzzParse(f *testing.F) {
	f.Add([]byte(minimalSkill))
	f.Add([]byte("---\nname: x\ndescription: >\n  a\n  b\nallowed-tools: Bash(git add:*), Read\n---\n!`ls`\n"))
	f.Add([]byte("---\n&a [*a, *a]\n---\n"))
	f.Add([]byte("---\nname: x\ndescription: d\nx-allowed-files: [\"/a/{b,c}/**\"]\nx-max-memory: 1GiB\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, diags := Parse("SKILL.md", data)
		lines := strings.Count(string(data), "\n") + 2
		hasErr := false
		for _, d := range diags {
			if d.Line < 0 || d.Line > lines {
				t.Fatalf("diagnostic line %d outside the file (%d lines): %s", d.Line, lines, d)
			}
			if d.Field == "" {
				t.Fatalf("diagnostic without a field: %s", d)
			}
			hasErr = hasErr || d.Severity == SeverityError
		}
		if !hasErr && (strings.TrimSpace(m.Name) == "" || strings.TrimSpace(m.Description) == "") {
			t.Fatalf("accepted without name or description: %+v", m)
		}
	})
}
