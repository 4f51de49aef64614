package broker

// The payloads of the broker's audit rows (see Auditor). Each struct lists
// its members in the order of their names, the order in which json.Marshal
// writes the keys of a map, so that it encodes to the same bytes as the
// map fields returns (TestRowsEncodeAsMaps).

// callFields are the members every row of a call has.
type callFields struct {
	CallID       string
	InvocationID string
	SkillID      string
	TenantID     string
	ToolName     string
	TraceID      string
}

// auditRow is the payload of one of the broker's rows.
type auditRow interface {
	setCall(callFields)
	// fields is the payload as the map Auditor.Record takes.
	fields() map[string]any
}

func (f callFields) into(m map[string]any) map[string]any {
	m["call_id"] = f.CallID
	m["invocation_id"] = f.InvocationID
	m["skill_id"] = f.SkillID
	m["tenant_id"] = f.TenantID
	m["tool_name"] = f.ToolName
	m["trace_id"] = f.TraceID
	return m
}

// startedRow is skill.tool_call_started.
type startedRow struct {
	ArgsHash     string `json:"args_hash"`
	CallID       string `json:"call_id"`
	InvocationID string `json:"invocation_id"`
	SkillID      string `json:"skill_id"`
	TenantID     string `json:"tenant_id"`
	ToolName     string `json:"tool_name"`
	TraceID      string `json:"trace_id"`
}

func (r *startedRow) setCall(f callFields) {
	r.CallID, r.InvocationID, r.SkillID, r.TenantID, r.ToolName, r.TraceID = f.CallID, f.InvocationID, f.SkillID, f.TenantID, f.ToolName, f.TraceID
}

func (r *startedRow) fields() map[string]any {
	return callFields{r.CallID, r.InvocationID, r.SkillID, r.TenantID, r.ToolName, r.TraceID}.into(map[string]any{
		"args_hash": r.ArgsHash,
	})
}

// completedRow is skill.tool_call_completed.
type completedRow struct {
	ArgsHash        string `json:"args_hash"`
	ArgsSizeBytes   int    `json:"args_size_bytes"`
	CallID          string `json:"call_id"`
	DurationMS      int64  `json:"duration_ms"`
	InvocationID    string `json:"invocation_id"`
	Outcome         string `json:"outcome"`
	ResultSizeBytes int    `json:"result_size_bytes"`
	SkillID         string `json:"skill_id"`
	TenantID        string `json:"tenant_id"`
	ToolName        string `json:"tool_name"`
	TraceID         string `json:"trace_id"`
}

func (r *completedRow) setCall(f callFields) {
	r.CallID, r.InvocationID, r.SkillID, r.TenantID, r.ToolName, r.TraceID = f.CallID, f.InvocationID, f.SkillID, f.TenantID, f.ToolName, f.TraceID
}

func (r *completedRow) fields() map[string]any {
	return callFields{r.CallID, r.InvocationID, r.SkillID, r.TenantID, r.ToolName, r.TraceID}.into(map[string]any{
		"args_hash":         r.ArgsHash,
		"outcome":           r.Outcome,
		"duration_ms":       r.DurationMS,
		"args_size_bytes":   r.ArgsSizeBytes,
		"result_size_bytes": r.ResultSizeBytes,
	})
}

// deniedRow is skill.tool_denied.
type deniedRow struct {
	AttemptedArgsHash string `json:"attempted_args_hash"`
	CallID            string `json:"call_id"`
	InvocationID      string `json:"invocation_id"`
	Reason            string `json:"reason"`
	SkillID           string `json:"skill_id"`
	TenantID          string `json:"tenant_id"`
	ToolName          string `json:"tool_name"`
	TraceID           string `json:"trace_id"`
}

func (r *deniedRow) setCall(f callFields) {
	r.CallID, r.InvocationID, r.SkillID, r.TenantID, r.ToolName, r.TraceID = f.CallID, f.InvocationID, f.SkillID, f.TenantID, f.ToolName, f.TraceID
}

func (r *deniedRow) fields() map[string]any {
	return callFields{r.CallID, r.InvocationID, r.SkillID, r.TenantID, r.ToolName, r.TraceID}.into(map[string]any{
		"reason":              r.Reason,
		"attempted_args_hash": r.AttemptedArgsHash,
	})
}
