"""Pure renderers: what the steps place or run (hostfile, ds_config.json, .deepspeed_env, argv, container spec, build context), from the configuration."""
