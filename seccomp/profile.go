package seccomp

// Linux values the table needs, written out so the table builds on every OS
// (`skillrun validate` prints it on macOS too); TestLinuxConstants checks
// them against golang.org/x/sys/unix.
const (
	eperm  = 1  // EPERM: the default answer
	enosys = 38 // ENOSYS: "not implemented", which makes libc fall back

	cloneNewTime   = 0x00000080
	cloneNewNS     = 0x00020000
	cloneNewCgroup = 0x02000000
	cloneNewUTS    = 0x04000000
	cloneNewIPC    = 0x08000000
	cloneNewUser   = 0x10000000
	cloneNewPID    = 0x20000000
	cloneNewNet    = 0x40000000

	// cloneNamespaces is every flag that makes clone create a namespace.
	// CLONE_NEWTIME shares its bit with the exit signal byte of clone(2), so
	// the kernel never reads it as a flag there; masking it too only refuses
	// exit signals ≥ 128, which are invalid anyway.
	cloneNamespaces = cloneNewNS | cloneNewCgroup | cloneNewUTS | cloneNewIPC |
		cloneNewUser | cloneNewPID | cloneNewNet | cloneNewTime

	tiocsti   = 0x5412 // TIOCSTI: fake input on a terminal
	tioclinux = 0x541c // TIOCLINUX: console selection paste and more

	perLinux = 0x0000     // PER_LINUX
	perQuery = 0xffffffff // personality(0xffffffff) reads without changing

	// setIDBits are S_ISUID|S_ISGID. A skill allowed to write a host
	// directory must not leave a setuid or setgid file there: nosuid holds
	// only inside the sandbox, and on the host any user could then become
	// the invocation's uid (systemd's RestrictSUIDSGID does the same).
	setIDBits = 0o6000

	afUnix    = 1
	afInet    = 2
	afInet6   = 10
	afNetlink = 16
)

// profile is the allowlist, by amd64 syscall name. Its base is Docker's
// default profile for a container without added capabilities (the test
// holds it to testdata/docker-default-amd64.txt); every syscall taken out
// is in denied with its reason. Entries without a comment are as Docker
// allows them. The shim and libcontainer's init also run under this filter
// between loading it and exec, so it covers their needs too.
// noSUID is the reason on every entry that refuses the setuid/setgid bits.
const noSUID = "refuses S_ISUID/S_ISGID in the mode (see setIDBits)"

