"""Keys and commands: the App's global bindings and when each applies, the footer's order, the palette."""
