package tools

import (
	"encoding/json"

	"github.com/skillrun/skillrun/enforce"
)

// NativeSpecs describes the eleven native tools of DESIGN §6. The argument
// schemas are what tool.list returns; additionalProperties is false so a
// misspelt argument is a -32602 error, not a silently ignored field.
func NativeSpecs() []Spec {
	return []Spec{
		{"Bash", "Run a shell command inside the invocation's own sandbox.",
			schema(`{"command":{"type":"string"},"timeout_ms":{"type":"integer","minimum":1}}`, "command"),
			[]enforce.Capability{enforce.CapExec}},
		{"Read", "Read a file allowed by x-allowed-files.",
			schema(`{"path":{"type":"string"},"offset":{"type":"integer","minimum":0},"limit":{"type":"integer","minimum":0}}`, "path"),
			[]enforce.Capability{enforce.CapFileRead}},
		{"Write", "Write a file allowed by x-allowed-files.",
			schema(`{"path":{"type":"string"},"body":{"type":"string"}}`, "path", "body"),
			[]enforce.Capability{enforce.CapFileWrite}},
		{"Edit", "Replace an exact string in a file allowed by x-allowed-files.",
			schema(`{"path":{"type":"string"},"old":{"type":"string"},"new":{"type":"string"},"replace_all":{"type":"boolean"}}`, "path", "old", "new"),
			[]enforce.Capability{enforce.CapFileRead, enforce.CapFileWrite}},
		{"Glob", "List allowed files matching a glob.",
			schema(`{"pattern":{"type":"string"}}`, "pattern"),
			[]enforce.Capability{enforce.CapFileRead}},
		{"Grep", "Search allowed files with an RE2 pattern.",
			schema(`{"pattern":{"type":"string"},"path":{"type":"string"},"glob":{"type":"string"},"max_results":{"type":"integer","minimum":1}}`, "pattern", "path"),
			[]enforce.Capability{enforce.CapFileRead}},
		{"MemoryRead", "Read a memory row in an allowed scope.",
			schema(`{"path":{"type":"string"}}`, "path"),
			[]enforce.Capability{enforce.CapMemoryRead}},
		{"MemorySearch", "Full-text search over memory rows in allowed scopes.",
			schema(`{"query":{"type":"string"},"path":{"type":"string"},"limit":{"type":"integer","minimum":1}}`, "query"),
			[]enforce.Capability{enforce.CapMemoryRead}},
		{"MemoryEmit", "Write a memory row in an allowed scope.",
			schema(`{"path":{"type":"string"},"body":{"type":"string"}}`, "path", "body"),
			[]enforce.Capability{enforce.CapMemoryWrite}},
		{"HttpFetch", "GET a URL on an allowed host.",
			schema(`{"url":{"type":"string"},"headers":{"type":"object","additionalProperties":{"type":"string"}}}`, "url"),
			[]enforce.Capability{enforce.CapNetwork}},
		{"HttpPost", "POST a body to a URL on an allowed host.",
			schema(`{"url":{"type":"string"},"body":{"type":"string"},"headers":{"type":"object","additionalProperties":{"type":"string"}}}`, "url", "body"),
			[]enforce.Capability{enforce.CapNetwork}},
	}
}

func schema(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	return json.RawMessage(`{"type":"object","properties":` + props + `,"required":` + string(req) + `,"additionalProperties":false}`)
}
