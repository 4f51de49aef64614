package enforce

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// BashRuleKind is the shape of a Bash rule from allowed_tools.
type BashRuleKind int

// The kinds start at one so that a zero BashRule allows nothing: a rule
// that was never parsed must not be the broadest grant there is.
const (
	// BashAny is plain `Bash` or `Bash(*)`: any command.
	BashAny BashRuleKind = iota + 1
	// BashExact is `Bash(git status)`: that command string, verbatim.
	BashExact
	// BashPrefix is `Bash(npm test:*)`: the prefix, alone or followed by
	// whitespace and more words.
	BashPrefix
)

// BashRule is one parsed Bash declaration. Text is the exact command or the
// prefix, verbatim: `${CLAUDE_PLUGIN_ROOT}/x.sh` stays as written, and only
// ever matches that literal text.
type BashRule struct {
	Kind BashRuleKind
	Text string
}

// ParseBashRule parses the specifier of a Bash declaration; hasSpec is false
// for plain `Bash`. Surrounding blanks are trimmed, as are blanks before
// `:*`; everything else is kept verbatim. A `*` anywhere but the whole
// specifier or the `:*` suffix is literal, so `Bash(npm run *)` is an exact
// rule: it under-grants, which fails loudly, rather than guess.
func ParseBashRule(spec string, hasSpec bool) (BashRule, error) {
	if !hasSpec {
		return BashRule{Kind: BashAny}, nil
	}
	if why := controlChar(spec, false); why != "" {
		return BashRule{}, fmt.Errorf("%w: Bash(%q): %s", ErrInvalidPolicy, spec, why)
	}
	s := strings.Trim(spec, " \t")
	switch {
	case s == "":
		return BashRule{}, fmt.Errorf("%w: Bash(): empty specifier (write Bash for any command)", ErrInvalidPolicy)
	case s == "*":
		return BashRule{Kind: BashAny}, nil
	case strings.HasSuffix(s, ":*"):
		p := strings.TrimRight(s[:len(s)-2], " \t")
		if p == "" {
			return BashRule{}, fmt.Errorf("%w: Bash(%s): empty prefix before :*", ErrInvalidPolicy, s)
		}
		return BashRule{Kind: BashPrefix, Text: p}, nil
	}
	return BashRule{Kind: BashExact, Text: s}, nil
}

// controlChar names the first control character of s other than a tab (and
// a newline when newlineOK), or returns "". A rule or command never
// legitimately holds one, and bash and the parser disagree on some: the
// parser takes a CR for a blank, bash for part of a word.
func controlChar(s string, newlineOK bool) string {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == 0:
			return "contains a NUL byte"
		case c == '\n' && newlineOK:
		case c == '\n':
			return "contains a newline"
		case c == '\r':
			return "contains a carriage return"
		case c < ' ' && c != '\t' || c == 0x7f:
			return fmt.Sprintf("contains control character %#02x", c)
		}
	}
	return ""
}

// String returns the rule in its declaration form.
func (r BashRule) String() string {
	switch r.Kind {
	case BashAny:
		return "Bash"
	case BashExact:
		return "Bash(" + r.Text + ")"
	case BashPrefix:
		return "Bash(" + r.Text + ":*)"
	}
	return fmt.Sprintf("Bash(<invalid kind %d>)", int(r.Kind))
}

// Broad reports whether the rule allows more than one command line, which
// validate reports as a warning.
func (r BashRule) Broad() bool {
	return r.Kind == BashAny || r.Kind == BashPrefix
}

// BashPolicy decides whether a command may run. It is immutable and safe
// for concurrent use. A nil *BashPolicy denies everything.
type BashPolicy struct {
	any      bool
	exact    []string
	prefixes []string
}

// NewBashPolicy compiles rules. A rule of an unknown kind (the zero rule),
// or an exact or prefix rule with empty text, allows nothing: only
// ParseBashRule makes rules, and it never makes those.
func NewBashPolicy(rules []BashRule) *BashPolicy {
	p := &BashPolicy{}
	for _, r := range rules {
		switch {
		case r.Kind == BashAny:
			p.any = true
		case r.Text == "":
		case r.Kind == BashExact:
			p.exact = append(p.exact, r.Text)
		case r.Kind == BashPrefix:
			p.prefixes = append(p.prefixes, r.Text)
		}
	}
	return p
}

// maxParsedCommand bounds the text handed to the parser: parse time grows
// with nesting depth, and no command needing more is covered by a part
// rule (an exact or Any rule still allows it).
const maxParsedCommand = 64 << 10

