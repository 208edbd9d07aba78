"""The explorer's screens, one module each. To add one (a chart, a per-query table):

1. the Screen here, in its own module, with its `BINDINGS` (ids, tooltips) and `BINDING_GROUP_TITLE`,
   and its class in screens/help.py's `binding_rows` groups so F1 lists its keys;
2. the action that opens it on the App part whose state it shows (golden/metrics.py for views of the
   golden set), or in a new mixin module in the package of its concern, listed in app.py and in pyproject.toml's
   import-linter contracts, when it brings workers and state of its own;
3. a global key, if any, in tui/keys/bindings.py (APP_BINDINGS; `check_action` there if it applies only
   sometimes);
4. a palette entry in tui/keys/commands.py, prefixed by its area ("view:", "eval:", …).
"""
