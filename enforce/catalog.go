package enforce

import "strings"

// Capability is a kind of effect a tool has on the world. Each tool
// declares the kinds it exercises, so the policy can reason about a tool it
// has never seen (an MCP tool) and the ledger can record what was used.
type Capability string

const (
	CapFileRead    Capability = "file.read"
	CapFileWrite   Capability = "file.write"
	CapMemoryRead  Capability = "memory.read"
	CapMemoryWrite Capability = "memory.write"
	CapNetwork     Capability = "network"
	CapExec        Capability = "exec"
)

// ToolSpec is what the policy needs to know of a tool.
type ToolSpec struct {
	Name         string
	Capabilities []Capability
}

// Catalog answers which tools exist. The tools package's registry is the
// real one; the policy depends only on this interface.
type Catalog interface {
	Lookup(name string) (ToolSpec, bool)
}

// foreignTools are tools of other agent hosts that public skills name. They
// are not provided here: declaring one is a warning, calling it gets
// unknown_tool. The list is Claude Code's, as found in public skills.
var foreignTools = map[string]bool{
	"Task": true, "Agent": true, "AskUserQuestion": true, "TodoRead": true, "TodoWrite": true,
	"TaskCreate": true, "TaskUpdate": true, "TaskList": true, "TaskGet": true, "TaskOutput": true, "TaskStop": true,
	"SendMessage": true, "WebSearch": true, "LSP": true, "Workflow": true, "NotebookEdit": true, "NotebookRead": true,
	"LS": true, "List": true, "MultiEdit": true, "KillShell": true, "KillBash": true, "BashOutput": true,
	"Skill": true, "SlashCommand": true, "ToolSearch": true, "ExitPlanMode": true, "EnterPlanMode": true,
	"ListMcpResourcesTool": true, "ReadMcpResourceTool": true,
}

// Claude Code names that map onto a native tool here.
const (
	webFetchTool  = "WebFetch"
	httpFetchTool = "HttpFetch"
	bashTool      = "Bash"
)

// writeTools are the tools whose grant turns x-allowed-files write access on.
var writeTools = []string{"Write", "Edit"}

// mcpServer returns the server part of an mcp__server__tool name.
func mcpServer(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", false
	}
	server, _, ok := strings.Cut(rest, "__")
	return server, ok && server != ""
}
