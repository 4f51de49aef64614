package enforce

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gobwas/glob"
	"github.com/skillrun/skillrun/skill"
)

// FileSystem is what planning may read of the host: enough to tell what a
// path is and to expand a glob. OSFileSystem is the real one.
type FileSystem interface {
	Lstat(path string) (fs.FileInfo, error)
	Stat(path string) (fs.FileInfo, error)
	WalkDir(root string, fn fs.WalkDirFunc) error
	EvalSymlinks(path string) (string, error)
	Readlink(path string) (string, error)
}

// OSFileSystem reads the host's file system.
type OSFileSystem struct{}

func (OSFileSystem) Lstat(p string) (fs.FileInfo, error)          { return os.Lstat(p) }
func (OSFileSystem) Stat(p string) (fs.FileInfo, error)           { return os.Stat(p) }
func (OSFileSystem) WalkDir(root string, fn fs.WalkDirFunc) error { return filepath.WalkDir(root, fn) }
func (OSFileSystem) EvalSymlinks(p string) (string, error)        { return filepath.EvalSymlinks(p) }
func (OSFileSystem) Readlink(p string) (string, error)            { return os.Readlink(p) }

// Bounds on glob expansion: a glob that names more files than this must be
// declared as a directory (root/**) instead; a plan never silently widens.
const (
	maxExpandedFiles = 1024
	maxExpandWalk    = 20000
)

// systemGrant is one host path every sandbox sees, and how.
type systemGrant struct {
	path                     string
	read, write, exec, isDir bool
	mount                    string // bind, proc, dev, tmpfs; "" = covered by another mount
}

// systemGrants is the fixed table of what the sandbox sees of the host
// besides the declaration. Verify accepts a system grant only from here.
var systemGrants = []systemGrant{
	{path: "/usr", read: true, exec: true, isDir: true, mount: "bind"},
	{path: "/bin", read: true, exec: true, isDir: true, mount: "bind"},
	{path: "/sbin", read: true, exec: true, isDir: true, mount: "bind"},
	{path: "/lib", read: true, exec: true, isDir: true, mount: "bind"},
	{path: "/lib32", read: true, exec: true, isDir: true, mount: "bind"},
	{path: "/lib64", read: true, exec: true, isDir: true, mount: "bind"},
	{path: "/libx32", read: true, exec: true, isDir: true, mount: "bind"},
	// The dynamic loader reads its cache; many commands are links into
	// /etc/alternatives. Nothing else of /etc is shown.
	{path: "/etc/ld.so.cache", read: true, mount: "bind"},
	{path: "/etc/alternatives", read: true, exec: true, isDir: true, mount: "bind"},
	{path: "/proc", read: true, isDir: true, mount: "proc"},
	{path: "/dev", isDir: true, mount: "dev"},
	{path: "/dev/null", read: true, write: true},
	{path: "/dev/zero", read: true},
	{path: "/dev/urandom", read: true},
	{path: "/dev/random", read: true},
	// The sandbox's own size-capped scratch space, gone with the sandbox.
	{path: "/tmp", read: true, write: true, isDir: true, mount: "tmpfs"},
}

func lookupSystem(p string) (systemGrant, bool) {
	for _, g := range systemGrants {
		if g.path == p {
			return g, true
		}
	}
	return systemGrant{}, false
}

// systemMounts lists the system mounts present on this host.
func (pb *planBuilder) systemMounts(tmpBytes int64) []Mount {
	var out []Mount
	for _, g := range systemGrants {
		if g.mount == "" {
			continue
		}
		m := Mount{Kind: g.mount, Target: g.path, ReadOnly: !g.write, Origin: "system"}
		if g.mount == "bind" {
			info, err := pb.fs.Lstat(g.path)
			if err != nil {
				continue
			}
			m.Source = g.path
			if info.Mode()&fs.ModeSymlink != 0 {
				// Merged-/usr hosts link /bin, /lib… into /usr: recreate
				// the link rather than mount the same tree twice.
				target, err := pb.fs.Readlink(g.path)
				if err != nil {
					continue
				}
				m.Kind, m.Source = "symlink", target
			}
		}
		if g.mount == "tmpfs" {
			m.Source = fmt.Sprintf("size=%d", tmpBytes)
		}
		out = append(out, m)
	}
	return out
}

// skillrunMounts are the skill folder, the broker socket and the shim. They
// come after the declared x-allowed-files in the mount table, so that a
// declared directory holding the skill folder (x-allowed-files: /tmp/**
// with the skill under /tmp) cannot cover it with a noexec mount.
func skillrunMounts(skillDir string) []Mount {
	return []Mount{
		{Kind: "bind", Source: skillDir, Target: SkillPath, ReadOnly: true, Origin: "skill"},
		// Read-only: connect() still works, but the skill, which owns the
		// socket so it can connect to a 0600 file, cannot chmod it open
		// to other users of the host.
		{Kind: "bind", Target: SocketPath, ReadOnly: true, Origin: "broker"},
		{Kind: "bind", Target: ShimPath, ReadOnly: true, Origin: "shim"},
		{Kind: "bind", Target: ShimConfigPath, ReadOnly: true, Origin: "shim"},
	}
}

