"""The explorer's widgets, one module each: results, the config pane, sliders, the metrics bar, status and
header lines, the detail and explain views. They reach the App as `self.app` (typed by `tui.shell`); nothing
is re-exported."""
