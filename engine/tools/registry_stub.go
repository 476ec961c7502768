package tools

// Temporary until the built-in tools land: no tools.

// Lookup returns the built-in tool of that name.
func Lookup(name string) (Tool, bool) { return nil, false }

// Names lists the built-in tools.
func Names() []string { return nil }

// Mutating reports whether the tool writes or runs code.
func Mutating(name string) bool { return name == "Write" || name == "Edit" || name == "Bash" }
