package enforce

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// MatchesAny reports whether any part of command matches one of p's rules:
// the reading of disallowed_tools Bash(…) rules, where one forbidden part
// is enough to refuse the whole command. A command that does not parse
// counts as matching, since nothing in it can be vouched for.
func (p *BashPolicy) MatchesAny(command string) bool {
	if p == nil {
		return false
	}
	if p.any {
		return true
	}
	whole := strings.Trim(command, " \t\n")
	for _, e := range p.exact {
		if whole == e {
			return true
		}
	}
	pp := parsers.Get().(*pooledParser)
	pp.r.Reset(command)
	f, err := pp.p.Parse(&pp.r, "")
	pp.r.Reset("")
	parsers.Put(pp)
	if err != nil {
		return true
	}
	matched := false
	syntax.Walk(f, func(n syntax.Node) bool {
		if matched {
			return false
		}
		if c, ok := n.(*syntax.CallExpr); ok {
			s, e := c.Pos().Offset(), c.End().Offset()
			if s <= e && e <= uint(len(command)) {
				matched = p.allowsPart(command[s:e]) || p.allowsPart(callText(c, command))
			}
		}
		return true
	})
	return matched
}

// callText is a simple command's text without its leading assignments, so
// a deny rule for "rm" also catches "X=1 rm -rf /".
func callText(c *syntax.CallExpr, src string) string {
	if len(c.Args) == 0 {
		return ""
	}
	s, e := c.Args[0].Pos().Offset(), c.End().Offset()
	if s > e || e > uint(len(src)) {
		return ""
	}
	return src[s:e]
}
