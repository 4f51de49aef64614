package enforce

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gobwas/glob"
)

// Errors of memory path canonicalisation. A path that fails here is denied
// as a scope violation before any glob sees it.
var (
	ErrPathEscapes  = errors.New("path escapes above the memory root")
	ErrPathNUL      = errors.New("path contains NUL")
	ErrPathEncoded  = errors.New("path contains an encoded dot, separator or NUL")
	ErrPathControl  = errors.New("path contains a control character or backslash")
	ErrPathEmpty    = errors.New("path is empty")
	ErrPathTooLong  = errors.New("path is longer than 4096 bytes")
	maxMemoryPath   = 4096
	encodedSneakers = []string{"%2e", "%2f", "%5c", "%00"}
)

// CanonicalMemoryPath canonicalises a memory path lexically: leading '/',
// empty and '.' segments go, '..' pops a segment, and climbing above the
// root is refused rather than clamped, so "a/../../b" is an attack, not
// "b". An already canonical path is returned as is, without allocating.
func CanonicalMemoryPath(p string) (string, error) {
	if err := memoryPathChars(p); err != nil {
		return "", err
	}
	if isCanonical(p) {
		return p, nil
	}
	parts := make([]string, 0, strings.Count(p, "/")+1)
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			if len(parts) == 0 {
				return "", ErrPathEscapes
			}
			parts = parts[:len(parts)-1]
		default:
			parts = append(parts, seg)
		}
	}
	if len(parts) == 0 {
		return "", ErrPathEmpty
	}
	return strings.Join(parts, "/"), nil
}

// memoryPathChars refuses bytes that some layer below might read as
// structure: NUL, control characters, backslashes, and percent-encoded dots
// or separators (memory paths are not URLs, but a store or an exporter
// might decode them one day; refusing is cheaper than auditing that).
func memoryPathChars(p string) error {
	if p == "" {
		return ErrPathEmpty
	}
	if len(p) > maxMemoryPath {
		return ErrPathTooLong
	}
	pct := false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == 0:
			return ErrPathNUL
		case c < 0x20 || c == 0x7f || c == '\\':
			return ErrPathControl
		case c == '%':
			pct = true
		}
	}
	if pct {
		lower := strings.ToLower(p)
		for _, s := range encodedSneakers {
			if strings.Contains(lower, s) {
				return ErrPathEncoded
			}
		}
	}
	return nil
}

// isCanonical reports whether p has no leading or trailing '/', no empty,
// '.' or '..' segment.
func isCanonical(p string) bool {
	start := 0
	for i := 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		switch p[start:i] {
		case "", ".", "..":
			return false
		}
		start = i + 1
	}
	return true
}

// globSet is a list of compiled globs; it matches if any does. A loop over
// a handful of globs beats a combined automaton at this size, and does not
// allocate.
type globSet struct {
	src []string
	g   []*glob.Pattern
}

// compileGlobs compiles path globs in globstar mode, so "a/**/b" also
// matches "a/b" as in gitignore and bash: what authors expect of "**".
func compileGlobs(field string, patterns []string, sep rune) (globSet, error) {
	s := globSet{src: patterns, g: make([]*glob.Pattern, 0, len(patterns))}
	c := glob.Compiler{Separators: []rune{sep}, Globstar: true}
	for _, p := range patterns {
		g, err := c.Compile(p)
		if err != nil {
			return globSet{}, fmt.Errorf("%s: %q: %v: %w", field, p, err, ErrInvalidPolicy)
		}
		s.g = append(s.g, g)
	}
	return s, nil
}

func (s globSet) match(v string) bool {
	for _, g := range s.g {
		if g.Match(v) {
			return true
		}
	}
	return false
}
