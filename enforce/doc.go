// Package enforce is skillrun's policy: what a skill may do, decided from
// what it declared, and nothing else.
//
// # From declaration to checks
//
// Declare reads a manifest's capability fields against a tool catalog:
// Claude Code spellings map onto native tools (WebFetch(domain:x) becomes
// HttpFetch plus a host glob), tools of other agent hosts are kept as
// warnings, a typo is an error. Compile turns the declaration into an
// Enforcer once per invocation; its checks are what the broker runs, in
// order, on every tool call:
//
//   - CheckTool: disallowed wins over allowed; default deny.
//   - CheckMemoryPath: lexical canonicalisation first (no '..' above the
//     root, no NUL, no encoded dots), then the scope globs.
//   - CheckFile / CheckFilePath: the real path, symlinks resolved, against
//     x-allowed-files; the tool then opens exactly that path refusing
//     symlinks, so a swap between check and use fails.
//   - CheckURL: http/https only, host lowercased, IDNA-normalised, trailing
//     dot removed, then the domain globs.
//   - CheckBash: the command parsed by a real shell parser; every simple
//     command in it, including those in substitutions, must be allowed, or
//     one exact rule must cover the whole string.
//
// Every refusal is a *Denial carrying a Reason; errors.Is matches it
// against the sentinels in errors.go, on either side of the socket.
//
// # The grant plan
//
// MakePlan derives every enforced grant of an invocation — mounts,
// Landlock rules, limits, namespaces — as plain data, and Verify proves
// each grant is subsumed by a declared capability, the fixed system table,
// or an operator limit. A grant wider than its declaration is a
// *LoaderDefect: skillrun refuses to start and never blames the skill.
// For example x-allowed-files: ["/data/*.csv"] becomes one Landlock rule
// per matching file, never a rule on /data.
package enforce
