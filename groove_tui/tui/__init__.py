"""The Textual explorer. Import `groove_tui.tui.app` for `run` and `GrooveApp`; this package imports
nothing heavy at module level."""

import os

# Textual paints a changed screen at the next tick of a timer running at TEXTUAL_FPS (60 by default), so
# a keystroke's results wait for up to two such ticks (the query box's, then the results'): at 120, half
# as long, with the same paints (the timer runs only while something waits to be painted). Read when
# Textual is first imported; a value the user set wins.
os.environ.setdefault("TEXTUAL_FPS", "120")
