package acs.budgets_test

import data.acs.budgets
import data.acs.testlib

empty_prov := {"trust": {}, "lineage": {}, "records": {}}

counters(turn_calls, total, per_minute, deferrals) := {
	"turn_tool_calls": turn_calls,
	"tool_calls_total": total,
	"tool_calls_last_minute": per_minute,
	"tool_calls_last_minute_by_tool": {"http.get": per_minute},
	"deferrals": deferrals,
}

call(c) := testlib.tool_call_in("http.get", {}, testlib.session(empty_prov, testlib.no_taint, 1, c, testlib.no_skills))

test_within_budget_passes if {
	fs := budgets.findings with input as call(counters(3, 10, 3, 0))
	count(fs) == 0
}

test_turn_budget_exceeded_is_rate_limited if {
	fs := budgets.findings with input as call(counters(51, 60, 3, 0))
	some f in fs
	f.disposition == "deny"
	f.reason_code == "rate_limited"
	f.policy_data.exceeded[0].budget == "tool_calls_per_turn"
}

test_per_minute_budget_per_tool if {
	fs := budgets.findings with input as call(counters(3, 10, 6, 0)) with data.acs_config.budgets.max_tool_calls_per_minute_by_tool as {"http.get": 5}
	some f in fs
	f.policy_data.exceeded[0].budget == "tool_calls_per_minute:http.get"
}

test_defer_when_configured if {
	fs := budgets.findings with input as call(counters(3, 10, 61, 0)) with data.acs_config.budgets.over_budget_disposition as "defer"
	some f in fs
	f.disposition == "defer"
	f.defer_details.timeout_decision == "deny"
	f.defer_details.resolution_timeout_ms == 60000
}

test_deferral_bound_turns_defer_into_deny if {
	fs := budgets.findings with input as call(counters(3, 10, 61, 3)) with data.acs_config.budgets.over_budget_disposition as "defer"
	some f in fs
	f.disposition == "deny"
}
