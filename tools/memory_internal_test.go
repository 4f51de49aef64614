package tools

import "testing"

func TestMemoryScopeRoot(t *testing.T) {
	tests := []struct{ glob, want string }{
		{"memories/projects/cyberos/**", "memories/projects/cyberos"},
		{"memories/people/alice.md", "memories/people/alice.md"},
		{"memories/*/x/*.md", "memories"},
		{"memories/pro*/x", "memories"},
		{"memories/{a,b/c}/x", "memories"},
		{"memories/[ab]/x", "memories"},
		{"memories/a?/x", "memories"},
		{"memories/a!/x", "memories"},
		{"**", ""},
		{"*.md", ""},
		{"**/x", ""},
	}
	for _, tt := range tests {
		if got := scopeRoot(tt.glob); got != tt.want {
			t.Errorf("scopeRoot(%q) = %q, want %q", tt.glob, got, tt.want)
		}
	}
}

func TestMemoryNarrowPrefix(t *testing.T) {
	roots := []string{"memories/projects/cyberos", "memories/projects/x", "memories/people/alice.md"}
	tests := []struct {
		p, want string
		ok      bool
	}{
		{"", "memories", true},
		{"memories", "memories", true},
		{"memories/projects", "memories/projects", true},
		{"memories/projects/cyberos", "memories/projects/cyberos", true},
		{"memories/projects/cyberos/notes", "memories/projects/cyberos/notes", true},
		{"memories/people", "memories/people/alice.md", true},
		{"memories/people/bob.md", "", false},
		{"memories/projects/cyber", "", false},
		{"memories/projects/cyberosity", "", false},
		{"other", "", false},
	}
	for _, tt := range tests {
		if got, ok := narrowPrefix(tt.p, roots); got != tt.want || ok != tt.ok {
			t.Errorf("narrowPrefix(%q) = %q, %v; want %q, %v", tt.p, got, ok, tt.want, tt.ok)
		}
	}
	if _, ok := narrowPrefix("", nil); ok {
		t.Error("no scopes reach under the root")
	}
	if got, ok := narrowPrefix("memories/a", []string{""}); got != "memories/a" || !ok {
		t.Errorf("under a root of everything: %q, %v", got, ok)
	}
}
