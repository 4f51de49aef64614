//go:build !linux

package runtime

// RemoveCgroup does nothing where there are no cgroups.
func RemoveCgroup(string) error { return nil }

// DestroyContainer does nothing where there are no containers.
func DestroyContainer(string, string) error { return nil }
