//go:build linux && cgo && amd64

package abiprobe

/*
#include <errno.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

// probe forks; the child makes getpid through the chosen ABI and exits 0 if
// it survives. It returns the child's wait status, or -errno.
static int probe(int x32) {
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		// The expected death is a SIGSYS "crash": no core file for it.
		struct rlimit none = {0, 0};
		setrlimit(RLIMIT_CORE, &none);
		long ret;
		if (x32) {
			// x32 ABI: the syscall instruction with __X32_SYSCALL_BIT set
			// (getpid is 39 there too).
			__asm__ volatile("syscall" : "=a"(ret) : "a"(0x40000000L | 39L) : "rcx", "r11", "memory");
		} else {
			// i386 ABI: int 0x80, getpid is 20.
			__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
		}
		(void)ret;
		_exit(0);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return status;
}
*/
import "C"

import "syscall"

// I386 forks a child that calls getpid with `int 0x80` and returns how it
// ended.
func I386() (syscall.WaitStatus, error) { return run(0) }

// X32 forks a child that calls getpid through the x32 ABI and returns how it
// ended.
func X32() (syscall.WaitStatus, error) { return run(1) }

func run(x32 C.int) (syscall.WaitStatus, error) {
	r := C.probe(x32)
	if r < 0 {
		return 0, syscall.Errno(-r)
	}
	return syscall.WaitStatus(r), nil
}