var profile = map[string]Rule{
	// Files and directories.
	"access":            allow,
	"chdir":             allow,
	"chmod":             allowIf(noSUID, noneOf(1, setIDBits)),
	"chown":             allow,
	"close":             allow,
	"close_range":       allow,
	"copy_file_range":   allow,
	"creat":             allowIf(noSUID, noneOf(1, setIDBits)),
	"dup":               allow,
	"dup2":              allow,
	"dup3":              allow,
	"faccessat":         allow,
	"faccessat2":        allow,
	"fadvise64":         allow,
	"fallocate":         allow,
	"fchdir":            allow,
	"fchmod":            allowIf(noSUID, noneOf(1, setIDBits)),
	"fchmodat":          allowIf(noSUID, noneOf(2, setIDBits)),
	"fchown":            allow,
	"fchownat":          allow,
	"fcntl":             allow,
	"fdatasync":         allow,
	"flock":             allow,
	"fstat":             allow,
	"fstatfs":           allow,
	"fsync":             allow,
	"ftruncate":         allow,
	"futimesat":         allow,
	"getcwd":            allow,
	"getdents":          allow,
	"getdents64":        allow,
	"inotify_add_watch": allow,
	"inotify_init":      allow,
	"inotify_init1":     allow,
	"inotify_rm_watch":  allow,
	"link":              allow,
	"linkat":            allow,
	"lseek":             allow,
	"lstat":             allow,
	"mkdir":             allow,
	"mkdirat":           allow,
	"mknod":             allowIf(noSUID+"; device nodes need CAP_MKNOD anyway", noneOf(1, setIDBits)),
	"mknodat":           allowIf(noSUID, noneOf(2, setIDBits)),
	"newfstatat":        allow,
	"open":              allowIf(noSUID, noneOf(2, setIDBits)),
	"openat":            allowIf(noSUID, noneOf(3, setIDBits)),
	"openat2":           fail(enosys, "its mode is in memory the filter cannot read, so a setuid create could not be refused; ENOSYS makes libc fall back to openat"),
	"pread64":           allow,
	"preadv":            allow,
	"preadv2":           allow,
	"pwrite64":          allow,
	"pwritev":           allow,
	"pwritev2":          allow,
	"read":              allow,
	"readahead":         allow,
	"readlink":          allow,
	"readlinkat":        allow,
	"readv":             allow,
	"rename":            allow,
	"renameat":          allow,
	"renameat2":         allow,
	"rmdir":             allow,
	"sendfile":          allow,
	"splice":            allow,
	"stat":              allow,
	"statfs":            allow,
	"statx":             allow,
	"symlink":           allow,
	"symlinkat":         allow,
	"sync":              allow,
	"sync_file_range":   allow,
	"syncfs":            allow,
	"tee":               allow,
	"truncate":          allow,
	"umask":             allow,
	"unlink":            allow,
	"unlinkat":          allow,
	"utime":             allow,
	"utimensat":         allow,
	"utimes":            allow,
	"vmsplice":          allow,
	"write":             allow,
	"writev":            allow,

	// Extended attributes.
	"fgetxattr":    allow,
	"flistxattr":   allow,
	"fremovexattr": allow,
	"fsetxattr":    allow,
	"getxattr":     allow,
	"lgetxattr":    allow,
	"listxattr":    allow,
	"llistxattr":   allow,
	"lremovexattr": allow,
	"lsetxattr":    allow,
	"removexattr":  allow,
	"setxattr":     allow,

	// Terminals and devices.
	"ioctl": allowIf("TIOCSTI types into the terminal the sandbox shares with its caller and "+
		"TIOCLINUX pastes the console selection; every other request is allowed. The kernel "+
		"reads the request as 32 bits, so only the low half is compared (see low32Except)",
		low32Except(1, tiocsti, tioclinux)...),

	// Memory.
	"brk":              allow,
	"madvise":          allow,
	"membarrier":       allow,
	"memfd_create":     allow,
	"memfd_secret":     allow,
	"mincore":          allow,
	"mlock":            allow, // bounded by RLIMIT_MEMLOCK
	"mlock2":           allow,
	"mlockall":         allow,
	"mmap":             allow,
	"mprotect":         allow,
	"mremap":           allow,
	"msync":            allow,
	"munlock":          allow,
	"munlockall":       allow,
	"munmap":           allow,
	"pkey_alloc":       allow,
	"pkey_free":        allow,
	"pkey_mprotect":    allow,
	"remap_file_pages": allow,

	// Processes and threads.
	"arch_prctl": allow, // libc and Go set the TLS base with it
	"capget":     allow,
	"capset":     allow, // can only drop capabilities the process holds
	"clone": allowIf("allowed without namespace flags: a new namespace is a way out of the "+
		"sandbox's own; fork, vfork and threads pass",
		noneOf(0, cloneNamespaces)),
	"clone3": fail(enosys, "its flags live in memory a filter cannot read, so it cannot "+
		"be filtered like clone; ENOSYS makes glibc and Go fall back to clone"),
	"execve":          allow,
	"execveat":        allow,
	"exit":            allow,
	"exit_group":      allow,
	"fork":            allow,
	"get_robust_list": allow,
	"getcpu":          allow,
	"getegid":         allow,
	"geteuid":         allow,
	"getgid":          allow,
	"getgroups":       allow,
	"getpgid":         allow,
	"getpgrp":         allow,
	"getpid":          allow,
	"getppid":         allow,
	"getpriority":     allow,
	"getresgid":       allow,
	"getresuid":       allow,
	"getrlimit":       allow,
	"getrusage":       allow,
	"getsid":          allow,
	"get_thread_area": allow,
	"gettid":          allow,
	"getuid":          allow,
	"ioprio_get":      allow,
	"ioprio_set":      allow,
	// Landlock: a process may always confine itself further, and the shim
	// needs these after the filter is in place.
	"landlock_add_rule":       allow,
	"landlock_create_ruleset": allow,
	"landlock_restrict_self":  allow,
	"personality": allowIf("only PER_LINUX and the 0xffffffff query: other personalities "+
		"switch off ASLR or make reads imply exec; the kernel reads the argument as 32 bits",
		low32Is(0, perLinux), low32Is(0, perQuery)),
	"prctl":                  allow,
	"prlimit64":              allow, // without CAP_SYS_RESOURCE limits only go down
	"restart_syscall":        allow,
	"rseq":                   allow,
	"sched_get_priority_max": allow,
	"sched_get_priority_min": allow,
	"sched_getaffinity":      allow,
	"sched_getattr":          allow,
	"sched_getparam":         allow,
	"sched_getscheduler":     allow,
	"sched_rr_get_interval":  allow,
	"sched_setaffinity":      allow,
	"sched_setattr":          allow,
	"sched_setparam":         allow,
	"sched_setscheduler":     allow,
	"sched_yield":            allow,
	"seccomp":                allow, // stacking filters only narrows, and no_new_privs is set
	"set_robust_list":        allow,
	"set_thread_area":        allow,
	"set_tid_address":        allow,
	"setfsgid":               allow,
	"setfsuid":               allow,
	"setgid":                 allow, // without capabilities the set*id calls only drop
	"setgroups":              allow,
	"setpgid":                allow,
	"setpriority":            allow,
	"setregid":               allow,
	"setresgid":              allow,
	"setresuid":              allow,
	"setreuid":               allow,
	"setrlimit":              allow,
	"setsid":                 allow,
	"setuid":                 allow,
	"uname":                  allow,
	"vfork":                  allow,
	"wait4":                  allow,
	"waitid":                 allow,

	// Signals and process handles. The pid namespace and Landlock scoping
	// keep signals inside the sandbox.
	"kill":              allow,
	"pidfd_open":        allow,
	"pidfd_send_signal": allow,
	"process_mrelease":  allow,
	"rt_sigaction":      allow,
	"rt_sigpending":     allow,
	"rt_sigprocmask":    allow,
	"rt_sigqueueinfo":   allow,
	"rt_sigreturn":      allow,
	"rt_sigsuspend":     allow,
	"rt_sigtimedwait":   allow,
	"rt_tgsigqueueinfo": allow,
	"sigaltstack":       allow,
	"signalfd":          allow,
	"signalfd4":         allow,
	"tgkill":            allow,
	"tkill":             allow,

	// Time. Setting clocks is denied; reading them is not.
	"alarm":            allow,
	"clock_getres":     allow,
	"clock_gettime":    allow,
	"clock_nanosleep":  allow,
	"getitimer":        allow,
	"gettimeofday":     allow,
	"nanosleep":        allow,
	"setitimer":        allow,
	"time":             allow,
	"timer_create":     allow,
	"timer_delete":     allow,
	"timer_getoverrun": allow,
	"timer_gettime":    allow,
	"timer_settime":    allow,
	"timerfd_create":   allow,
	"timerfd_gettime":  allow,
	"timerfd_settime":  allow,
	"times":            allow,

	// Waiting and events.
	"epoll_create":  allow,
	"epoll_create1": allow,
	"epoll_ctl":     allow,
	"epoll_pwait":   allow,
	"epoll_pwait2":  allow,
	"epoll_wait":    allow,
	"eventfd":       allow,
	"eventfd2":      allow,
	"futex":         allow,
	"futex_waitv":   allow,
	"pause":         allow,
	"pipe":          allow,
	"pipe2":         allow,
	"poll":          allow,
	"ppoll":         allow,
	"pselect6":      allow,
	"select":        allow,

	// Asynchronous I/O (the old interface; io_uring is denied).
	"io_cancel":     allow,
	"io_destroy":    allow,
	"io_getevents":  allow,
	"io_pgetevents": allow,
	"io_setup":      allow,
	"io_submit":     allow,

	// Sockets. The network namespace has only loopback, Landlock denies TCP
	// bind and connect, and the broker socket is the way out.
	"accept":      allow,
	"accept4":     allow,
	"bind":        allow,
	"connect":     allow,
	"getpeername": allow,
	"getsockname": allow,
	"getsockopt":  allow,
	"listen":      allow,
	"recvfrom":    allow,
	"recvmmsg":    allow,
	"recvmsg":     allow,
	"sendmmsg":    allow,
	"sendmsg":     allow,
	"sendto":      allow,
	"setsockopt":  allow,
	"shutdown":    allow,
	"socket": allowIf("only Unix, IP and netlink sockets (resolvers and Go's net package "+
		"need netlink); Docker refuses AF_VSOCK, which is not namespaced, and the rarer "+
		"families are kernel attack surface. The domain is an int: low 32 bits compared",
		low32Is(0, afUnix), low32Is(0, afInet), low32Is(0, afInet6), low32Is(0, afNetlink)),
	"socketpair": allowIf("pairs are Unix sockets in practice; other families only add "+
		"kernel attack surface. The domain is an int: low 32 bits compared",
		low32Is(0, afUnix)),

	// System V and POSIX IPC, inside the sandbox's own IPC namespace.
	"mq_getsetattr":   allow,
	"mq_notify":       allow,
	"mq_open":         allow,
	"mq_timedreceive": allow,
	"mq_timedsend":    allow,
	"mq_unlink":       allow,
	"msgctl":          allow,
	"msgget":          allow,
	"msgrcv":          allow,
	"msgsnd":          allow,
	"semctl":          allow,
	"semget":          allow,
	"semop":           allow,
	"semtimedop":      allow,
	"shmat":           allow,
	"shmctl":          allow,
	"shmdt":           allow,
	"shmget":          allow,

	// Information.
	"getrandom": allow,
	"sysinfo":   allow,
}
