# The peers suite's OPA policy: the same tool call the sidecar decides, written as Rego (OPA v1 syntax).
# data.leviath (written by bench/peers-sidecar.ts from the same entries the sidecar is given):
#   permissions: tool -> "allow" | "deny"           (the config's [tool_permissions])
#   entries:     [{kind: "exact", path, prefix} | {kind: "glob", pattern} | {kind: "regex", pattern}]
#                                                     (the 50 declared-and-granted read-path entries, ~ expanded)
#   allowlist:   [{tool, to: [host globs], max: level}] (outbound allowlist with its clearance)
# input: {tool, args: {path} | {url}, taint: "public" | "internal" | "private"} (the caller tracks the taint).
# Everything is lexical: no realpath, no `..` folding, no file is read and nothing is audited.
package leviath

levels := {"public": 0, "internal": 1, "private": 2}

default decision := {"decision": "deny", "code": "unknown-tool"}

decision := {"decision": "deny", "code": "permission-denied"} if data.leviath.permissions[input.tool] == "deny"

decision := read_decision if {
	data.leviath.permissions[input.tool] == "allow"
	input.tool == "read_file"
}

decision := outbound_decision if {
	data.leviath.permissions[input.tool] == "allow"
	input.tool == "http_post"
}

# --- read_file: the first of the entries that matches the path, and the taint the read raises the context to ---
entry_matches(e, path) if {
	e.kind == "exact"
	path == e.path
}

entry_matches(e, path) if {
	e.kind == "exact"
	startswith(path, e.prefix)
}

entry_matches(e, path) if {
	e.kind == "glob"
	glob.match(e.pattern, ["/"], path)
}

entry_matches(e, path) if {
	e.kind == "regex"
	regex.match(e.pattern, path)
}

matching contains i if {
	some i, e in data.leviath.entries
	entry_matches(e, input.args.path)
}

default read_decision := {"decision": "deny", "code": "not-declared"}

read_decision := {"decision": "allow", "entry": min(matching), "taint": "private"} if count(matching) > 0

# --- http_post: a clean context goes out; a tainted one needs an allowlist rule whose clearance covers it ---
target := split(split(input.args.url, "://")[1], "/")[0]

default outbound_decision := {"decision": "prompt", "code": "taint-blocked"}

outbound_decision := {"decision": "run", "target": target} if levels[input.taint] == 0

outbound_decision := {"decision": "run", "target": target} if {
	levels[input.taint] > 0
	some rule in data.leviath.allowlist
	rule.tool == input.tool
	some pattern in rule.to
	glob.match(pattern, ["."], target)
	levels[input.taint] <= levels[rule.max]
}
