# Budgets: tool calls per turn, per session and per minute (overall and per tool). Over budget ⇒ deny
# `rate_limited`, or defer when configured — until the session's deferral bound is reached (§6).
package acs.budgets

import data.acs.lib

cfg := lib.config.budgets

# The counters are read member by member (no alias of the whole object), so the engine sends only these
# members (manifest input_paths).

exceeded contains {"budget": "tool_calls_per_turn", "used": input.session.turn.tool_call_count, "limit": cfg.max_tool_calls_per_turn} if {
	lib.is_tool_call
	input.session.turn.tool_call_count > cfg.max_tool_calls_per_turn
}

exceeded contains {"budget": "tool_calls_per_session", "used": input.session.counters.tool_calls_total, "limit": cfg.max_tool_calls_per_session} if {
	lib.is_tool_call
	input.session.counters.tool_calls_total > cfg.max_tool_calls_per_session
}

exceeded contains {"budget": "tool_calls_per_minute", "used": input.session.counters.tool_calls_last_minute, "limit": cfg.max_tool_calls_per_minute} if {
	lib.is_tool_call
	input.session.counters.tool_calls_last_minute > cfg.max_tool_calls_per_minute
}

exceeded contains {"budget": concat("", ["tool_calls_per_minute:", lib.tool_name]), "used": used, "limit": limit} if {
	lib.is_tool_call
	limit := cfg.max_tool_calls_per_minute_by_tool[lib.tool_name]
	used := object.get(input.session.counters.tool_calls_last_minute_by_tool, lib.tool_name, 0)
	used > limit
}

over_budget if count(exceeded) > 0

may_defer if {
	cfg.over_budget_disposition == "defer"
	input.session.counters.deferrals < cfg.max_deferrals_per_session
}

budget_data := {"exceeded": sort([e | some e in exceeded]), "deferrals": input.session.counters.deferrals}

summary := concat(", ", sort([sprintf("%s %d/%d", [e.budget, e.used, e.limit]) | some e in exceeded]))

# METADATA
# title: Budget exceeded
# description: Deny a tool call over a configured budget (also once the deferral bound is reached).
# custom:
#   policy_id: acs.budgets
#   policy_name: Budgets and rate limits
#   rule_id: budgets.rate_limited
#   reason_code: rate_limited
findings contains {
	"disposition": "deny",
	"reason_code": "rate_limited",
	"reasoning": sprintf("budget exceeded: %s", [summary]),
	"policy_id": "acs.budgets",
	"policy_name": "Budgets and rate limits",
	"rule_id": "budgets.rate_limited",
	"paradigm": "budgets",
	"policy_data": budget_data,
} if {
	over_budget
	not may_defer
}

# METADATA
# title: Budget exceeded, deferred
# description: Defer a tool call over budget until the window frees up (bounded per session).
# custom:
#   policy_id: acs.budgets
#   policy_name: Budgets and rate limits
#   rule_id: budgets.defer
#   reason_code: rate_limited
findings contains {
	"disposition": "defer",
	"reason_code": "rate_limited",
	"reasoning": sprintf("budget exceeded, retry later: %s", [summary]),
	"policy_id": "acs.budgets",
	"policy_name": "Budgets and rate limits",
	"rule_id": "budgets.defer",
	"paradigm": "budgets",
	"policy_data": budget_data,
	"defer_details": {
		"reason": "pending_dependency",
		"resolution_method": "timeout",
		"resolution_timeout_ms": cfg.defer_resolution_timeout_ms,
		"timeout_decision": "deny",
	},
} if {
	over_budget
	may_defer
}
