package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// hybridMountinfo is this host's cgroup layout (HOST-NOTES): v1 controllers
// on a tmpfs, cgroup2 at /sys/fs/cgroup/unified holding only hugetlb.
const hybridMountinfo = `22 1 0:21 / / rw,relatime - ext4 /dev/vda rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

// systemdMountinfo is a v1 layout as a container sees it: co-mounted
// controllers, optional fields (shared:N) before the separator, and a
// hierarchy mounted from a subtree (/docker/abc).
const systemdMountinfo = `25 30 0:23 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755
28 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:11 - cgroup cgroup rw,cpu,cpuacct
29 25 0:27 /docker/abc /sys/fs/cgroup/memory rw,nosuid shared:12 - cgroup cgroup rw,memory
`

const hostProcCgroups = `#subsys_name	hierarchy	num_cgroups	enabled
cpuset	3	1	1
cpu	1	1	1
memory	4	46	1
freezer	6	1	1
hugetlb	0	1	1
pids	8	1	1
`

func TestParseMountinfo(t *testing.T) {
	mounts, err := parseMountinfo(systemdMountinfo + `36 25 0:30 / /mnt/with\040space rw - ext4 /dev/x rw` + "\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []mountEntry{
		{"/", "/sys/fs/cgroup", "tmpfs", []string{"ro", "mode=755"}},
		{"/", "/sys/fs/cgroup/cpu,cpuacct", "cgroup", []string{"rw", "cpu", "cpuacct"}},
		{"/docker/abc", "/sys/fs/cgroup/memory", "cgroup", []string{"rw", "memory"}},
		{"/", "/mnt/with space", "ext4", []string{"rw"}},
	}
	if !slices.EqualFunc(mounts, want, func(a, b mountEntry) bool {
		return a.root == b.root && a.mountPoint == b.mountPoint && a.fsType == b.fsType && slices.Equal(a.superOpts, b.superOpts)
	}) {
		t.Errorf("parseMountinfo() = %+v\nwant %+v", mounts, want)
	}
}

func TestParseMountinfoMalformed(t *testing.T) {
	for _, text := range []string{
		"31 23 0:28 / /sys/fs/cgroup rw tmpfs tmpfs rw\n", // no separator
		"31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs\n",  // no super options
		"31 23 - tmpfs tmpfs rw\n",                        // separator too early
	} {
		if _, err := parseMountinfo(text); err == nil {
			t.Errorf("parseMountinfo(%q) succeeded, want an error", text)
		}
	}
}

func TestUnescapeOctal(t *testing.T) {
	for in, want := range map[string]string{
		`/plain`:        "/plain",
		`/a\040b`:       "/a b",
		`/tab\011x`:     "/tab\tx",
		`/back\134s`:    `/back\s`,
		`/short\04`:     `/short\04`,
		`/notoctal\09x`: `/notoctal\09x`,
	} {
		if got := unescapeOctal(in); got != want {
			t.Errorf("unescapeOctal(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseProcCgroups(t *testing.T) {
	got, err := parseProcCgroups(hostProcCgroups + "blkio\t7\t1\t0\n")
	if err != nil {
		t.Fatal(err)
	}
	if !got["memory"] || !got["pids"] || got["blkio"] || len(got) != 7 {
		t.Errorf("parseProcCgroups() = %v", got)
	}
	if _, err := parseProcCgroups("memory 4 46\n"); err == nil {
		t.Errorf("parseProcCgroups(3 fields) succeeded, want an error")
	}
	if got, err := parseProcCgroups(""); got != nil || err != nil {
		t.Errorf("parseProcCgroups(\"\") = %v, %v; want nil, nil", got, err)
	}
}

const (
	hybridSelfCgroup  = "4:memory:/job\n8:pids:/\n1:cpu:/\n3:cpuset:/\n6:freezer:/\n0::/\n"
	systemdSelfCgroup = "3:memory:/docker/abc/inner\n2:cpu,cpuacct:/user.slice\n0::/\n"
)

func TestCgroupsFrom(t *testing.T) {
	v1 := func(mountinfo, procCgroups, self string) cgroupSnapshot {
		return cgroupSnapshot{rootMagic: unix.TMPFS_MAGIC, mountinfo: mountinfo, procCgroups: procCgroups, selfCgroup: self}
	}
	v2 := func(controllers, self string) cgroupSnapshot {
		return cgroupSnapshot{rootMagic: unix.CGROUP2_SUPER_MAGIC, controllers: controllers, selfCgroup: self}
	}
	all := func(dir string, ctrls ...string) map[string]string {
		m := map[string]string{}
		for _, c := range ctrls {
			m[c] = dir
		}
		return m
	}
	// Without /proc/self/cgroup each controller falls back to its mount point.
	unknownSelf := map[string]string{"memory": "/sys/fs/cgroup/memory", "cpu": "/sys/fs/cgroup/cpu,cpuacct"}
	tests := []struct {
		name string
		snap cgroupSnapshot
		want cgroupFacts
	}{
		{"v2 unified", v2("cpuset cpu io memory hugetlb pids rdma misc\n", "0::/user.slice/app.scope\n"), cgroupFacts{
			version: 2, controllers: []string{"memory", "pids", "cpu", "cpuset"},
			dirs: all("/sys/fs/cgroup/user.slice/app.scope", "memory", "pids", "cpu", "cpuset")}},
		{"v2 outside the cgroup namespace", v2("memory pids cpu\n", "0::/../../sibling\n"), cgroupFacts{
			version: 2, controllers: []string{"memory", "pids", "cpu"},
			dirs: all("/sys/fs/cgroup", "memory", "pids", "cpu")}},
		{"v2 without memory", v2("cpu pids\n", "0::/\n"), cgroupFacts{
			version: 2, controllers: []string{"pids", "cpu"}, dirs: all("/sys/fs/cgroup", "pids", "cpu"),
			problems: []string{"cgroups: no memory controller in /sys/fs/cgroup/cgroup.controllers"}}},
		{"v2 without cgroup.controllers",
			cgroupSnapshot{rootMagic: unix.CGROUP2_SUPER_MAGIC, controllersErr: fs.ErrNotExist, selfCgroup: "0::/\n"},
			cgroupFacts{version: 2, problems: []string{"cgroups: file does not exist"}}},
		{"v2 with unreadable /proc/self/cgroup",
			cgroupSnapshot{rootMagic: unix.CGROUP2_SUPER_MAGIC, controllers: "memory pids cpu", selfCgroupErr: fs.ErrPermission},
			cgroupFacts{version: 2, controllers: []string{"memory", "pids", "cpu"},
				dirs:     all("/sys/fs/cgroup", "memory", "pids", "cpu"),
				problems: []string{"cgroups: /proc/self/cgroup: permission denied"}}},
		{"v1 hybrid, this host", v1(hybridMountinfo, hostProcCgroups, hybridSelfCgroup), cgroupFacts{
			version: 1, controllers: []string{"memory", "pids", "cpu", "cpuset", "freezer"},
			dirs: map[string]string{
				"memory": "/sys/fs/cgroup/memory/job", "pids": "/sys/fs/cgroup/pids", "cpu": "/sys/fs/cgroup/cpu",
				"cpuset": "/sys/fs/cgroup/cpuset", "freezer": "/sys/fs/cgroup/freezer",
			}}},
		{"v1 container, subtree mount, no pids", v1(systemdMountinfo, hostProcCgroups, systemdSelfCgroup), cgroupFacts{
			version: 1, controllers: []string{"memory", "cpu"},
			dirs: map[string]string{
				"memory": "/sys/fs/cgroup/memory/inner", "cpu": "/sys/fs/cgroup/cpu,cpuacct/user.slice",
			},
			problems: []string{"cgroups: pids controller not mounted as a v1 hierarchy (/proc/self/mountinfo)"}}},
		{"v1 with pids disabled at boot", v1(systemdMountinfo, "#h\npids 0 1 0\n", ""), cgroupFacts{
			version: 1, controllers: []string{"memory", "cpu"},
			dirs:     unknownSelf,
			problems: []string{"cgroups: pids controller disabled (/proc/cgroups enabled=0; cgroup_disable= at boot?)"}}},
		{"v1 kernel without pids", v1(systemdMountinfo, "#h\nmemory 1 1 1\n", ""), cgroupFacts{
			version: 1, controllers: []string{"memory", "cpu"},
			dirs:     unknownSelf,
			problems: []string{"cgroups: no pids controller in this kernel (/proc/cgroups)"}}},
		{"no cgroups mounted", v1("31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n", "", "0::/\n"), cgroupFacts{
			problems: []string{"cgroups: /sys/fs/cgroup is not cgroup2 (statfs magic 0x1021994) and /proc/self/mountinfo has no cgroup v1 mount"}}},
		{"statfs failed", cgroupSnapshot{rootErr: errors.New("statfs /sys/fs/cgroup: no such file or directory")}, cgroupFacts{
			problems: []string{"cgroups: statfs /sys/fs/cgroup: no such file or directory"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cgroupsFrom(tt.snap)
			if got.version != tt.want.version || !slices.Equal(got.controllers, tt.want.controllers) ||
				!maps.Equal(got.dirs, tt.want.dirs) || !slices.Equal(got.problems, tt.want.problems) {
				t.Errorf("cgroupsFrom() = %+v\nwant           %+v", got, tt.want)
			}
		})
	}
}

func TestWritableControllers(t *testing.T) {
	f := cgroupFacts{
		controllers: []string{"memory", "pids", "cpu"},
		dirs:        map[string]string{"memory": "/cg/memory/job", "pids": "/cg/pids", "cpu": "/cg/pids"},
	}
	calls := 0
	access := func(dir string) error {
		calls++
		if dir == "/cg/pids" {
			return fmt.Errorf("access(W_OK): %w", unix.EROFS)
		}
		return nil
	}
	ctrls, problems := writableControllers(f, access)
	want := []string{"cgroups: cannot create pids, cpu cgroups in /cg/pids: access(W_OK): read-only file system"}
	if !slices.Equal(ctrls, []string{"memory"}) || !slices.Equal(problems, want) || calls != 2 {
		t.Errorf("writableControllers() = %q, %q after %d checks; want [memory], %q after 2", ctrls, problems, calls, want)
	}
}

func TestCgroupDir(t *testing.T) {
	tests := []struct{ mountPoint, root, path, want string }{
		{"/sys/fs/cgroup/memory", "/", "/job", "/sys/fs/cgroup/memory/job"},
		{"/sys/fs/cgroup/memory", "/", "/", "/sys/fs/cgroup/memory"},
		{"/sys/fs/cgroup/memory", "/docker/abc", "/docker/abc/inner", "/sys/fs/cgroup/memory/inner"},
		{"/sys/fs/cgroup/memory", "/docker/abc", "/docker/other", "/sys/fs/cgroup/memory"},
		{"/sys/fs/cgroup", "/", "/../../sibling", "/sys/fs/cgroup"},
		{"/sys/fs/cgroup", "/", "/..x/y", "/sys/fs/cgroup/..x/y"},
		{"/sys/fs/cgroup", "/", "", "/sys/fs/cgroup"},
	}
	for _, tt := range tests {
		if got := cgroupDir(tt.mountPoint, tt.root, tt.path); got != tt.want {
			t.Errorf("cgroupDir(%q, %q, %q) = %q, want %q", tt.mountPoint, tt.root, tt.path, got, tt.want)
		}
	}
}

func TestParseSelfCgroup(t *testing.T) {
	got, err := parseSelfCgroup("2:cpu,cpuacct:/a\n1:name=systemd:/b\n0::/c:d\n")
	want := map[string]string{"cpu": "/a", "cpuacct": "/a", "name=systemd": "/b", "": "/c:d"}
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("parseSelfCgroup() = %v, %v; want %v", got, err, want)
	}
	if _, err := parseSelfCgroup("0:/only-two\n"); err == nil {
		t.Errorf("parseSelfCgroup(2 fields) succeeded, want an error")
	}
}

// TestCgroupParsersOnHost feeds the parsers this machine's own files.
func TestCgroupParsersOnHost(t *testing.T) {
	b, err := os.ReadFile(selfMountinfo)
	if err != nil {
		t.Fatal(err)
	}
	mounts, err := parseMountinfo(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(mounts, func(m mountEntry) bool { return m.mountPoint == "/" }) {
		t.Errorf("parseMountinfo(%s) has no / mount: %+v", selfMountinfo, mounts)
	}
	b, err = os.ReadFile(selfCgroup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseSelfCgroup(string(b)); err != nil {
		t.Errorf("parseSelfCgroup(%s): %v", selfCgroup, err)
	}
	b, err = os.ReadFile(procCgroups)
	if errors.Is(err, fs.ErrNotExist) {
		return // optional; newer kernels may drop it
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseProcCgroups(string(b)); err != nil {
		t.Errorf("parseProcCgroups(%s): %v", procCgroups, err)
	}
}
