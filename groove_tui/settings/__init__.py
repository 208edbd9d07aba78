"""Settings: groove.toml parsed into frozen dataclasses (`config`), written back as fragments (`fragment`),
where files live (`paths`) and the languages a model may declare (`languages`). Stdlib and platformdirs only:
nothing here imports the engine, the commands or the explorer. Nothing is re-exported; import the module."""
