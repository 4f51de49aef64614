package seccomp

// denied names syscalls that must never enter the profile, with the reason.
// They are simply absent from it, so the default action answers EPERM (or
// ENOSYS above the highest number listed). The first block is what Docker's
// default profile allows that the sandbox does not; the rest Docker also
// denies to a container without capabilities, and is named here so that a
// later edit cannot slip it in.
var denied = map[string]string{
	// Taken out of Docker's allowlist.
	"adjtimex":          "adjusts the host clock (read-only without CAP_SYS_TIME, but nothing needs it)",
	"clock_adjtime":     "adjusts the host clock",
	"epoll_ctl_old":     "never implemented on x86-64",
	"epoll_wait_old":    "never implemented on x86-64",
	"fanotify_mark":     "useless without fanotify_init, which is denied",
	"io_uring_enter":    "io_uring bypasses seccomp for the operations it runs and is a rich source of kernel bugs",
	"io_uring_register": "io_uring bypasses seccomp for the operations it runs",
	"io_uring_setup":    "io_uring bypasses seccomp for the operations it runs",
	"modify_ldt":        "16-bit segments are for Wine and DOS emulators, and a history of kernel bugs",
	"name_to_handle_at": "file handles are the first half of an open_by_handle_at escape",
	"process_vm_readv":  "reads another process's memory",
	"process_vm_writev": "writes another process's memory",
	"ptrace":            "inspects and controls other processes",

	// Namespaces, mounts and the file system tree.
	"chroot":            "changes the root directory",
	"fsconfig":          "new mount API",
	"fsmount":           "new mount API",
	"fsopen":            "new mount API",
	"fspick":            "new mount API",
	"mount":             "mounts",
	"mount_setattr":     "changes mount attributes",
	"move_mount":        "new mount API",
	"open_by_handle_at": "opens files by handle, bypassing the mount namespace (the 'shocker' escape)",
	"open_tree":         "new mount API",
	"pivot_root":        "changes the root mount",
	"setns":             "joins another namespace",
	"umount2":           "unmounts",
	"unshare":           "creates namespaces",

	// Kernel and host state.
	"acct":                    "process accounting for the host",
	"bpf":                     "loads eBPF programs into the kernel",
	"create_module":           "module loading (obsolete)",
	"delete_module":           "unloads kernel modules",
	"finit_module":            "loads kernel modules",
	"get_kernel_syms":         "module loading (obsolete)",
	"init_module":             "loads kernel modules",
	"kexec_file_load":         "replaces the running kernel",
	"kexec_load":              "replaces the running kernel",
	"lookup_dcookie":          "kernel profiling",
	"nfsservctl":              "removed from the kernel",
	"perf_event_open":         "performance counters leak kernel state and are a source of bugs",
	"query_module":            "module loading (obsolete)",
	"quotactl":                "disk quotas of the host",
	"quotactl_fd":             "disk quotas of the host",
	"reboot":                  "reboots the host",
	"setdomainname":           "sets the host name",
	"sethostname":             "sets the host name",
	"swapoff":                 "host swap",
	"swapon":                  "host swap",
	"syslog":                  "reads the kernel log",
	"sysfs":                   "obsolete file system type query",
	"_sysctl":                 "obsolete sysctl interface",
	"uselib":                  "obsolete a.out library loading",
	"ustat":                   "obsolete",
	"userfaultfd":             "lets a process stall the kernel at will, a staple of exploits",
	"vhangup":                 "hangs up the terminal",
	"iopl":                    "raw I/O port access",
	"ioperm":                  "raw I/O port access",
	"settimeofday":            "sets the host clock",
	"clock_settime":           "sets the host clock",
	"get_mempolicy":           "NUMA policy (Docker: CAP_SYS_NICE)",
	"mbind":                   "NUMA policy (Docker: CAP_SYS_NICE)",
	"migrate_pages":           "NUMA policy (Docker: CAP_SYS_NICE)",
	"move_pages":              "NUMA policy (Docker: CAP_SYS_NICE)",
	"set_mempolicy":           "NUMA policy (Docker: CAP_SYS_NICE)",
	"set_mempolicy_home_node": "NUMA policy (Docker: CAP_SYS_NICE)",

	// Keys and other processes.
	"add_key":         "the kernel keyring is not namespaced",
	"keyctl":          "the kernel keyring is not namespaced",
	"request_key":     "the kernel keyring is not namespaced",
	"kcmp":            "compares kernel objects of other processes (Docker: CAP_SYS_PTRACE)",
	"pidfd_getfd":     "steals a file descriptor from another process",
	"process_madvise": "acts on another process's memory (Docker: CAP_SYS_PTRACE)",
	"fanotify_init":   "file system wide event monitoring",
}
