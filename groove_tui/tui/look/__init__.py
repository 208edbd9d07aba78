"""How things look: engine data as Rich text, the explain trace, themes and the breakpoints."""
