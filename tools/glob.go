package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
)

const globName = "Glob"

// The bounds of one Glob or Grep call.
const (
	// DefaultMaxVisits caps the directory entries one call looks at.
	DefaultMaxVisits = 100_000
	// DefaultGlobMaxResults caps the paths one Glob returns.
	DefaultGlobMaxResults = 10_000
)

// Glob is the native Glob tool (DESIGN §6): the allowed files whose path
// matches an absolute path glob, in the syntax of x-allowed-files.
//
// It walks only inside the allowed set: from the roots of the
// x-allowed-files globs (enforce.FileRoots), narrowed to the root of the
// pattern, following no symlink, and returns the paths that match the
// pattern and pass x-allowed-files. A pattern reaching elsewhere ("/etc/*",
// "/**", "/a/../etc/*") walks nothing outside and returns nothing from
// there. Paths are real paths: a pattern naming a directory through a
// symlink matches nothing.
//
// Symlinks met inside are never walked through. A symlink is listed, by
// its own path, only when it leads to a regular file whose real path is
// allowed: exactly the links Read would read. Directories are not listed.
//
// Glob holds the enforcer it filters with; it is built per invocation,
// after the policy is compiled (a Catalog of NativeSpecs serves Compile).
type Glob struct {
	e *enforce.Enforcer
	// MaxVisits and MaxResults bound a call; 0 means DefaultMaxVisits and
	// DefaultGlobMaxResults. Running into either sets truncated.
	MaxVisits, MaxResults int
}

// NewGlob is the Glob tool filtering with e, with the default bounds.
func NewGlob(e *enforce.Enforcer) *Glob { return &Glob{e: e} }

// GlobResult is Glob's result: paths sorted.
type GlobResult struct {
	Paths     []string `json:"paths"`
	Truncated bool     `json:"truncated,omitempty"`
}

type globArgs struct {
	Pattern string `json:"pattern"`
}

var globSpec = sync.OnceValue(func() Spec { return fileToolSpec(globName) })

// Spec is Glob's entry of NativeSpecs.
func (*Glob) Spec() Spec { return globSpec() }

// Prepare checks the pattern. It denies nothing: a pattern reaching
// outside the grant is not an attempt on any one file, and returns only
// what is inside.
func (g *Glob) Prepare(args json.RawMessage, e *enforce.Enforcer) (json.RawMessage, error) {
	if e == nil || e != g.e {
		return nil, ErrEnforcerMismatch
	}
	a, _, err := decodeGlobArgs(args)
	if err != nil {
		return nil, err
	}
	return json.Marshal(a)
}

func decodeGlobArgs(args json.RawMessage) (globArgs, fileMatcher, error) {
	var a globArgs
	if err := jsonrpc.DecodeParams(args, &a); err != nil {
		return a, nil, err
	}
	m, err := compilePathGlob("pattern", a.Pattern)
	return a, m, err
}

// fileMatcher is a compiled path glob.
type fileMatcher interface{ Match(string) bool }

// compilePathGlob compiles an absolute path glob given as field.
func compilePathGlob(field, pattern string) (fileMatcher, error) {
	switch {
	case pattern == "":
		return nil, &jsonrpc.ParamsError{Field: field, Detail: "required"}
	case !strings.HasPrefix(pattern, "/"):
		return nil, &jsonrpc.ParamsError{Field: field, Detail: "must be an absolute path glob"}
	case strings.IndexByte(pattern, 0) >= 0:
		return nil, &jsonrpc.ParamsError{Field: field, Detail: "holds NUL"}
	}
	m, err := enforce.CompileFileGlob(pattern)
	if err != nil {
		return nil, &jsonrpc.ParamsError{Field: field, Detail: "not a valid glob"}
	}
	return m, nil
}

// Invoke lists the allowed paths matching the pattern.
func (g *Glob) Invoke(ctx context.Context, call Call) (any, error) {
	if g.e == nil {
		return nil, ErrEnforcerMismatch
	}
	a, pat, err := decodeGlobArgs(call.Args)
	if err != nil {
		return nil, err
	}
	res := &GlobResult{Paths: []string{}}
	root, ok := enforce.GlobRoot(a.Pattern)
	if !ok {
		return res, nil // no real path can match
	}
	b := &walkBudget{
		visits:   positiveOr(g.MaxVisits, DefaultMaxVisits),
		maxDepth: minDepth(enforce.GlobDepth(a.Pattern), g.e.FileDepth()),
	}
	limit := positiveOr(g.MaxResults, DefaultGlobMaxResults)
	for _, start := range narrowRoots(root, g.e.FileRoots()) {
		err := walkTree(ctx, start, b, func(en *fileEntry) error {
			if !pat.Match(en.Path) || !g.listed(en) {
				return nil
			}
			if len(res.Paths) == limit {
				res.Truncated = true
				return errStopWalk
			}
			res.Paths = append(res.Paths, en.Path)
			return nil
		})
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, errors.ErrUnsupported) {
			return nil, err
		}
		if err != nil {
			continue // a root that is missing, or not real: nothing there
		}
		if res.Truncated || b.truncated {
			break
		}
	}
	res.Truncated = res.Truncated || b.truncated
	sort.Strings(res.Paths)
	return res, nil
}

// listed reports whether Glob returns en: a regular file on an allowed
// real path, or a symlink leading to one.
func (g *Glob) listed(en *fileEntry) bool {
	switch en.Mode {
	case 0:
		return g.e.CheckFilePath(globName, en.Path) == nil
	case fs.ModeSymlink:
		real, err := enforce.ResolveFilePath(en.Path)
		if err != nil || g.e.CheckFilePath(globName, real) != nil {
			return false
		}
		fi, err := os.Stat(real)
		return err == nil && fi.Mode().IsRegular()
	}
	return false
}

// narrowRoots is where a walk for a pattern rooted at root starts: each
// allowed root, or root itself where it lies inside one; roots that lie
// under another are dropped, so nothing is walked twice.
func narrowRoots(root string, allowed []string) []string {
	var starts []string
	for _, r := range allowed {
		switch {
		case enforce.WithinRoot(root, r):
			starts = append(starts, root)
		case enforce.WithinRoot(r, root):
			starts = append(starts, r)
		}
	}
	slices.Sort(starts)
	starts = slices.Compact(starts)
	var out []string
	for _, s := range starts {
		if !slices.ContainsFunc(out, func(k string) bool { return enforce.WithinRoot(s, k) }) {
			out = append(out, s)
		}
	}
	return out
}

// minDepth is the tighter of two depth bounds, -1 meaning unbounded.
func minDepth(a, b int) int {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	}
	return min(a, b)
}

func positiveOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// Truncate implements jsonrpc.Truncatable: the paths are cut to the
// longest prefix that fits max bytes.
func (r *GlobResult) Truncate(max int) any {
	n := fitPrefix(len(r.Paths), max, func(n int) any {
		return &GlobResult{Paths: r.Paths[:n], Truncated: true}
	})
	return &GlobResult{Paths: r.Paths[:n], Truncated: true}
}

// fitPrefix is the largest n ≤ total for which build(n) marshals to at
// most max bytes (0 if none does). Sizes grow with n, so it bisects.
func fitPrefix(total, max int, build func(n int) any) int {
	fits := func(n int) bool {
		b, err := json.Marshal(build(n))
		return err == nil && len(b) <= max
	}
	lo, hi := 0, total // fits(lo) is assumed; the answer is in [lo, hi]
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}