// systemRules are the Landlock rules of the system table present here,
// plus read+exec on the skill folder.
func (pb *planBuilder) systemRules(skillDir string) []FSRule {
	var out []FSRule
	for _, g := range systemGrants {
		if !g.read && !g.write && !g.exec {
			continue
		}
		if g.mount == "bind" {
			// Absent here, or a link whose target has its own rule.
			if info, err := pb.fs.Lstat(g.path); err != nil || info.Mode()&fs.ModeSymlink != 0 {
				continue
			}
		}
		out = append(out, FSRule{Path: g.path, Dir: g.isDir, Read: g.read, Write: g.write, Exec: g.exec, Origin: "system"})
	}
	return append(out,
		FSRule{Path: SkillPath, Dir: true, Read: true, Exec: true, Origin: "skill"},
		// The shim re-executes itself as the unprivileged exec stage.
		FSRule{Path: ShimPath, Read: true, Exec: true, Origin: "shim"})
}

// literalRoot returns the longest leading run of whole path segments of a
// glob that holds no glob syntax, and whether the whole glob is literal.
func literalRoot(g string) (string, bool) {
	i := strings.IndexAny(g, `*?[{\`)
	if i < 0 {
		return g, true
	}
	root := g[:strings.LastIndexByte(g[:i], '/')]
	if root == "" {
		root = "/"
	}
	return root, false
}

// reserved are sandbox paths a declared root may not cover: mounting a host
// directory over them would replace the sandbox's own.
var reserved = []string{"/proc", "/dev", "/run/skillrun", SkillPath}

func covers(dir, p string) bool {
	return dir == "/" || p == dir || strings.HasPrefix(p, dir+"/")
}

// fileGrants turns x-allowed-files into Landlock rules and mounts: a glob
// root/** becomes a directory rule on root; a literal path a rule on that
// file; anything else is expanded to the files it matches now.
func (pb *planBuilder) fileGrants(p *Plan, decl Declaration) error {
	var roots []string
	for _, g := range decl.Files {
		root, literal := literalRoot(g)
		for _, r := range reserved {
			if covers(root, r) {
				return &PolicyError{Diagnostics: []skill.Diagnostic{pb.errDiag("x-allowed-files", "%q would cover the sandbox's own %s; name the directories the skill needs", g, r)}}
			}
		}
		rules, err := pb.expand(g, root, literal, decl.FileWrite)
		if err != nil {
			return err
		}
		if len(rules) == 0 {
			continue
		}
		p.Landlock.Rules = append(p.Landlock.Rules, rules...)
		mroot := root
		if literal {
			mroot = g
		}
		roots = append(roots, mroot)
		p.Mounts = append(p.Mounts, Mount{Kind: "bind", Source: mroot, Target: mroot, ReadOnly: !decl.FileWrite, Origin: g})
	}
	for _, r := range roots {
		if covers("/tmp", r) || covers(r, "/tmp") {
			// Landlock rules only add up: a writable scratch /tmp would also
			// make the declared files under it writable (or readable beyond
			// their glob). The declaration wins; the scratch goes.
			p.Landlock.Rules = dropSystemRule(p.Landlock.Rules, "/tmp")
			pb.warn("x-allowed-files", "a declared path lies under /tmp: the sandbox's own /tmp is not writable in this invocation")
			break
		}
	}
	return nil
}

func dropSystemRule(rules []FSRule, path string) []FSRule {
	out := rules[:0]
	for _, r := range rules {
		if !(r.Origin == "system" && r.Path == path) {
			out = append(out, r)
		}
	}
	return out
}

// expand computes the Landlock rules of one declared glob.
func (pb *planBuilder) expand(g, root string, literal, write bool) ([]FSRule, error) {
	if real, err := pb.fs.EvalSymlinks(root); err == nil && real != root {
		pb.warn("x-allowed-files", "%q: %s is a symlink to %s; file tools match real paths, so declare %s", g, root, real, real)
	}
	if literal {
		info, err := pb.fs.Stat(g)
		switch {
		case err != nil:
			pb.warn("x-allowed-files", "%q matches nothing on this host now", g)
			return nil, nil
		case info.IsDir():
			pb.warn("x-allowed-files", "%q is a directory: it grants the directory itself; write %s/** for what it holds", g, g)
			return nil, nil
		}
		return []FSRule{{Path: g, Read: true, Write: write, Origin: g}}, nil
	}
	if info, err := pb.fs.Stat(root); err != nil || !info.IsDir() {
		pb.warn("x-allowed-files", "%q matches nothing on this host now (%s is not a directory)", g, root)
		return nil, nil
	}
	if g == strings.TrimSuffix(root, "/")+"/**" {
		return []FSRule{{Path: root, Dir: true, Read: true, Write: write, Origin: g}}, nil
	}
	return pb.expandWalk(g, root, write)
}

func (pb *planBuilder) expandWalk(g, root string, write bool) ([]FSRule, error) {
	pat, err := glob.Compiler{Separators: []rune{'/'}, Globstar: true}.Compile(g)
	if err != nil {
		return nil, fmt.Errorf("x-allowed-files: %q: %v: %w", g, err, ErrInvalidPolicy)
	}
	var rules []FSRule
	seen := 0
	tooMany := errors.New("too many")
	err = pb.fs.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable parts of the host grant nothing
		}
		if seen++; seen > maxExpandWalk || len(rules) > maxExpandedFiles {
			return tooMany
		}
		if d.Type().IsRegular() && pat.Match(p) {
			rules = append(rules, FSRule{Path: p, Read: true, Write: write, Origin: g})
		}
		return nil
	})
	if errors.Is(err, tooMany) || len(rules) > maxExpandedFiles {
		return nil, &PolicyError{Diagnostics: []skill.Diagnostic{pb.errDiag("x-allowed-files",
			"%q names more than %d files under %s (or %s holds more than %d entries); declare %s/** or narrow the glob", g, maxExpandedFiles, root, root, maxExpandWalk, root)}}
	}
	if len(rules) == 0 {
		pb.warn("x-allowed-files", "%q matches no file on this host now", g)
	}
	return rules, err
}
