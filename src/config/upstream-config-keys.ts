// The keys upstream's config.toml defines in the tables `leviath import` reads key by key, from upstream's
// docs/schema/config.schema.json (github.com/GEMISIS/leviath at 64b6d6d4bdd139b76da2c69f603973e1653a5f8e). A key
// of these that the operator does not use is a warning, as upstream warns about a key nothing reads; a key that is
// none of these, nor ours, and is close to one the operator carries is a typo that would silently drop a setting,
// so it is refused (config-toml.ts).

/** Upstream's keys, by table (`""` is the top level). */
export const UPSTREAM_CONFIG_KEYS: Readonly<Record<"" | "security" | "limits" | "safe_commands", readonly string[]>> = {
  "": [
    "default_provider", "default_model", "agent_paths", "openrouter_api_key", "ollama_base_url", "request_timeout_secs", "taint_tracking",
    "batch_tool_hint", "shell_hint", "providers", "limits", "security", "webhook", "observability", "nudge", "title", "sandbox",
    "tool_permissions", "agent_tool_permissions", "tool_script_permissions", "agent_read_paths", "safe_commands", "agent_safe_commands",
    "rate_limits", "model_capabilities", "model_providers", "mcp_servers",
  ],
  security: [
    "allowed_workdirs", "allow_seed_commands", "allow_local_network", "allow_env_vars", "allow_blueprint_read_paths",
    "allow_blueprint_safe_commands", "allow_blueprint_permissions", "shell_env", "shell_env_withhold", "read_paths", "credential_store",
  ],
  limits: [
    "max_concurrent_inferences", "max_concurrent_tools", "default_max_iterations", "exact_token_counting", "script_shell_timeout_secs",
    "mcp_idle_disconnect_secs", "stall_timeout_secs", "dead_cycles_before_relief", "finished_retention_secs", "wedge_timeout_secs",
    "provider_failures_before_open", "provider_circuit_cooldown_secs", "interaction_timeout_secs", "inference_retry_attempts",
    "inference_retry_base_ms", "max_tool_call_write_bytes", "max_run_write_bytes", "max_concurrent_inferences_by_model",
    "max_concurrent_inferences_by_provider",
  ],
  safe_commands: ["defaults", "tools", "shell"],
};
