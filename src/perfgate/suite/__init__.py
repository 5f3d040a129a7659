"""The pytest suite: the plugin, its session state, options, selection, live and replay modes."""
