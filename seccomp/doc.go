// Package seccomp holds the sandbox's seccomp profile as data: one readable
// allowlist table (errno by default, amd64 only), its translation into a
// libcontainer configuration, and a golden file of the compiled filter. The
// profile arrives with the sandbox; today the package only names it.
package seccomp
