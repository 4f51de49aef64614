//go:build linux

package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/skillrun/skillrun/broker"
	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
	"github.com/skillrun/skillrun/skill"
	"github.com/skillrun/skillrun/tools"
)

// ftServe serves the file tools to a skill declaring allowed on dir/**,
// on a real Unix socket, and returns a connected client. The registry is
// built as an invocation builds it: the policy is compiled against the
// native catalog first, since Glob and Grep filter with it.
func ftServe(t *testing.T, allowed, dir string) *jsonrpc.Client {
	t.Helper()
	files, _ := json.Marshal([]string{dir + "/**"})
	m, diags := skill.Parse("SKILL.md", []byte("---\nname: files\ndescription: d\nallowed-tools: "+allowed+"\nx-allowed-files: "+string(files)+"\n---\n"))
	for _, d := range diags {
		if d.Severity == skill.SeverityError {
			t.Fatalf("SKILL.md: %s", d)
		}
	}
	snap := skill.NewSnapshot(m, t.TempDir(), "SKILL.md", "hash", nil)
	cat, err := tools.Catalog(tools.NativeSpecs())
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := enforce.Compile(snap, cat)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.NewRegistry(tools.NewRead(), tools.NewWrite(), tools.NewEdit(), tools.NewGlob(e), tools.NewGrep(e))
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(broker.Config{Snapshot: snap, Enforcer: e, Registry: reg, InvocationID: "inv-files-1"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := broker.Listen(filepath.Join(t.TempDir(), "f.sock"), broker.KeepOwner)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after cancel")
		}
	})
	c, err := jsonrpc.Dial(t.Context(), l.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ftRealDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// ftSocketTree is a grant with a directory and a link to a secret file in
// another directory. It returns both directories.
func ftSocketTree(t *testing.T) (dir, secret string) {
	t.Helper()
	dir, secret = ftRealDir(t), ftRealDir(t)
	if err := os.WriteFile(secret+"/shadow", []byte("root:SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret+"/shadow", dir+"/link"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir+"/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, secret
}

// TestFileToolsOverSocket drives every file tool through the broker.
func TestFileToolsOverSocket(t *testing.T) {
	dir, _ := ftSocketTree(t)
	c := ftServe(t, "Read, Write, Edit, Glob, Grep", dir)
	ctx := t.Context()

	var w tools.WriteResult
	if err := c.CallTool(ctx, "Write", map[string]string{"path": dir + "/notes.md", "body": "one\ntwo\n"}, "", &w); err != nil {
		t.Fatal(err)
	}
	var ed tools.EditResult
	if err := c.CallTool(ctx, "Edit", map[string]any{"path": dir + "/notes.md", "old": "two", "new": "2"}, "", &ed); err != nil {
		t.Fatal(err)
	}
	var r tools.ReadResult
	if err := c.CallTool(ctx, "Read", map[string]string{"path": dir + "/notes.md"}, "", &r); err != nil {
		t.Fatal(err)
	}
	if w.BytesWritten != 8 || r.Body != "one\n2\n" || ed.Replacements != 1 || ed.ContentHash != r.ContentHash {
		t.Fatalf("write %+v, edit %+v, read %+v", w, ed, r)
	}
	var g tools.GlobResult
	if err := c.CallTool(ctx, "Glob", map[string]string{"pattern": "/**"}, "", &g); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.Paths, []string{dir + "/notes.md"}) {
		t.Fatalf("glob %q", g.Paths)
	}
	var gr tools.GrepResult
	if err := c.CallTool(ctx, "Grep", map[string]string{"pattern": ".", "path": dir}, "", &gr); err != nil {
		t.Fatal(err)
	}
	if len(gr.Matches) != 2 || gr.Matches[1] != (tools.GrepMatch{Path: dir + "/notes.md", Line: 2, Text: "2"}) {
		t.Fatalf("grep %+v", gr.Matches)
	}
}

// TestFileToolRefusalsOverSocket checks each refusal as the skill decodes
// it across the socket: a denial, a tool_error reason, or invalid params.
func TestFileToolRefusalsOverSocket(t *testing.T) {
	dir, secret := ftSocketTree(t)
	if err := os.WriteFile(dir+"/notes.md", []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := ftServe(t, "Read, Write, Edit, Glob, Grep", dir)
	tests := []struct {
		name, tool string
		args       any
		deny       enforce.Reason // a denial, or
		reason     string         // a tool_error reason, or
		invalid    bool           // invalid params
	}{
		{"write outside", "Write", map[string]string{"path": secret + "/x", "body": "x"}, enforce.ReasonFileViolation, "", false},
		{"write through a link", "Write", map[string]string{"path": dir + "/link", "body": "x"}, enforce.ReasonFileViolation, "", false},
		{"write a directory", "Write", map[string]string{"path": dir + "/sub", "body": "x"}, "", broker.ReasonNotRegular, false},
		{"write, parent missing", "Write", map[string]string{"path": dir + "/no/x", "body": "x"}, "", broker.ReasonNotFound, false},
		{"edit, old absent", "Edit", map[string]any{"path": dir + "/notes.md", "old": "zzz", "new": ""}, "", tools.ReasonOldNotFound, false},
		{"edit, old ambiguous", "Edit", map[string]any{"path": dir + "/notes.md", "old": "\n", "new": ""}, "", tools.ReasonOldAmbiguous, false},
		{"edit, old empty", "Edit", map[string]any{"path": dir + "/notes.md", "old": "", "new": "x"}, "", "", true},
		{"grep outside", "Grep", map[string]string{"pattern": "x", "path": secret}, enforce.ReasonFileViolation, "", false},
		{"grep a link out", "Grep", map[string]string{"pattern": "x", "path": dir + "/link"}, enforce.ReasonFileViolation, "", false},
		{"grep, bad RE2", "Grep", map[string]string{"pattern": "(", "path": dir}, "", "", true},
		{"glob, bad pattern", "Glob", map[string]string{"pattern": "/[x"}, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.CallTool(t.Context(), tt.tool, tt.args, "", nil)
			switch {
			case tt.deny != "":
				d, ok := enforce.AsDenial(err)
				if !ok || d.Reason != tt.deny || d.Tool != tt.tool || d.SkillID != "files" || !errors.Is(err, tt.deny.Sentinel()) {
					t.Fatalf("err = %v, want %s denial of %s", err, tt.deny, tt.tool)
				}
			case tt.reason != "":
				te, ok := broker.AsToolError(err)
				if !ok || te.Reason != tt.reason || te.Tool != tt.tool {
					t.Fatalf("err = %v, want tool_error %s", err, tt.reason)
				}
			case tt.invalid:
				if !errors.Is(err, jsonrpc.ErrInvalidParams) {
					t.Fatalf("err = %v, want invalid params", err)
				}
			}
		})
	}
	if b, _ := os.ReadFile(secret + "/shadow"); string(b) != "root:SECRET" {
		t.Fatalf("the secret changed: %q", b)
	}
	if _, err := os.Lstat(secret + "/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a file was created outside: %v", err)
	}
}

// TestWriteNeedsWriteGrant: a skill declaring only Read is refused Write
// and Edit by the broker's first check, before any argument is looked at.
func TestWriteNeedsWriteGrant(t *testing.T) {
	dir := ftRealDir(t)
	c := ftServe(t, "Read", dir)
	for _, tt := range []struct {
		tool string
		args any
	}{
		{"Write", map[string]string{"path": dir + "/f", "body": "x"}},
		{"Edit", map[string]string{"path": dir + "/f", "old": "a", "new": "b"}},
	} {
		err := c.CallTool(t.Context(), tt.tool, tt.args, "", nil)
		d, ok := enforce.AsDenial(err)
		if !ok || d.Reason != enforce.ReasonToolNotAllowed || d.Tool != tt.tool || !errors.Is(err, enforce.ErrToolNotAllowed) {
			t.Fatalf("%s: err = %v, want tool_not_in_allowed_tools", tt.tool, err)
		}
	}
	if _, err := os.Lstat(dir + "/f"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Write ran: %v", err)
	}
}
