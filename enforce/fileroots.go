package enforce

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/gobwas/glob"
	"github.com/gobwas/glob/syntax"
)

// CompileFileGlob compiles a path glob exactly as x-allowed-files are
// compiled ('/' separator, globstar), so a Glob or Grep pattern means what
// the same text means in a declaration.
func CompileFileGlob(pattern string) (*glob.Pattern, error) {
	c := glob.Compiler{Separators: []rune{'/'}, Globstar: true}
	return c.Compile(pattern)
}

// GlobRoot returns the path every real path a path glob can match lies at
// or under: its literal prefix cut back to the last '/', or the whole
// pattern when it has no meta character. ok is false when the glob can
// match no real path at all: a relative literal prefix, or one that is
// not clean ("/a/../etc/*"), since real paths never hold "..", "." or "//".
// A glob starting with a meta character ("**/x") is rooted at "/".
func GlobRoot(pattern string) (root string, ok bool) {
	if strings.IndexByte(pattern, 0) >= 0 {
		return "", false
	}
	var lit strings.Builder
	literal := true
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c == '\\' && i+1 < len(pattern) {
			i++
			lit.WriteByte(pattern[i])
			continue
		}
		if syntax.IsSpecial(c) {
			literal = false
			break
		}
		lit.WriteByte(c)
	}
	prefix := lit.String()
	if prefix == "" && !literal {
		return "/", true
	}
	if !strings.HasPrefix(prefix, "/") {
		return "", false
	}
	if !literal {
		prefix = prefix[:strings.LastIndexByte(prefix, '/')+1]
		if prefix != "/" {
			prefix = strings.TrimSuffix(prefix, "/")
		}
	}
	if filepath.Clean(prefix) != prefix {
		return "", false
	}
	return prefix, true
}

// GlobDepth is the most '/' characters a path matching the glob can hold,
// or -1 when that is unbounded: "**" crosses separators, and a character
// class is counted as unbounded rather than trusted not to match '/'.
// Every other '/' a match holds comes from a '/' of the pattern.
func GlobDepth(pattern string) int {
	if strings.Contains(pattern, "**") || strings.IndexByte(pattern, '[') >= 0 {
		return -1
	}
	return strings.Count(pattern, "/")
}

// WithinRoot reports whether the clean absolute path p is root or lies
// under it.
func WithinRoot(p, root string) bool {
	return root == "/" || p == root || strings.HasPrefix(p, root) && len(p) > len(root) && p[len(root)] == '/'
}

// FileRoots returns the roots (GlobRoot) of the x-allowed-files globs,
// sorted, without any root that lies under another: walking these, and
// nothing else, reaches every allowed real path.
func (e *Enforcer) FileRoots() []string {
	var roots []string
	for _, p := range e.files.src {
		if r, ok := GlobRoot(p); ok {
			roots = append(roots, r)
		}
	}
	return pruneRoots(roots)
}

// pruneRoots sorts roots and drops the ones under another. Sorted, a root's
// ancestors come before it, but not always right before ("/a", "/a-b",
// "/a/c"), so each root is checked against every kept one.
func pruneRoots(roots []string) []string {
	slices.Sort(roots)
	roots = slices.Compact(roots)
	var out []string
	for _, r := range roots {
		if !slices.ContainsFunc(out, func(k string) bool { return WithinRoot(r, k) }) {
			out = append(out, r)
		}
	}
	return out
}

// FileDepth is the most '/' characters an allowed real path can hold, or
// -1 when unbounded (GlobDepth over every x-allowed-files glob).
func (e *Enforcer) FileDepth() int {
	depth := 0
	for _, p := range e.files.src {
		d := GlobDepth(p)
		if d < 0 {
			return -1
		}
		depth = max(depth, d)
	}
	return depth
}

// CheckFileTree resolves p as CheckFile does and accepts a real path that
// matches x-allowed-files or lies at or under one of FileRoots: the
// directory a search starts from ("/data" for "/data/**", which the glob
// itself does not match). It grants nothing by itself: the tool walking
// below it must check every path it finds with CheckFilePath.
func (e *Enforcer) CheckFileTree(tool, p string) (string, error) {
	real, err := ResolveFilePath(p)
	if err != nil {
		return "", e.deny(ReasonFileViolation, tool, err.Error())
	}
	if e.files.match(real) {
		return real, nil
	}
	for _, r := range e.FileRoots() {
		if WithinRoot(real, r) {
			return real, nil
		}
	}
	return "", e.deny(ReasonFileViolation, tool, real)
}
