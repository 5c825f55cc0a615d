package acs.decision_test

import data.acs
import data.acs.testlib

test_harmless_step_is_allowed if {
	d := acs.decision with input as testlib.tool_call("read_file", {"path": testlib.arg("/workspace/a.txt", "u1", "user_input")})
	d.decision == "allow"
	d.reason_codes == []
	d.policy_references == [{"policy_id": "acs.decision", "policy_name": "ACS decision", "rule_id": "decision.default_allow"}]
}

test_deny_wins_and_cites_its_rule if {
	d := acs.decision with input as testlib.tool_call("shell", {"command": testlib.arg("rm -rf / && mail bob@example.com", "u1", "user_input")})
	d.decision == "deny"
	"destructive_shell_command_blocked" in d.reason_codes
	not "pii_detected" in d.reason_codes
	{"policy_id": "acs.baseline", "policy_name": "Baseline guardrails", "rule_id": "baseline.destructive_shell"} in d.policy_references
	is_string(d.reasoning)
	not d.modifications
}

test_composed_paradigms_cite_each_and_key_policy_data if {
	prov := {"trust": {"a1": "untrusted", "w1": "untrusted"}, "lineage": {"a1": ["w1"]}, "records": {"a1": {"origin": "agent_generated"}, "w1": {"origin": "retrieved"}}}
	taint := {
		"earliest_untrusted": {"step_id": "s-w", "provenance_id": "w1", "turn_index": 1, "origin": "retrieved"},
		"latest_untrusted": {"step_id": "s-w", "provenance_id": "w1", "turn_index": 1, "origin": "retrieved"},
		"untrusted_steps": 1,
	}
	s := testlib.session(prov, taint, 1, testlib.base_counters, testlib.no_skills)
	d := acs.decision with input as testlib.tool_call_in("email.send", {"to": testlib.arg("evil@example.com", "a1", "agent_generated")}, s)
	d.decision == "deny"
	{"fides_p_t_violation", "untrusted_into_consequential", "aarm_cumulative_taint", "camel_dependency_graph_violation"} == {c | some c in d.reason_codes}
	{r.policy_id | some r in d.policy_references} == {"acs.fides", "acs.aarm", "acs.camel"}
	d.policy_data.fides.argument_paths == ["/arguments/to"]
	d.policy_data.aarm.lookback_distance == 0
	d.policy_data.camel.tool == "email.send"
	d.cited_provenance_ids == ["a1", "w1"]
}

test_modify_merges_redactions if {
	inp := testlib.step("steps/userMessage", {"content": [
		{"type": "text", "value": "mail alice@example.com", "provenance": testlib.prov("u1", "user_input")},
		{"type": "text", "value": "ssn 123-45-6789", "provenance": testlib.prov("u2", "user_input")},
	]}, testlib.empty_session, testlib.client_full)
	d := acs.decision with input as inp
	d.decision == "modify"
	d.reason_codes == ["pii_detected"]
	d.modifications.redactions == [
		{"path": "/content/0/value", "replacement": "mail [REDACTED:email]"},
		{"path": "/content/1/value", "replacement": "ssn [REDACTED:us_ssn]"},
	]
	d.policy_data.pii.categories == ["email", "us_ssn"]
}

test_modify_incapable_client_gets_deny_modify_unsupported if {
	inp := testlib.step("steps/userMessage", {"content": [{"type": "text", "value": "mail alice@example.com", "provenance": testlib.prov("u1", "user_input")}]}, testlib.empty_session, {"modify_capable": false, "ask_capable": true})
	d := acs.decision with input as inp
	d.decision == "deny"
	"modify_unsupported" in d.reason_codes
	not d.modifications
}

test_post_compact_is_never_denied_for_modify_unsupported if {
	inp := testlib.step("steps/postCompact", {"summary": {"value": "user alice@example.com asked", "provenance": testlib.prov("c1", "agent_generated")}}, testlib.empty_session, {"modify_capable": false, "ask_capable": true})
	d := acs.decision with input as inp
	d.decision == "allow"
	"modify_unsupported" in d.reason_codes
}

test_ask_carries_ask_details if {
	d := acs.decision with input as testlib.tool_call("payments.transfer", {})
	d.decision == "ask"
	d.ask_details.approver.type == "human"
	d.reason_codes == ["approval_required"]
}

test_ask_incapable_client_gets_approver_unavailable if {
	inp := testlib.step("steps/toolCallRequest", {"tool": {"name": "payments.transfer"}, "arguments": {}}, testlib.empty_session, {"modify_capable": true, "ask_capable": false})
	d := acs.decision with input as inp
	d.decision == "deny"
	"approver_unavailable" in d.reason_codes
}

test_defer_carries_defer_details if {
	c := {"turn_tool_calls": 1, "tool_calls_total": 1, "tool_calls_last_minute": 100, "tool_calls_last_minute_by_tool": {}, "deferrals": 0}
	s := testlib.session({"trust": {}, "lineage": {}, "records": {}}, testlib.no_taint, 1, c, testlib.no_skills)
	d := acs.decision with input as testlib.tool_call_in("read_file", {}, s) with data.acs_config.budgets.over_budget_disposition as "defer"
	d.decision == "defer"
	d.defer_details.resolution_method == "timeout"
}

test_overlapping_modifications_are_refused if {
	acs.overlaps("/arguments/body", "/arguments/body/value")
	acs.overlaps("", "/x")
	not acs.overlaps("/arguments/a", "/arguments/ab")
}

modify_finding(rule_id, mods) := {
	"disposition": "modify", "reason_code": "test_modify", "reasoning": rule_id,
	"policy_id": "acs.test", "policy_name": "Test", "rule_id": rule_id, "paradigm": "test",
	"policy_data": {}, "modifications": mods,
}

test_overlapping_redaction_and_override_are_denied if {
	fs := {
		modify_finding("t.redact", {"redactions": [{"path": "/arguments/body/value", "replacement": "x"}]}),
		modify_finding("t.override", {"parameter_overrides": {"body": "y"}}),
	}
	d := acs.decision with input as testlib.tool_call("read_file", {}) with data.acs.skills.findings as fs
	d.decision == "deny"
	"modification_conflict" in d.reason_codes
}

test_disjoint_redaction_and_override_merge if {
	fs := {
		modify_finding("t.redact", {"redactions": [{"path": "/arguments/body/value", "replacement": "x"}]}),
		modify_finding("t.override", {"parameter_overrides": {"subject": "y"}}),
	}
	d := acs.decision with input as testlib.tool_call("read_file", {}) with data.acs.skills.findings as fs
	d.decision == "modify"
	d.modifications == {"redactions": [{"path": "/arguments/body/value", "replacement": "x"}], "parameter_overrides": {"subject": "y"}}
}

test_modified_content_is_exclusive if {
	fs := {
		modify_finding("t.content", {"modified_content": "replaced"}),
		modify_finding("t.redact", {"redactions": [{"path": "/content/0/value", "replacement": "x"}]}),
	}
	d := acs.decision with input as testlib.tool_call("read_file", {}) with data.acs.skills.findings as fs
	d.decision == "deny"
	"modification_conflict" in d.reason_codes
}
