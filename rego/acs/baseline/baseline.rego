# Baseline guardrails: destructive shell commands, tool and MCP allow/deny lists, workspace confinement.
package acs.baseline

import data.acs.lib

cfg := lib.config.baseline

# Command strings of a step: the shell-style raw_command, and command-like arguments of shell tools.
commands contains lib.payload.raw_command if is_string(lib.payload.raw_command)

commands contains v if {
	lib.tool_name in cfg.shell_tools
	some name in cfg.command_argument_names
	v := lib.argument_values[name]
	is_string(v)
}

# One alternation of every configured pattern, each in its own group (so inline flags like `(?i)` stay
# scoped to it): a command matches it exactly when it matches one of the patterns, and costs one regex
# host call instead of one per pattern.
destructive_pattern := concat("", ["(?:", concat(")|(?:", cfg.destructive_shell_patterns), ")"]) if count(cfg.destructive_shell_patterns) > 0

destructive_matches contains cmd if {
	some cmd in commands
	may_be_destructive(cmd)
	regex.match(destructive_pattern, cmd)
}

# Pre-filter (data: baseline.destructive_prefilters): lower-case literals, one of which every destructive
# pattern needs (`rm` and a space, `mkfs`, `/dev/`, `push`, `drop` …). They are looked for in the lower-cased
# command with the Wasm-native `lower` and `contains`, so `ls -la` or `npm test` costs no regex host call.
# Lower-casing only adds occurrences, so case-sensitive patterns stay covered and `(?i)drop` is too. Without
# the list (absent, or not an array) every command runs the regex; editing a pattern means keeping one of
# its literals in the list.
may_be_destructive(_) if not is_array(object.get(cfg, "destructive_prefilters", null))

may_be_destructive(cmd) if {
	lowered := lower(cmd)
	some lit in cfg.destructive_prefilters
	contains(lowered, lit)
}

# METADATA
# title: Destructive shell commands are blocked
# description: A command matching a destructive pattern (rm -rf /, mkfs, dd to a device, fork bomb, ...) is denied.
# custom:
#   policy_id: acs.baseline
#   policy_name: Baseline guardrails
#   rule_id: baseline.destructive_shell
#   reason_code: destructive_shell_command_blocked
findings contains {
	"disposition": "deny",
	"reason_code": "destructive_shell_command_blocked",
	"reasoning": sprintf("destructive shell command blocked: %s", [concat(" | ", sort(destructive_matches))]),
	"policy_id": "acs.baseline",
	"policy_name": "Baseline guardrails",
	"rule_id": "baseline.destructive_shell",
	"paradigm": "baseline",
	"policy_data": {"commands": sort(destructive_matches)},
} if count(destructive_matches) > 0

# METADATA
# title: Denied tools
# custom:
#   policy_id: acs.baseline
#   policy_name: Baseline guardrails
#   rule_id: baseline.tool_denylist
#   reason_code: tool_denied
findings contains {
	"disposition": "deny",
	"reason_code": "tool_denied",
	"reasoning": sprintf("tool %s is on the deny list", [lib.tool_name]),
	"policy_id": "acs.baseline",
	"policy_name": "Baseline guardrails",
	"rule_id": "baseline.tool_denylist",
	"paradigm": "baseline",
	"policy_data": {"tool": lib.tool_name},
} if lib.tool_name in cfg.tool_denylist

# METADATA
# title: Tools outside the allow list
# description: When the allow list is non-empty, every other tool is denied.
# custom:
#   policy_id: acs.baseline
#   policy_name: Baseline guardrails
#   rule_id: baseline.tool_allowlist
#   reason_code: tool_not_allowed
findings contains {
	"disposition": "deny",
	"reason_code": "tool_not_allowed",
	"reasoning": sprintf("tool %s is not on the allow list", [lib.tool_name]),
	"policy_id": "acs.baseline",
	"policy_name": "Baseline guardrails",
	"rule_id": "baseline.tool_allowlist",
	"paradigm": "baseline",
	"policy_data": {"tool": lib.tool_name},
} if {
	count(cfg.tool_allowlist) > 0
	lib.is_tool_call
	not lib.tool_name in cfg.tool_allowlist
}

# METADATA
# title: Denied MCP methods and tools
# custom:
#   policy_id: acs.baseline
#   policy_name: Baseline guardrails
#   rule_id: baseline.mcp_denylist
#   reason_code: mcp_denied
findings contains {
	"disposition": "deny",
	"reason_code": "mcp_denied",
	"reasoning": sprintf("MCP method %s is on the deny list", [lib.mcp_method]),
	"policy_id": "acs.baseline",
	"policy_name": "Baseline guardrails",
	"rule_id": "baseline.mcp_denylist",
	"paradigm": "baseline",
	"policy_data": {"mcp_method": lib.mcp_method},
} if lib.mcp_method in cfg.mcp_method_denylist

findings contains {
	"disposition": "deny",
	"reason_code": "mcp_denied",
	"reasoning": sprintf("MCP tool %s is on the deny list", [lib.tool_name]),
	"policy_id": "acs.baseline",
	"policy_name": "Baseline guardrails",
	"rule_id": "baseline.mcp_denylist",
	"paradigm": "baseline",
	"policy_data": {"mcp_tool": lib.tool_name},
} if {
	lib.is_mcp_tool_call
	lib.tool_name in cfg.mcp_tool_denylist
}

under_root(p) if {
	some root in cfg.workspace_roots
	p == root
}

# Each root as a directory prefix ("/workspace/"), computed once per evaluation rather than per path.
root_prefixes := {concat("", [trim_suffix(root, "/"), "/"]) | some root in cfg.workspace_roots}

under_root(p) if {
	some prefix in root_prefixes
	startswith(p, prefix)
}

escapes_workspace(p) if {
	startswith(p, "/")
	not under_root(p)
}

escapes_workspace(p) if startswith(p, "~")

# A `..` path segment: what the regex `(^|/)\.\.(/|$)` matches, decided inside the Wasm module (split and
# `in` are native), so a path costs no regex host call. Only paths holding ".." are split.
escapes_workspace(p) if dotdot_segment(p)

dotdot_segment(p) if {
	contains(p, "..")
	".." in split(p, "/")
}

outside_paths contains {"argument": name, "path": p} if {
	cfg.enforce_workspace_roots
	some name in cfg.path_argument_names
	p := lib.argument_values[name]
	is_string(p)
	escapes_workspace(p)
}

# METADATA
# title: Paths outside the workspace roots
# description: Path-like tool arguments must stay under a configured workspace root (no absolute escape, no .., no ~).
# custom:
#   policy_id: acs.baseline
#   policy_name: Baseline guardrails
#   rule_id: baseline.workspace_paths
#   reason_code: path_outside_workspace
findings contains {
	"disposition": "deny",
	"reason_code": "path_outside_workspace",
	"reasoning": sprintf("path argument outside the workspace roots: %s", [concat(", ", sort([sprintf("%s=%s", [o.argument, o.path]) | some o in outside_paths]))]),
	"policy_id": "acs.baseline",
	"policy_name": "Baseline guardrails",
	"rule_id": "baseline.workspace_paths",
	"paradigm": "baseline",
	"policy_data": {"paths": sort([o.path | some o in outside_paths]), "workspace_roots": cfg.workspace_roots},
} if count(outside_paths) > 0
