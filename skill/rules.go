package skill

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/gobwas/glob"
	"go.yaml.in/yaml/v3"
)

// toolRules reads allowed-tools in any shape found in the wild: a list, a
// comma- or space-separated string, or a list whose items are such strings.
func (p *parser) toolRules(key string, v *yaml.Node) []ToolRule {
	items, lines := p.stringList(key, v)
	var out []ToolRule
	for i, item := range items {
		rules, err := SplitToolRules(item)
		if err != nil {
			p.diags = append(p.diags, Diagnostic{File: p.file, Line: lines[i], Field: key, Message: err.Error(), Severity: SeverityError})
			continue
		}
		for _, r := range rules {
			r.Line = lines[i]
			out = append(out, r)
		}
	}
	return out
}

var toolNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*$`)

// SplitToolRules splits one string of rules on commas and white space that
// stand outside parentheses, so "Bash(git add:*), Read" is two rules and the
// space inside the parentheses stays part of the specifier.
func SplitToolRules(s string) ([]ToolRule, error) {
	var out []ToolRule
	depth, start := 0, -1
	flush := func(end int) error {
		if start < 0 {
			return nil
		}
		r, err := parseToolRule(s[start:end])
		if err != nil {
			return err
		}
		out = append(out, r)
		start = -1
		return nil
	}
	for i, c := range s {
		switch {
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced ')' in %q", s)
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			if err := flush(i); err != nil {
				return nil, err
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unclosed '(' in %q", s)
	}
	if err := flush(len(s)); err != nil {
		return nil, err
	}
	return out, nil
}

func parseToolRule(tok string) (ToolRule, error) {
	name, spec, hasSpec := tok, "", false
	if i := strings.IndexByte(tok, '('); i >= 0 {
		if !strings.HasSuffix(tok, ")") {
			return ToolRule{}, fmt.Errorf("%q: text after the closing ')'", tok)
		}
		name, spec, hasSpec = tok[:i], tok[i+1:len(tok)-1], true
	}
	if !toolNameRE.MatchString(name) {
		return ToolRule{}, fmt.Errorf("%q is not a tool name", name)
	}
	if strings.ContainsRune(spec, 0) {
		return ToolRule{}, fmt.Errorf("%q: NUL in the rule", tok)
	}
	return ToolRule{Tool: name, Specifier: spec, HasSpec: hasSpec}, nil
}

// checkFileGlob accepts absolute, already-clean path globs: the enforcer
// compares them with resolved real paths, so '..' or '//' could never match
// and would only hide what the author meant.
func checkFileGlob(s string) error {
	if !strings.HasPrefix(s, "/") {
		return fmt.Errorf("%q must be an absolute path glob such as /data/**", s)
	}
	if err := checkSegments(s[1:]); err != nil {
		return fmt.Errorf("%q: %w", s, err)
	}
	if _, err := glob.Compile(s, '/'); err != nil {
		return fmt.Errorf("%q is not a valid glob: %v", s, err)
	}
	return nil
}

// checkMemoryGlob accepts relative, clean memory path globs.
func checkMemoryGlob(s string) error {
	if s == "" || strings.HasPrefix(s, "/") {
		return fmt.Errorf("%q must be a relative memory path glob such as memories/projects/**", s)
	}
	if err := checkSegments(s); err != nil {
		return fmt.Errorf("%q: %w", s, err)
	}
	if _, err := glob.Compile(s, '/'); err != nil {
		return fmt.Errorf("%q is not a valid glob: %v", s, err)
	}
	return nil
}

func checkSegments(s string) error {
	if strings.ContainsRune(s, 0) {
		return errors.New("NUL in path")
	}
	if s == "" {
		return nil
	}
	for _, seg := range strings.Split(s, "/") {
		switch seg {
		case "":
			return errors.New("empty path segment")
		case ".", "..":
			return fmt.Errorf("%q segment; write the path it means", seg)
		}
	}
	return nil
}

var sizeRE = regexp.MustCompile(`^\s*(\d+)\s*([KMGT]i?B?|B)?\s*$`)

// ParseSize reads 256MiB, 1GiB, 512M (binary, as Docker reads it), 500MB
// (decimal) or a plain byte count.
func ParseSize(s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a size such as 256MiB or 1GiB", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	unit := m[2]
	base := int64(1024)
	if strings.HasSuffix(unit, "B") && !strings.HasSuffix(unit, "iB") && unit != "B" {
		base = 1000
	}
	mult := int64(1)
	if unit != "" && unit != "B" {
		mult = map[byte]int64{'K': base, 'M': base * base, 'G': base * base * base, 'T': base * base * base * base}[unit[0]]
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * mult, nil
}

// FormatSize renders bytes in the largest binary unit that divides them.
func FormatSize(n int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.m && n%u.m == 0 {
			return strconv.FormatInt(n/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

var substitutionRE = regexp.MustCompile("!`([^`\n]+)`")

// findSubstitutions lists !`cmd` substitutions in the body. Like the field
// report in seed 003, a match never spans lines, so prose is not mistaken
// for a command.
func findSubstitutions(body string, firstLine int) []Substitution {
	var out []Substitution
	for i, line := range strings.Split(body, "\n") {
		for _, m := range substitutionRE.FindAllStringSubmatch(line, -1) {
			out = append(out, Substitution{Command: m[1], Line: firstLine + i})
		}
	}
	return out
}
