package landlock

import (
	"slices"
	"testing"

	golandlock "github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

func TestFSAccess(t *testing.T) {
	const (
		rd   = ll.AccessFSReadFile
		rdir = ll.AccessFSReadFile | ll.AccessFSReadDir
		x    = ll.AccessFSExecute
		w    = ll.AccessFSWriteFile
		tr   = ll.AccessFSTruncate
		make = ll.AccessFSMakeReg | ll.AccessFSMakeDir | ll.AccessFSMakeSym | ll.AccessFSMakeFifo |
			ll.AccessFSMakeSock | ll.AccessFSRemoveFile | ll.AccessFSRemoveDir
		refer = ll.AccessFSRefer
	)
	ro := FSRule{Read: true}
	rx := FSRule{Read: true, Exec: true}
	rw := FSRule{Read: true, Write: true}
	for _, tc := range []struct {
		name  string
		rule  FSRule
		isDir bool
		abi   int
		want  golandlock.AccessFSSet
	}{
		{"read file", ro, false, 7, rd},
		{"read dir", ro, true, 7, rdir},
		{"read+exec dir", rx, true, 7, rdir | x},
		{"exec only file", FSRule{Exec: true}, false, 7, x},
		{"write file", rw, false, 7, rd | w | tr},
		{"write dir", rw, true, 7, rdir | w | tr | make | refer},
		{"write dir ABI 3 has truncate", rw, true, 3, rdir | w | tr | make | refer},
		{"write dir ABI 2 has no truncate", rw, true, 2, rdir | w | make | refer},
		{"write dir ABI 1 has no refer", rw, true, 1, rdir | w | make},
		{"dir rule on a file gets file rights", FSRule{Dir: true, Read: true, Write: true}, false, 7, rd | w | tr},
		{"no rights", FSRule{Dir: true}, true, 7, 0},
		{"ABI 0 handles nothing", rw, true, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fsAccess(tc.rule, tc.isDir, tc.abi); got != tc.want {
				t.Errorf("fsAccess = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNeverGranted pins the rights no rule ever grants, at any ABI.
func TestNeverGranted(t *testing.T) {
	never := golandlock.AccessFSSet(ll.AccessFSMakeChar | ll.AccessFSMakeBlock | ll.AccessFSIoctlDev | ll.AccessFSResolveUnix)
	all := FSRule{Dir: true, Read: true, Write: true, Exec: true}
	for abi := 0; abi <= maxABI+1; abi++ {
		for _, isDir := range []bool{false, true} {
			if got := fsAccess(all, isDir, abi); got&never != 0 {
				t.Errorf("ABI %d dir=%v: grants %v", abi, isDir, got&never)
			}
		}
	}
}

func TestNetAndScopes(t *testing.T) {
	full := Plan{DenyTCPBind: true, DenyTCPConnect: true, ScopeAbstract: true, ScopeSignal: true}
	for _, tc := range []struct {
		abi    int
		net    golandlock.AccessNetSet
		scoped golandlock.ScopedSet
		unenf  []string
	}{
		{0, 0, 0, []string{"filesystem", "tcp_bind", "tcp_connect", "scope_abstract_unix_socket", "scope_signal"}},
		{3, 0, 0, []string{"ioctl_dev", "resolve_unix", "tcp_bind", "tcp_connect", "scope_abstract_unix_socket", "scope_signal"}},
		{4, ll.AccessNetBindTCP | ll.AccessNetConnectTCP, 0, []string{"ioctl_dev", "resolve_unix", "scope_abstract_unix_socket", "scope_signal"}},
		{7, ll.AccessNetBindTCP | ll.AccessNetConnectTCP, ll.ScopeAbstractUnixSocket | ll.ScopeSignal, []string{"resolve_unix"}},
		// UDP (ABI ≥ 10) is not in the plan, so never handled.
		{11, ll.AccessNetBindTCP | ll.AccessNetConnectTCP, ll.ScopeAbstractUnixSocket | ll.ScopeSignal, nil},
	} {
		if got := netAccess(full, tc.abi); got != tc.net {
			t.Errorf("ABI %d: netAccess = %v, want %v", tc.abi, got, tc.net)
		}
		if got := scopes(full, tc.abi); got != tc.scoped {
			t.Errorf("ABI %d: scopes = %v, want %v", tc.abi, got, tc.scoped)
		}
		if got := unenforced(full, tc.abi); !slices.Equal(got, tc.unenf) {
			t.Errorf("ABI %d: unenforced = %q, want %q", tc.abi, got, tc.unenf)
		}
	}
	if got := netAccess(Plan{DenyTCPConnect: true}, 7); got != ll.AccessNetConnectTCP {
		t.Errorf("connect only: netAccess = %v", got)
	}
	if got := scopes(Plan{ScopeSignal: true}, 7); got != ll.ScopeSignal {
		t.Errorf("signal only: scopes = %v", got)
	}
}

func TestGranted(t *testing.T) {
	rules := []FSRule{
		{Path: "/usr", Dir: true, Read: true, Exec: true},
		{Path: "/skills/report", Dir: true, Read: true, Exec: true},
		{Path: "/data/a.csv", Read: true, Write: true},
		{Path: "/tmp", Dir: true, Read: true, Write: true},
		{Path: "/run/skillrun/shim", Read: true, Exec: true},
	}
	for _, tc := range []struct {
		path          string
		read, w, exec bool
	}{
		{"/usr/bin/sh", true, false, true},
		{"/usr", true, false, true},
		{"/usrx/bin", false, false, false},
		{"/skills/report/main", true, false, true},
		{"/skills/reporter/main", false, false, false},
		{"/data/a.csv", true, true, false},
		{"/data/a.csv/x", false, false, false}, // a file rule covers only itself
		{"/tmp/x/y", true, true, false},
		{"/run/skillrun/shim", true, false, true},
		{"/run/skillrun/shim.json", false, false, false},
	} {
		g := Granted(rules, tc.path)
		if g.Read != tc.read || g.Write != tc.w || g.Exec != tc.exec || g.Path != tc.path {
			t.Errorf("Granted(%s) = %+v, want read=%v write=%v exec=%v", tc.path, g, tc.read, tc.w, tc.exec)
		}
	}
	if g := Granted([]FSRule{{Path: "/", Dir: true, Read: true}}, "/etc/passwd"); !g.Read {
		t.Errorf("a rule on / covers everything: %+v", g)
	}
}
