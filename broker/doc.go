// Package broker is the capability broker of one invocation: it owns the
// invocation's Unix socket and answers the skill's JSON-RPC calls —
// tool.list, broker.status and tool.call — checking every tool call against
// the invocation's Enforcer, in the order of DESIGN §6, before a tool runs.
//
// # Socket
//
// Listen creates the socket with mode 0600 and the requested owner without a
// moment where it is more open, and never unlinks a path it did not create:
// an existing path is a collision, and Close removes the socket only if the
// file at the path is still the one Listen made.
//
// # A tool call
//
//  1. CheckTool: allowed, disallowed, or a tool no registry here provides.
//  2. Argument checks: a tool that exercises a capability (files, memory,
//     network, exec) implements Preparer; Prepare checks its arguments with
//     the Enforcer and returns them rewritten to what was checked (for file
//     tools, the real path). New refuses a registry holding such a tool
//     without Prepare, so no scoped tool can run unchecked.
//  3. Dispatch: Invoke with the prepared arguments.
//
// Denials are *enforce.Denial errors, which the jsonrpc server sends as
// -32603 with the reason; a tool that ran and failed (file not found) is a
// ToolError. Every step is recorded through the Auditor, which never sees
// raw arguments, only the SHA-256 of their canonical JSON.
//
// # Telemetry
//
// Every call is a skill.broker.tool_call span, and a dispatched call's
// tool runs in a skill.tool.<tool>.exec span under it (otel.go lists the
// attributes and metrics). The call's audit call_id is that span's id and
// its trace_id the span's trace, whether or not tracing is on: without it
// the spans are not recorded but still get ids (telemetry.Tracer).
package broker
