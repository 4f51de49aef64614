package enforce

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillrun/skillrun/skill"
)

var linuxHost = Host{OS: "linux", Namespaces: []string{"pid", "net", "mount", "ipc", "uts", "cgroup", "user"},
	UserNamespaces: true, Seccomp: true, LandlockABI: 7, CgroupVersion: 2, Isolation: IsolationContainer}

// dataDir makes a tree of files for glob expansion and returns its real path.
func dataDir(t *testing.T, files ...string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func plan(t *testing.T, fm string, opts PlanOptions) (Plan, []skill.Diagnostic, error) {
	t.Helper()
	snap := snapshotOf(t, fm)
	decl, _, err := Declare(snap.Manifest(), snap.File(), natives)
	if err != nil {
		t.Fatalf("Declare: %v", err)
	}
	return MakePlan(snap, decl, linuxHost, opts)
}

func declaredRules(p Plan) []FSRule {
	var out []FSRule
	for _, r := range p.Landlock.Rules {
		if r.Origin != "system" && r.Origin != "skill" && r.Origin != "shim" {
			out = append(out, r)
		}
	}
	return out
}

func TestPlanExpandsGlobsToFiles(t *testing.T) {
	dir := dataDir(t, "a.csv", "b.csv", "c.txt", "sub/d.csv")
	p, _, err := plan(t, fmt.Sprintf("allowed-tools: Read\nx-allowed-files: [%q]", dir+"/*.csv"), PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []FSRule{
		{Path: dir + "/a.csv", Read: true, Origin: dir + "/*.csv"},
		{Path: dir + "/b.csv", Read: true, Origin: dir + "/*.csv"},
	}
	if got := declaredRules(p); !slices.Equal(got, want) {
		t.Fatalf("rules = %+v\nwant %+v", got, want)
	}
	if !slices.Contains(p.Mounts, Mount{Kind: "bind", Source: dir, Target: dir, ReadOnly: true, Origin: dir + "/*.csv"}) {
		t.Fatalf("no read-only mount of the root: %+v", p.Mounts)
	}
}

func TestPlanFileGrantShapes(t *testing.T) {
	dir := dataDir(t, "x.txt", "deep/y.txt")
	tests := []struct {
		name, fm string
		want     []FSRule
		wantWarn string
		mountRW  bool
	}{
		{"subtree", fmt.Sprintf("allowed-tools: Read\nx-allowed-files: [%q]", dir+"/**"),
			[]FSRule{{Path: dir, Dir: true, Read: true, Origin: dir + "/**"}}, "", false},
		{"literal file", fmt.Sprintf("allowed-tools: Read\nx-allowed-files: [%q]", dir+"/x.txt"),
			[]FSRule{{Path: dir + "/x.txt", Read: true, Origin: dir + "/x.txt"}}, "", false},
		{"writable", fmt.Sprintf("allowed-tools: Read, Write\nx-allowed-files: [%q]", dir+"/**"),
			[]FSRule{{Path: dir, Dir: true, Read: true, Write: true, Origin: dir + "/**"}}, "", true},
		{"globstar", fmt.Sprintf("allowed-tools: Edit\nx-allowed-files: [%q]", dir+"/**/*.txt"),
			[]FSRule{{Path: dir + "/deep/y.txt", Read: true, Write: true, Origin: dir + "/**/*.txt"}, {Path: dir + "/x.txt", Read: true, Write: true, Origin: dir + "/**/*.txt"}}, "", true},
		{"literal dir", fmt.Sprintf("allowed-tools: Read\nx-allowed-files: [%q]", dir+"/deep"),
			nil, "is a directory", false},
		{"missing", "allowed-tools: Read\nx-allowed-files: [/nonexistent/skillrun/*.csv]",
			nil, "matches nothing on this host now", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, warns, err := plan(t, tt.fm, PlanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := declaredRules(p); !slices.Equal(got, tt.want) {
				t.Fatalf("rules = %+v\nwant %+v", got, tt.want)
			}
			if tt.wantWarn != "" && !slices.ContainsFunc(warns, func(d skill.Diagnostic) bool { return strings.Contains(d.Message, tt.wantWarn) }) {
				t.Fatalf("warnings %v lack %q", warns, tt.wantWarn)
			}
			for _, m := range p.Mounts {
				if m.Origin != "system" && m.Origin != "skill" && m.Origin != "broker" && m.Origin != "shim" && m.ReadOnly == tt.mountRW {
					t.Fatalf("mount %+v: want read-only=%t", m, !tt.mountRW)
				}
			}
		})
	}
}

func TestPlanRefusesWhatItCannotExpress(t *testing.T) {
	many := make([]string, maxExpandedFiles+1)
	for i := range many {
		many[i] = fmt.Sprintf("f%04d.csv", i)
	}
	dir := dataDir(t, many...)
	tests := []struct{ name, glob, want string }{
		{"too many files", dir + "/*.csv", "names more than 1024 files"},
		{"whole host", "/**", `would cover the sandbox's own /proc`},
		{"proc", "/proc/**", `would cover the sandbox's own /proc`},
		{"socket dir", "/run/**", `would cover the sandbox's own /run/skillrun`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := plan(t, fmt.Sprintf("allowed-tools: Read\nx-allowed-files: [%q]", tt.glob), PlanOptions{})
			var pe *PolicyError
			if !errors.As(err, &pe) || !strings.Contains(pe.Diagnostics[0].Message, tt.want) || pe.Diagnostics[0].Line != 5 {
				t.Fatalf("err = %v, want a policy error at line 5 containing %q", err, tt.want)
			}
		})
	}
}

func TestPlanDropsScratchTmpUnderDeclaredTmp(t *testing.T) {
	p, warns, err := plan(t, "allowed-tools: Read\nx-allowed-files: [\"/tmp/**\"]", PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Landlock.Rules {
		if r.Path == "/tmp" && r.Write {
			t.Fatalf("a writable /tmp rule would make the declared read-only /tmp writable: %+v", r)
		}
	}
	if !slices.ContainsFunc(warns, func(d skill.Diagnostic) bool { return strings.Contains(d.Message, "not writable in this invocation") }) {
		t.Fatalf("no warning: %v", warns)
	}
}

func TestPlanLimits(t *testing.T) {
	p, warns, err := plan(t, "x-max-memory: 64MiB\nx-max-address-space: 1GiB\nx-max-pids: 4096\neffort_minutes: 2", PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := p.Limits
	if l.MemoryBytes != 64<<20 || l.AddressSpace != 1<<30 || l.PidsMax != 1024 || l.CPUSeconds != 120 || l.NProc != 8 || l.CoreBytes != 0 {
		t.Fatalf("limits %+v", l)
	}
	if p.Budget != 2*time.Minute || p.TermAfter != 108*time.Second {
		t.Fatalf("budget %s term %s", p.Budget, p.TermAfter)
	}
	var msgs []string
	for _, w := range warns {
		msgs = append(msgs, w.String())
	}
	for _, want := range []string{
		"SKILL.md:5: x-max-address-space: raises the default 512MiB to 1GiB",
		"SKILL.md:6: x-max-pids: 4096 is above the operator ceiling 1024; using the ceiling",
	} {
		if !slices.Contains(msgs, want) {
			t.Errorf("warnings %q lack %q", msgs, want)
		}
	}
	p, _, _ = plan(t, "", PlanOptions{Timeout: 3 * time.Second})
	if p.Budget != 3*time.Second || p.TermAfter != 2700*time.Millisecond || p.Limits.CPUSeconds != 3 {
		t.Fatalf("timeout override: %s %s %d", p.Budget, p.TermAfter, p.Limits.CPUSeconds)
	}
}

// TestVerifyCatchesWiderGrants breaks a correct plan one grant at a time:
// each must be refused as a loader defect.
func TestVerifyCatchesWiderGrants(t *testing.T) {
	dir := dataDir(t, "a.csv", "b.txt")
	fm := fmt.Sprintf("allowed-tools: Read, Bash(git status)\nx-allowed-files: [%q]\nx-max-memory: 64MiB", dir+"/*.csv")
	snap := snapshotOf(t, fm)
	decl, _, err := Declare(snap.Manifest(), snap.File(), natives)
	if err != nil {
		t.Fatal(err)
	}
	good, _, err := MakePlan(snap, decl, linuxHost, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	def, ceil := DefaultLimits(), DefaultCeilings()
	if err := Verify(good, snap.Manifest(), decl, def, ceil); err != nil {
		t.Fatalf("good plan refused: %v", err)
	}
	origin := dir + "/*.csv"
	mutations := []struct {
		name string
		edit func(p *Plan)
	}{
		{"glob becomes a directory rule", func(p *Plan) {
			p.Landlock.Rules = append(p.Landlock.Rules, FSRule{Path: dir, Dir: true, Read: true, Origin: origin})
		}},
		{"file outside the glob", func(p *Plan) {
			p.Landlock.Rules = append(p.Landlock.Rules, FSRule{Path: dir + "/b.txt", Read: true, Origin: origin})
		}},
		{"write without Write", func(p *Plan) {
			p.Landlock.Rules = append(p.Landlock.Rules, FSRule{Path: dir + "/a.csv", Read: true, Write: true, Origin: origin})
		}},
		{"exec on data", func(p *Plan) {
			p.Landlock.Rules = append(p.Landlock.Rules, FSRule{Path: dir + "/a.csv", Read: true, Exec: true, Origin: origin})
		}},
		{"undeclared origin", func(p *Plan) {
			p.Landlock.Rules = append(p.Landlock.Rules, FSRule{Path: "/etc/shadow", Read: true, Origin: "/etc/shadow"})
		}},
		{"system write on /usr", func(p *Plan) {
			p.Landlock.Rules = append(p.Landlock.Rules, FSRule{Path: "/usr", Dir: true, Write: true, Origin: "system"})
		}},
		{"system /etc", func(p *Plan) {
			p.Landlock.Rules = append(p.Landlock.Rules, FSRule{Path: "/etc", Dir: true, Read: true, Origin: "system"})
		}},
		{"writable skill folder", func(p *Plan) {
			p.Landlock.Rules = append(p.Landlock.Rules, FSRule{Path: p.SkillDir, Dir: true, Write: true, Origin: "skill"})
		}},
		{"rw mount of data", func(p *Plan) {
			p.Mounts = append(p.Mounts, Mount{Kind: "bind", Source: dir, Target: dir, Origin: origin})
		}},
		{"mount elsewhere", func(p *Plan) {
			p.Mounts = append(p.Mounts, Mount{Kind: "bind", Source: "/", Target: dir, ReadOnly: true, Origin: origin})
		}},
		{"system mount of /etc", func(p *Plan) {
			p.Mounts = append(p.Mounts, Mount{Kind: "bind", Source: "/etc", Target: "/etc", ReadOnly: true, Origin: "system"})
		}},
		{"rw system /usr", func(p *Plan) {
			p.Mounts = append(p.Mounts, Mount{Kind: "bind", Source: "/usr", Target: "/usr", Origin: "system"})
		}},
		{"undeclared tool", func(p *Plan) { p.Declaration.Tools = append(p.Declaration.Tools, "HttpFetch") }},
		{"undeclared bash rule", func(p *Plan) { p.BashRules = append(p.BashRules, "Bash") }},
		{"undeclared domain", func(p *Plan) { p.Declaration.Domains = append(p.Declaration.Domains, "*") }},
		{"file write flag", func(p *Plan) { p.Declaration.FileWrite = true }},
		{"tcp connect", func(p *Plan) { p.Landlock.DenyTCPConnect = false }},
		{"no net namespace", func(p *Plan) {
			p.Namespaces = slices.DeleteFunc(slices.Clone(p.Namespaces), func(s string) bool { return s == "net" })
		}},
		{"capability kept", func(p *Plan) { p.Capabilities = []string{"CAP_SYS_ADMIN"} }},
		{"no_new_privs off", func(p *Plan) { p.NoNewPrivs = false }},
		{"memory above declaration", func(p *Plan) { p.Limits.MemoryBytes = 128 << 20 }},
		{"nproc above default", func(p *Plan) { p.Limits.NProc = 64 }},
		{"core dumps", func(p *Plan) { p.Limits.CoreBytes = 1 << 20 }},
		{"writable broker socket mount", func(p *Plan) { p.Mounts = append(p.Mounts, Mount{Kind: "bind", Target: SocketPath, Origin: "broker"}) }},
		{"writable shim", func(p *Plan) {
			p.Landlock.Rules = append(p.Landlock.Rules, FSRule{Path: ShimPath, Write: true, Origin: "shim"})
		}},
		{"shim origin elsewhere", func(p *Plan) {
			p.Mounts = append(p.Mounts, Mount{Kind: "bind", Source: "/etc", Target: "/etc", ReadOnly: true, Origin: "shim"})
		}},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			p := good
			p.Landlock.Rules = slices.Clone(good.Landlock.Rules)
			p.Mounts = slices.Clone(good.Mounts)
			p.Declaration.Tools = slices.Clone(good.Declaration.Tools)
			p.Declaration.Domains = slices.Clone(good.Declaration.Domains)
			m.edit(&p)
			err := Verify(p, snap.Manifest(), decl, def, ceil)
			var ld *LoaderDefect
			if !errors.As(err, &ld) || !errors.Is(err, ErrLoaderDefect) {
				t.Fatalf("err = %v, want a loader defect", err)
			}
		})
	}
}
