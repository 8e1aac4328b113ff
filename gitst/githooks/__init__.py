"""gitst's git hooks: the installer, the hook entry points and what each hook checks."""
