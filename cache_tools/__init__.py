"""Where jitdtypes keeps what it generates and learns, and the tools to inspect and clean it."""
