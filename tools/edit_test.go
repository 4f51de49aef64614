//go:build linux

package tools

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
)

func ftEditArgs(path, old, new string, all bool) string {
	b, _ := json.Marshal(map[string]any{"path": path, "old": old, "new": new, "replace_all": all})
	return string(b)
}

func TestEdit(t *testing.T) {
	dir := ftTempDir(t)
	e := ftPolicy(t, "Read, Edit", dir+"/**")
	tests := []struct {
		name, before string
		old, new     string
		all          bool
		after        string
		n            int
	}{
		{"single", "a needle b", "needle", "pin", false, "a pin b", 1},
		{"single with replace_all", "a needle b", "needle", "pin", true, "a pin b", 1},
		{"replace_all", "x.x.x", "x", "yy", true, "yy.yy.yy", 3},
		{"delete", "keep drop keep", " drop", "", false, "keep keep", 1},
		{"multi-line", "l1\nl2\nl3\n", "l2\nl3", "L", false, "l1\nL\n", 1},
		{"unicode", "größe", "ö", "oe", false, "groeße", 1},
		{"same text", "same", "same", "same", false, "same", 1},
		{"overlapping counts once", "aaa", "aa", "b", false, "ba", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "f")
			if err := os.WriteFile(path, []byte(tt.before), 0o640); err != nil {
				t.Fatal(err)
			}
			res, err := ftCall(t.Context(), NewEdit(), e, ftEditArgs(path, tt.old, tt.new, tt.all))
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != tt.after {
				t.Fatalf("file holds %q (%v), want %q", got, err, tt.after)
			}
			want := EditResult{Replacements: tt.n, ContentHash: hashOf(got)}
			if r := *res.(*EditResult); r != want {
				t.Fatalf("result %+v, want %+v", r, want)
			}
			if fi, _ := os.Stat(path); fi.Mode() != 0o640 {
				t.Fatalf("mode %v, want 0640", fi.Mode())
			}
		})
	}
	ftNoTemp(t, dir)
}

func TestEditErrors(t *testing.T) {
	dir, secret := ftTempDir(t), ftTempDir(t)
	ftTree(t, dir, "f", "twice", "sub/", "out -> "+secret+"/shadow", "big")
	ftTree(t, secret, "shadow")
	if err := os.WriteFile(dir+"/twice", []byte("dup dup"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, secretBefore := ftSnapshot(t, dir), ftSnapshot(t, secret)
	e := ftPolicy(t, "Edit", dir+"/**")

	tests := []struct {
		name   string
		ed     Edit
		args   string
		want   error
		reason string // the Failure reason, when the tool ran and failed
	}{
		{"old absent", Edit{}, ftEditArgs(dir+"/f", "nowhere", "x", false), ErrOldNotFound, ReasonOldNotFound},
		{"old ambiguous", Edit{}, ftEditArgs(dir+"/twice", "dup", "x", false), ErrOldAmbiguous, ReasonOldAmbiguous},
		{"file over the cap", Edit{Max: 5}, ftEditArgs(dir+"/big", "big", "x", false), ErrFileTooLarge, ReasonFileTooLarge},
		{"result over the cap", Edit{Max: 12}, ftEditArgs(dir+"/big", "big", "enormous", false), ErrFileTooLarge, ReasonFileTooLarge},
		{"old empty", Edit{}, ftEditArgs(dir+"/f", "", "x", false), jsonrpc.ErrInvalidParams, ""},
		{"new missing", Edit{}, `{"path":"` + dir + `/f","old":"body"}`, jsonrpc.ErrInvalidParams, ""},
		{"symlink out", Edit{}, ftEditArgs(dir+"/out", "shadow", "x", false), enforce.ErrFileViolation, ""},
		{"outside", Edit{}, ftEditArgs(secret+"/shadow", "shadow", "x", false), enforce.ErrFileViolation, ""},
		{"directory", Edit{}, ftEditArgs(dir+"/sub", "a", "x", false), ErrNotRegular, ""},
		{"missing file", Edit{}, ftEditArgs(dir+"/nope", "a", "x", false), fs.ErrNotExist, ""},
		{"missing parent", Edit{}, ftEditArgs(dir+"/no/nope", "a", "x", false), fs.ErrNotExist, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ftCall(t.Context(), tt.ed, e, tt.args)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			f, ok := AsFailure(err)
			if tt.reason != "" && (!ok || f.Reason != tt.reason) {
				t.Fatalf("err = %v, want a %s failure", err, tt.reason)
			}
			if tt.reason == "" && ok {
				t.Fatalf("err = %v is a failure, want %v", err, tt.want)
			}
		})
	}
	ftSame(t, dir, before)
	ftSame(t, secret, secretBefore)
}

// TestEditInvokeRefusesSymlink: a file swapped for a link to a secret
// after the check is neither read nor written.
func TestEditInvokeRefusesSymlink(t *testing.T) {
	for _, o := range openers {
		t.Run(o.name, func(t *testing.T) {
			useWalk(t, o.walk)
			dir, secret := ftTempDir(t), ftTempDir(t)
			ftTree(t, dir, "f")
			ftTree(t, secret, "f")
			before := ftSnapshot(t, secret)
			e := ftPolicy(t, "Edit", dir+"/**")
			checked, err := NewEdit().Prepare(json.RawMessage(ftEditArgs(dir+"/f", "body", "pwned", true)), e)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(dir + "/f"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(secret+"/f", dir+"/f"); err != nil {
				t.Fatal(err)
			}
			_, err = NewEdit().Invoke(t.Context(), Call{Args: checked})
			d, ok := enforce.AsDenial(err)
			if !ok || d.Reason != enforce.ReasonFileViolation || d.Tool != "Edit" {
				t.Fatalf("err = %v, want an Edit file_violation", err)
			}
			ftSame(t, secret, before)
		})
	}
}
