package enforce

import (
	"errors"
	"testing"
)

func TestCanonicalMemoryPath(t *testing.T) {
	tests := []struct {
		in, want string
		err      error
	}{
		{"memories/projects/cyberos/x.md", "memories/projects/cyberos/x.md", nil},
		{"memories/projects/cyberos/../people/y.md", "memories/projects/people/y.md", nil},
		{"/memories//projects/./cyberos/", "memories/projects/cyberos", nil},
		{"a/b/../../c", "c", nil},
		{"a/../..", "", ErrPathEscapes},
		{"../etc/passwd", "", ErrPathEscapes},
		{"a/./../../b", "", ErrPathEscapes},
		{"", "", ErrPathEmpty},
		{"/", "", ErrPathEmpty},
		{"a/..", "", ErrPathEmpty},
		{"a\x00b", "", ErrPathNUL},
		{"a\\..\\b", "", ErrPathControl},
		{"a/\nb", "", ErrPathControl},
		{"a/%2e%2e/b", "", ErrPathEncoded},
		{"a/%2E%2e/b", "", ErrPathEncoded},
		{"a%2fb", "", ErrPathEncoded},
		{"a/%00", "", ErrPathEncoded},
		{"a/100%/b", "a/100%/b", nil},
		{"…/x", "…/x", nil},
	}
	for _, tt := range tests {
		got, err := CanonicalMemoryPath(tt.in)
		if !errors.Is(err, tt.err) || got != tt.want {
			t.Errorf("CanonicalMemoryPath(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.err)
		}
	}
	long := make([]byte, maxMemoryPath+1)
	for i := range long {
		long[i] = 'a'
	}
	if _, err := CanonicalMemoryPath(string(long)); !errors.Is(err, ErrPathTooLong) {
		t.Errorf("long path: %v", err)
	}
}

func TestCanonicalMemoryPathNoAllocWhenCanonical(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := CanonicalMemoryPath("memories/projects/cyberos/notes/x.md"); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocs for a canonical path, want 0", allocs)
	}
}

// FuzzCanonicalMemoryPath checks the canonicaliser's invariants on any
// input: the result is canonical, never climbs above the root, is stable
// under a second pass, and holds no byte that was refused.
func FuzzCanonicalMemoryPath(f *testing.F) {
	for _, s := range []string{"memories/a/../b", "../x", "a//b/./c/", "%2e%2e/x", "a\x00b", "/", "a/b/../../.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := CanonicalMemoryPath(in)
		if err != nil {
			return
		}
		if !isCanonical(got) {
			t.Fatalf("%q -> %q is not canonical", in, got)
		}
		again, err := CanonicalMemoryPath(got)
		if err != nil || again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", in, got, again, err)
		}
		if memoryPathChars(got) != nil {
			t.Fatalf("%q -> %q holds a refused byte", in, got)
		}
	})
}