// Check returns nil when command may run, or a *Denial with reason
// command_not_allowed whose detail names the first part that is not allowed.
//
// A command is allowed when a BashAny rule exists; or when an exact rule
// equals the whole command with surrounding blanks trimmed; or when it
// parses as bash and every simple command in it, including those inside
// substitutions, is allowed on its own by an exact or prefix rule, and it
// uses nothing that only an exact rule for the whole string may grant
// (see bashWalker.visit). Check assumes the command is run by bash.
func (p *BashPolicy) Check(command string) error {
	if p != nil && p.any {
		// The command runs inside the sandbox whatever it is; plain Bash
		// is a grant of any command, parseable or not.
		return nil
	}
	if p == nil || len(p.exact)+len(p.prefixes) == 0 {
		return denyBash("no Bash rule is declared")
	}
	whole := strings.Trim(command, " \t\n")
	for _, e := range p.exact {
		if whole == e {
			return nil
		}
	}
	switch {
	case whole == "":
		return denyBash("empty command")
	case len(command) > maxParsedCommand:
		return denyBash("command of %d bytes is longer than %d; only an exact rule can allow it", len(command), maxParsedCommand)
	}
	if why := controlChar(command, true); why != "" {
		return denyBash("command %s", why)
	}
	if !utf8.ValidString(command) {
		// Bytes the parser decodes one way and bash, in some locale,
		// another; an agent's command is text.
		return denyBash("command is not valid UTF-8")
	}
	return p.checkParsed(command)
}

// parsers are reused: a parser is sizeable and Check is on the hot path.
var parsers = sync.Pool{New: func() any {
	return &pooledParser{p: syntax.NewParser(syntax.Variant(syntax.LangBash))}
}}

type pooledParser struct {
	p *syntax.Parser
	r strings.Reader
}

func (p *BashPolicy) checkParsed(command string) error {
	pp := parsers.Get().(*pooledParser)
	pp.r.Reset(command)
	f, err := pp.p.Parse(&pp.r, "")
	pp.r.Reset("")
	parsers.Put(pp)
	if err != nil {
		// A command the parser cannot read is one we cannot vouch for.
		return denyBash("command does not parse as bash: %v", err)
	}
	w := bashWalker{policy: p, src: command}
	syntax.Walk(f, w.visit)
	switch {
	case w.detail != "":
		return denyBash("%s", w.detail)
	case w.calls == 0:
		return denyBash("command runs nothing")
	}
	return nil
}

func denyBash(format string, args ...any) *Denial {
	return Deny(ReasonCommandNotAllowed, "Bash", format, args...)
}

// allowsPart reports whether one simple command's source text is allowed
// by an exact rule or, at a word boundary, by a prefix rule.
func (p *BashPolicy) allowsPart(text string) bool {
	for _, e := range p.exact {
		if text == e {
			return true
		}
	}
	for _, pre := range p.prefixes {
		if strings.HasPrefix(text, pre) &&
			(len(text) == len(pre) || text[len(pre)] == ' ' || text[len(pre)] == '\t') {
			return true
		}
	}
	return false
}

// bashWalker visits a parsed command and stops at the first part that is
// not allowed, leaving its description in detail.
type bashWalker struct {
	policy *BashPolicy
	src    string
	calls  int
	detail string
}

// visit is the syntax.Walk callback. Node types are allowlisted: one this
// code does not know (a future parser version's) is denied, not skipped.
func (w *bashWalker) visit(n syntax.Node) bool {
	if w.detail != "" {
		return false
	}
	if n == nil {
		return true
	}
	switch n := n.(type) {
	case *syntax.File, *syntax.Comment, *syntax.Word, *syntax.Lit,
		*syntax.SglQuoted, *syntax.DblQuoted, *syntax.ExtGlob:
		return true
	// Containers run nothing themselves; what they hold is checked.
	case *syntax.BinaryCmd, *syntax.Subshell, *syntax.Block, *syntax.IfClause,
		*syntax.WhileClause, *syntax.CaseClause, *syntax.CaseItem, *syntax.ProcSubst:
		return true
	case *syntax.Stmt:
		switch {
		case n.Cmd == nil:
			return w.deny(n, "a redirection without a command")
		case n.Coprocess || n.Disown:
			return w.deny(n, "a coprocess or disowned job")
		}
		return true
	case *syntax.CallExpr:
		return w.call(n)
	case *syntax.Redirect:
		if !allowedRedirect(n) {
			// A redirection opens a file: only an exact rule may grant it.
			return w.deny(n, "a redirection other than to /dev/null or between descriptors")
		}
		return false
	case *syntax.CmdSubst:
		if n.Backquotes {
			// The parser's offsets inside nested backquotes do not match
			// the source, so their text cannot be compared with a rule.
			return w.deny(n, "a backquote substitution (write $(...))")
		}
		if n.TempFile || n.ReplyVar {
			return w.deny(n, "a ${ ...; } substitution")
		}
		return true
	case *syntax.ParamExp:
		if why := paramProblem(n); why != "" {
			return w.deny(n, why)
		}
		return true
	}
	return w.deny(n, constructName(n))
}

