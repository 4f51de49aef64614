//go:build linux

package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/skill"
)

// ftTool is a file tool as the broker drives it: Prepare, then Invoke.
type ftTool interface {
	Tool
	Prepare(args json.RawMessage, e *enforce.Enforcer) (json.RawMessage, error)
}

// ftPolicy compiles a skill allowed tools (as allowed-tools spells them)
// on the x-allowed-files globs, against every native tool.
func ftPolicy(t testing.TB, allowed string, globs ...string) *enforce.Enforcer {
	t.Helper()
	files, _ := json.Marshal(globs)
	m, diags := skill.Parse("SKILL.md", []byte("---\nname: t\ndescription: d\nallowed-tools: "+allowed+"\nx-allowed-files: "+string(files)+"\n---\n"))
	for _, d := range diags {
		if d.Severity == skill.SeverityError {
			t.Fatalf("SKILL.md: %s", d)
		}
	}
	cat, err := Catalog(NativeSpecs())
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := enforce.Compile(skill.NewSnapshot(m, t.TempDir(), "SKILL.md", "hash", nil), cat)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// ftCall runs one call the way the broker does.
func ftCall(ctx context.Context, tool ftTool, e *enforce.Enforcer, args any) (any, error) {
	raw, ok := args.(string)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		raw = string(b)
	}
	checked, err := tool.Prepare(json.RawMessage(raw), e)
	if err != nil {
		return nil, err
	}
	return tool.Invoke(ctx, Call{Args: checked})
}

// ftTree builds files under root from a spec: "name" is a file holding
// "body of name", "name/" a directory, "name -> target" a symlink and
// "name|" a FIFO. Parents are made as needed.
func ftTree(t testing.TB, root string, spec ...string) {
	t.Helper()
	for _, s := range spec {
		var err error
		switch {
		case strings.Contains(s, " -> "):
			name, target, _ := strings.Cut(s, " -> ")
			ftMkdirs(t, root, name)
			err = os.Symlink(target, filepath.Join(root, name))
		case strings.HasSuffix(s, "/"):
			err = os.MkdirAll(filepath.Join(root, s), 0o755)
		case strings.HasSuffix(s, "|"):
			name := strings.TrimSuffix(s, "|")
			ftMkdirs(t, root, name)
			err = mkfifo(filepath.Join(root, name))
		default:
			ftMkdirs(t, root, s)
			err = os.WriteFile(filepath.Join(root, s), []byte("body of "+s), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func ftMkdirs(t testing.TB, root, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
		t.Fatal(err)
	}
}

// ftSnapshot is every name under dir with its type and content, to show
// that nothing there changed.
func ftSnapshot(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		line := p + " " + d.Type().String()
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += " " + string(b)
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// ftTempDir is a real (symlink-free) temporary directory.
func ftTempDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func mkfifo(path string) error { return unix.Mkfifo(path, 0o644) }
