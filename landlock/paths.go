package landlock

// The fixed paths inside every sandbox: the Landlock ruleset, the shim and
// the grant plan (enforce re-exports them) all name these.
const (
	// SocketPath is where the broker socket appears.
	SocketPath = "/run/skillrun/broker.sock"
	// ShimPath is skillrun's own static shim binary, the container process
	// that applies Landlock and execs the entrypoint.
	ShimPath = "/run/skillrun/shim"
	// ShimConfigPath is the shim's configuration, read before Landlock.
	ShimConfigPath = "/run/skillrun/shim.json"
	// SkillPath is where the skill folder appears, read-only, and the
	// entrypoint's working directory. A fixed path, not the folder's own:
	// a declared directory holding the folder (x-allowed-files: /tmp/** with
	// the skill under /tmp) would otherwise show the host's modes of the
	// folders above it, and cover the skill with its own noexec mount.
	SkillPath = "/skill"
)
