package invocation

// SupervisorAlive reports whether an active invocation's supervisor still
// runs. It is the rule GC uses to decide what to collect, so what
// `skillrun broker status` calls stale is exactly what `skillrun gc` will
// collect.
func SupervisorAlive(pid int) bool { return alive(pid) }
