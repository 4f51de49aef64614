package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
)

const grepName = "Grep"

// Grep's bounds.
const (
	// DefaultGrepMaxResults is max_results when the skill gives none.
	DefaultGrepMaxResults = 100
	// MaxGrepResults caps max_results; a larger one is lowered to it.
	MaxGrepResults = 10_000
	// DefaultGrepFileMax is the size over which a file is skipped.
	DefaultGrepFileMax = 8 << 20
	// grepLineMax caps the text of one match, cut at a rune boundary.
	grepLineMax = 1 << 10
	// binarySniff is how much of a file is looked at for a NUL byte: a
	// file with one there is binary and skipped.
	binarySniff = 8 << 10
)

// Grep is the native Grep tool (DESIGN §6): the lines matching an RE2
// expression in the allowed files at or under path.
//
// Prepare resolves path and refuses it (file_violation) unless its real
// path is allowed or lies under a root of x-allowed-files
// (enforce.CheckFileTree). Invoke walks from there following no symlink
// (as Glob does) and searches every regular file whose real path passes
// x-allowed-files, opening each relative to its directory's descriptor
// with O_NOFOLLOW. Symlinks are skipped, never followed: a file is searched
// under its real path or not at all. Binary files (a NUL in the first
// 8 KiB) and files over FileMax are skipped.
//
// glob, if given, must match a file's full path; a glob with no '/' (such
// as "*.go") matches the name in any directory, as "**/*.go" would.
//
// Grep holds the enforcer it filters with, as Glob does.
type Grep struct {
	e *enforce.Enforcer
	// MaxVisits bounds the entries a call looks at (DefaultMaxVisits);
	// FileMax the size of a file searched (DefaultGrepFileMax).
	MaxVisits int
	FileMax   int64
}

// NewGrep is the Grep tool filtering with e, with the default bounds.
func NewGrep(e *enforce.Enforcer) *Grep { return &Grep{e: e} }

// GrepMatch is one matching line; Line counts from 1.
type GrepMatch struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// GrepResult is Grep's result, in path order, then line order.
type GrepResult struct {
	Matches   []GrepMatch `json:"matches"`
	Truncated bool        `json:"truncated,omitempty"`
}

type grepArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob,omitempty"`
	MaxResults *int   `json:"max_results,omitempty"`
}

// grepQuery is grepArgs compiled.
type grepQuery struct {
	re     *regexp.Regexp
	prefix []byte // every match begins with it (may be empty)
	glob   fileMatcher
	limit  int
}

var grepSpec = sync.OnceValue(func() Spec { return fileToolSpec(grepName) })

// Spec is Grep's entry of NativeSpecs.
func (*Grep) Spec() Spec { return grepSpec() }

// Prepare checks args and puts the real path in place of path.
func (g *Grep) Prepare(args json.RawMessage, e *enforce.Enforcer) (json.RawMessage, error) {
	if e == nil || e != g.e {
		return nil, ErrEnforcerMismatch
	}
	a, q, err := decodeGrepArgs(args)
	if err != nil {
		return nil, err
	}
	if a.Path, err = e.CheckFileTree(grepName, a.Path); err != nil {
		return nil, err
	}
	a.MaxResults = &q.limit
	return json.Marshal(a)
}

func decodeGrepArgs(args json.RawMessage) (grepArgs, *grepQuery, error) {
	var a grepArgs
	if err := jsonrpc.DecodeParams(args, &a); err != nil {
		return a, nil, err
	}
	q := &grepQuery{limit: DefaultGrepMaxResults}
	switch {
	case a.Path == "":
		return a, nil, &jsonrpc.ParamsError{Field: "path", Detail: "required"}
	case a.MaxResults != nil && *a.MaxResults < 1:
		return a, nil, &jsonrpc.ParamsError{Field: "max_results", Detail: "must be ≥ 1"}
	case a.MaxResults != nil:
		q.limit = min(*a.MaxResults, MaxGrepResults)
	}
	var err error
	if q.re, err = regexp.Compile(a.Pattern); err != nil {
		return a, nil, &jsonrpc.ParamsError{Field: "pattern", Detail: "not a valid RE2 expression"}
	}
	prefix, _ := q.re.LiteralPrefix()
	q.prefix = []byte(prefix)
	switch {
	case a.Glob == "":
	case !strings.Contains(a.Glob, "/"):
		if q.glob, err = enforce.CompileFileGlob("**/" + a.Glob); err != nil {
			return a, nil, &jsonrpc.ParamsError{Field: "glob", Detail: "not a valid glob"}
		}
	default:
		if q.glob, err = compilePathGlob("glob", a.Glob); err != nil {
			return a, nil, err
		}
	}
	return a, q, nil
}

