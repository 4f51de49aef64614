// Package runtime will hold skillrun's sandbox: on Linux one libcontainer
// container per invocation (namespaces, seccomp, a Landlock shim, cgroups and
// rlimits), elsewhere a plain subprocess with rlimits only; the supervisor
// that starts, watches and reaps it; and the timeouts from the skill's budget.
//
// Only the host probe exists yet: [Probe] measures what this machine can
// enforce, for `skillrun doctor` and for choosing the isolation level.
package runtime
