// Package abiprobe makes one system call through a foreign x86 ABI (i386
// `int 0x80`, or x32) from a forked, single-threaded child and reports how
// the child ended. The seccomp tests use it to show that the filter kills
// such calls; Go itself cannot make them without taking a thread of the
// runtime down with it.
package abiprobe