// Invoke searches the prepared path.
func (g *Grep) Invoke(ctx context.Context, call Call) (any, error) {
	if g.e == nil {
		return nil, ErrEnforcerMismatch
	}
	a, q, err := decodeGrepArgs(call.Args)
	if err != nil {
		return nil, err
	}
	res := &GrepResult{Matches: []GrepMatch{}}
	b := &walkBudget{visits: positiveOr(g.MaxVisits, DefaultMaxVisits), maxDepth: g.e.FileDepth()}
	s := &searcher{grepQuery: q, res: res, fileMax: g.fileMax()}
	err = walkTree(ctx, a.Path, b, func(en *fileEntry) error {
		if en.Start && en.Mode == fs.ModeSymlink {
			// Prepare resolved path to a real one: a link there now is a swap.
			return ErrSymlink
		}
		if en.Mode != 0 || q.glob != nil && !q.glob.Match(en.Path) {
			return nil
		}
		if g.e.CheckFilePath(grepName, en.Path) != nil {
			return nil
		}
		return s.search(en)
	})
	if err != nil {
		return nil, useError(grepName, "grep", a.Path, err)
	}
	res.Truncated = res.Truncated || b.truncated
	return res, nil
}

func (g *Grep) fileMax() int64 {
	if g.FileMax > 0 {
		return g.FileMax
	}
	return DefaultGrepFileMax
}

// searcher runs one Grep's query over the files a walk finds.
type searcher struct {
	*grepQuery
	res     *GrepResult
	fileMax int64
	buf     []byte // reused from file to file
}

// search adds en's matching lines, or returns errStopWalk once the result
// is full. A file that cannot be read as a regular file now (removed,
// swapped for a link, grown past the cap) is skipped: it is not there to
// search.
func (s *searcher) search(en *fileEntry) error {
	data, err := en.ReadAll(s.buf[:0], s.fileMax)
	s.buf = data
	if err != nil {
		return nil
	}
	if bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 {
		return nil
	}
	for n, pos := 1, 0; pos < len(data); n++ {
		start := pos
		if len(s.prefix) > 0 {
			// Every match begins with the prefix: jump to the next line
			// holding it, counting the lines skipped.
			i := bytes.Index(data[pos:], s.prefix)
			if i < 0 {
				return nil
			}
			start = pos + bytes.LastIndexByte(data[pos:pos+i], '\n') + 1
			n += bytes.Count(data[pos:start], newline)
		}
		end, next := len(data), len(data)
		if i := bytes.IndexByte(data[start:], '\n'); i >= 0 {
			end, next = start+i, start+i+1
		}
		pos = next
		line := bytes.TrimSuffix(data[start:end], []byte{'\r'})
		if !s.re.Match(line) {
			continue
		}
		if len(s.res.Matches) == s.limit {
			s.res.Truncated = true
			return errStopWalk
		}
		s.res.Matches = append(s.res.Matches, GrepMatch{Path: en.Path, Line: n, Text: lineText(line)})
	}
	return nil
}

var newline = []byte{'\n'}

// lineText is a line as a match reports it: at most grepLineMax bytes,
// cut at a rune boundary.
func lineText(line []byte) string {
	if len(line) <= grepLineMax {
		return string(line)
	}
	cut := grepLineMax
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return string(line[:cut])
}

// Truncate implements jsonrpc.Truncatable: the matches are cut to the
// longest prefix that fits max bytes.
func (r *GrepResult) Truncate(max int) any {
	n := fitPrefix(len(r.Matches), max, func(n int) any {
		return &GrepResult{Matches: r.Matches[:n], Truncated: true}
	})
	return &GrepResult{Matches: r.Matches[:n], Truncated: true}
}
