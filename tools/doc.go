// Package tools holds the Tool interface, the one registry tools are listed
// in at startup, and the native tools' descriptions: name, purpose, the
// JSON Schema of their arguments (what tool.list returns, as MCP does) and
// the capability kinds each exercises, so the policy can reason about it.
package tools
