package landlock

// FSRule is one Landlock path rule. A Dir rule covers everything beneath.
type FSRule struct {
	Path   string `json:"path"`
	Dir    bool   `json:"dir"`
	Read   bool   `json:"read"`
	Write  bool   `json:"write"`
	Exec   bool   `json:"exec"`
	Origin string `json:"origin"` // "system", "skill", or the declared glob it serves
}

// Plan is the Landlock ruleset the shim applies before exec: the part of
// the grant plan (enforce.Plan) that Landlock enforces.
type Plan struct {
	Rules          []FSRule `json:"rules"`
	DenyTCPBind    bool     `json:"deny_tcp_bind"`    // ABI ≥ 4
	DenyTCPConnect bool     `json:"deny_tcp_connect"` // ABI ≥ 4
	ScopeAbstract  bool     `json:"scope_abstract_unix"`
	ScopeSignal    bool     `json:"scope_signal"` // ABI ≥ 6
	HostABI        int      `json:"host_abi"`
}