// call checks one simple command against the rules.
func (w *bashWalker) call(n *syntax.CallExpr) bool {
	if len(n.Assigns) > 0 {
		// FOO=1 cmd changes what cmd does (PATH, HOME, LD_PRELOAD); a bare
		// FOO=1 changes what later parts do.
		return w.deny(n, "a variable assignment")
	}
	if !w.policy.allowsPart(w.text(n)) {
		w.detail = fmt.Sprintf("%s is not allowed by any Bash rule", quotePart(w.text(n)))
		return false
	}
	w.calls++
	// Descend: substitutions in the words are commands of their own.
	return true
}

func (w *bashWalker) deny(n syntax.Node, what string) bool {
	w.detail = fmt.Sprintf("%s: %s needs an exact rule covering the whole command", quotePart(w.text(n)), what)
	return false
}

// text is the verbatim source of n, or "" (which no rule equals) when the
// parser's offsets are out of range.
func (w *bashWalker) text(n syntax.Node) string {
	s, e := n.Pos().Offset(), n.End().Offset()
	if s > e || e > uint(len(w.src)) {
		return ""
	}
	return w.src[s:e]
}

// quotePart quotes a part for a denial detail, cut to a readable length.
func quotePart(s string) string {
	const max = 120
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}

// allowedRedirect admits the redirections that neither read nor write a
// file: duplicating or closing a descriptor, and /dev/null.
func allowedRedirect(r *syntax.Redirect) bool {
	if r.N != nil && !isDigits(r.N.Value) {
		return false // {var}>&1 assigns a variable
	}
	if r.Word == nil {
		return false
	}
	target := r.Word.Lit()
	switch r.Op {
	case syntax.DplOut, syntax.DplIn:
		// >&word with a non-number word redirects to a file named word.
		return target == "-" || isDigits(target)
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll, syntax.RdrIn:
		return target == "/dev/null"
	}
	return false // here-documents, here-strings, <>
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// paramProblem returns why a parameter expansion is refused, or "". Bash
// re-evaluates some expansions as code: arithmetic in subscripts and
// slices expands the variable's value again (x='a[$(id)]'; ${b[x]} runs
// id), ${!x} and ${x@P} do the same, and $_ or BASH_COMMAND hold text the
// command itself chose. ${x=...} assigns.
func paramProblem(n *syntax.ParamExp) string {
	switch {
	case n.Excl || n.Names != 0:
		return "an indirect expansion"
	case n.Flags != nil || n.Width || n.IsSet || n.NestedParam != nil || len(n.Modifiers) > 0 ||
		n.Split != syntax.OptUnset || n.GlobSubst != syntax.OptUnset || n.RcExpand != syntax.OptUnset:
		return "a non-bash expansion"
	case n.Index != nil && !literalIndex(n.Index):
		return "a computed array subscript"
	case n.Slice != nil && (!literalNumber(n.Slice.Offset) || n.Slice.Length != nil && !literalNumber(n.Slice.Length)):
		return "a computed substring"
	case n.Exp == nil:
		return ""
	}
	switch n.Exp.Op {
	case syntax.AssignUnset, syntax.AssignUnsetOrNull:
		return "an assigning expansion"
	case syntax.OtherParamOps:
		switch n.Exp.Word.Lit() {
		case "Q", "E", "U", "u", "L", "a", "A", "K", "k":
			return ""
		}
		return "a prompt or unknown @ expansion"
	case syntax.MatchEmpty, syntax.ArrayExclude, syntax.ArrayIntersect:
		return "a non-bash expansion"
	}
	return ""
}

func literalNumber(x syntax.ArithmExpr) bool {
	w, ok := x.(*syntax.Word)
	return ok && isDigits(w.Lit())
}

func literalIndex(x syntax.ArithmExpr) bool {
	w, ok := x.(*syntax.Word)
	if !ok {
		return false
	}
	l := w.Lit()
	return l == "@" || l == "*" || isDigits(l)
}

// constructName names a construct that only an exact rule for the whole
// command may grant. Each one can change what an allowed command means:
// loops and declarations bind variables (for PATH in /tmp; do git status;
// done), functions shadow commands, arithmetic and [[ ]] evaluate operand
// text as code, time and coproc wrap a command.
func constructName(n syntax.Node) string {
	switch n := n.(type) {
	case *syntax.ForClause:
		if n.Select {
			return "a select loop"
		}
		return "a for loop"
	case *syntax.FuncDecl:
		return "a function definition"
	case *syntax.DeclClause:
		return "a declaration (" + n.Variant.Value + ")"
	case *syntax.LetClause:
		return "a let command"
	case *syntax.ArithmCmd, *syntax.ArithmExp, *syntax.BinaryArithm, *syntax.UnaryArithm,
		*syntax.ParenArithm, *syntax.FlagsArithm:
		return "arithmetic"
	case *syntax.TestClause, *syntax.BinaryTest, *syntax.UnaryTest, *syntax.ParenTest:
		return "a [[ ]] test"
	case *syntax.TimeClause:
		return "time"
	case *syntax.CoprocClause:
		return "coproc"
	case *syntax.Assign, *syntax.ArrayExpr, *syntax.ArrayElem:
		return "a variable assignment"
	}
	return fmt.Sprintf("a shell construct (%T)", n)
}
