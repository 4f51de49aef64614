package enforce

import (
	"errors"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzBashCheck checks Check against an oracle built differently: the
// command is parsed again, and every simple command is printed by the
// syntax printer instead of sliced out of the source. More seeds are in
// testdata/fuzz/FuzzBashCheck.
//
// The brief's invariant "allowed under Bash(git status) implies the command
// is git status" cannot hold: `git status; git status` is allowed by
// design (every part is allowed). The oracle asserts what that invariant
// is after: nothing but `git status` can run, with no assignment, no file
// redirection and no construct that could change what it means.
func FuzzBashCheck(f *testing.F) {
	for _, s := range []string{
		"git status", "git status && id", "git status $(id)", "git status `id`",
		"npm test", "npm testx", "npm test; id", "npm test <(id)", "FOO=1 git status",
		"for PATH in /tmp; do git status; done", "git status 2>&1 >/dev/null",
		"case x in x) git status;; esac", "if git status; then npm test; fi",
	} {
		f.Add(s)
	}
	exact := NewBashPolicy([]BashRule{{BashExact, "git status"}})
	prefix := NewBashPolicy([]BashRule{{BashPrefix, "npm test"}})
	f.Fuzz(func(t *testing.T, cmd string) {
		checkOracle(t, exact, cmd, "git status", func(call string) bool { return call == "git status" })
		checkOracle(t, prefix, cmd, "", func(call string) bool {
			rest, ok := strings.CutPrefix(call, "npm test")
			return ok && (rest == "" || rest[0] == ' ')
		})
	})
}

func checkOracle(t *testing.T, p *BashPolicy, cmd, exact string, callOK func(string) bool) {
	t.Helper()
	err := p.Check(cmd)
	if err != nil {
		if d, ok := AsDenial(err); !ok || d.Reason != ReasonCommandNotAllowed || !errors.Is(err, ErrCommandNotAllowed) {
			t.Fatalf("Check(%q) = %v, want a command_not_allowed denial", cmd, err)
		}
		return
	}
	if exact != "" && strings.Trim(cmd, " \t\n") == exact {
		return
	}
	f, perr := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
	if perr != nil {
		t.Fatalf("Check(%q) allowed a command that does not parse: %v", cmd, perr)
	}
	calls := 0
	printer := syntax.NewPrinter()
	print := func(n syntax.Node) string {
		var b strings.Builder
		if err := printer.Print(&b, n); err != nil {
			t.Fatalf("print %T of %q: %v", n, cmd, err)
		}
		return b.String()
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			calls++
			if s := print(n); !callOK(s) {
				t.Fatalf("Check(%q) allowed, but it runs %q", cmd, s)
			}
		case *syntax.Redirect:
			target := print(n.Word)
			fd := n.Op == syntax.DplOut || n.Op == syntax.DplIn
			if fd && strings.Trim(target, "0123456789") != "" && target != "-" ||
				!fd && target != "/dev/null" || n.N != nil && strings.Trim(n.N.Value, "0123456789") != "" {
				t.Fatalf("Check(%q) allowed, but it redirects %q", cmd, print(n))
			}
		case *syntax.CmdSubst:
			if n.Backquotes || n.TempFile || n.ReplyVar {
				t.Fatalf("Check(%q) allowed a backquote or ${ } substitution", cmd)
			}
		case *syntax.ParamExp:
			if n.Excl || n.Index != nil && strings.Trim(print(n.Index), "0123456789@*") != "" ||
				n.Exp != nil && (n.Exp.Op == syntax.AssignUnset || n.Exp.Op == syntax.AssignUnsetOrNull) ||
				n.Exp != nil && n.Exp.Op == syntax.OtherParamOps && n.Exp.Word.Lit() == "P" {
				t.Fatalf("Check(%q) allowed a re-evaluating expansion %q", cmd, print(n))
			}
		case *syntax.Assign, *syntax.ForClause, *syntax.FuncDecl, *syntax.DeclClause, *syntax.LetClause,
			*syntax.ArithmCmd, *syntax.ArithmExp, *syntax.TestClause, *syntax.TimeClause, *syntax.CoprocClause:
			t.Fatalf("Check(%q) allowed a %T", cmd, n)
		}
		return true
	})
	if calls == 0 {
		t.Fatalf("Check(%q) allowed a command that runs nothing", cmd)
	}
}
