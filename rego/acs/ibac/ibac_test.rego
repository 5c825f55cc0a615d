package acs.ibac_test

import data.acs.ibac
import data.acs.testlib

test_capability_inside_intent_passes if {
	inp := testlib.tool_call_in("read_file", {}, testlib.session_with_intent(["filesystem.read"], "moderate"))
	fs := ibac.findings with input as inp
	count(fs) == 0
}

test_capability_outside_intent_asks_with_closest_match if {
	inp := testlib.tool_call_in("delete_file", {}, testlib.session_with_intent(["filesystem.read", "network.egress"], "moderate"))
	fs := ibac.findings with input as inp
	some f in fs
	f.disposition == "ask"
	f.reason_code == "ibac_intent_mismatch"
	f.policy_data.requested_capability == "filesystem.delete"
	f.policy_data.closest_match == "filesystem.read"
	f.ask_details.intent_extension.capabilities == ["filesystem.delete"]
	f.ask_details.timeout_seconds >= 1
}

test_declared_capability_wins_over_tool_mapping if {
	inp := testlib.step("steps/toolCallRequest", {"tool": {"name": "read_file"}, "capability": "filesystem.write", "arguments": {}}, testlib.session_with_intent(["filesystem.read"], "moderate"), testlib.client_full)
	fs := ibac.findings with input as inp
	some f in fs
	f.policy_data.requested_capability == "filesystem.write"
}

test_strict_scope_mode_denies if {
	inp := testlib.tool_call_in("delete_file", {}, testlib.session_with_intent(["filesystem.read"], "strict"))
	fs := ibac.findings with input as inp
	testlib.reason_codes(fs) == {"ibac_scope_mode_strict"}
	every f in fs {
		f.disposition == "deny"
	}
}

test_strict_scope_mode_denies_unknown_capability if {
	inp := testlib.tool_call_in("mystery_tool", {}, testlib.session_with_intent(["filesystem.read"], "strict"))
	fs := ibac.findings with input as inp
	"ibac_scope_mode_strict" in testlib.reason_codes(fs)
}

test_no_intent_means_no_ibac_findings if {
	fs := ibac.findings with input as testlib.tool_call("delete_file", {})
	count(fs) == 0
}

test_this_request_grant_covers_the_capability if {
	session := testlib.session_with_intent_and_approvals(["filesystem.read"], "moderate", [{"scope": "this_request", "capabilities": ["filesystem.delete"], "tool": "delete_file"}])
	fs := ibac.findings with input as testlib.tool_call_in("delete_file", {}, session)
	count(fs) == 0
}

test_deny_disposition_is_configurable if {
	inp := testlib.tool_call_in("delete_file", {}, testlib.session_with_intent(["filesystem.read"], "moderate"))
	fs := ibac.findings with input as inp with data.acs_config.ibac.mismatch_disposition as "deny"
	some f in fs
	f.disposition == "deny"
	f.reason_code == "ibac_intent_mismatch"
}

test_subagent_intent_exceeding_parent_is_denied if {
	inp := testlib.step("steps/subagentStart", {"subagent_session_id": "c", "intent_derivation": "derived_from_parent", "subagent_intent": {"parsed": ["filesystem.read", "network.egress"]}}, testlib.session_with_intent(["filesystem.read"], "moderate"), testlib.client_full)
	fs := ibac.findings with input as inp
	some f in fs
	f.policy_data.excess_capabilities == ["network.egress"]
}

intent_session(established) := {
	"id": "sess-1",
	"intent": {"parsed": ["filesystem.read"], "scope_mode": "moderate", "effective_capabilities": ["filesystem.read"], "established_step_id": established},
	"turn": {"id": "t1", "index": 1, "step_count": 1, "tool_call_count": 0},
	"approvals": [],
}

test_changing_an_established_intent_is_denied if {
	inp := testlib.step("steps/agentTrigger", {"trigger_type": "user_message", "intent": {"parsed": ["filesystem.read", "network.egress"]}}, intent_session("earlier-step"), testlib.client_full)
	fs := ibac.findings with input as inp
	some f in fs
	f.reason_code == "ibac_intent_immutable"
	f.policy_data.attempted_capabilities == ["filesystem.read", "network.egress"]
}

test_the_establishing_step_and_a_restatement_pass if {
	establishing := testlib.step("steps/sessionStart", {"intent": {"parsed": ["filesystem.read"]}}, intent_session("00000000-0000-4000-8000-000000000001"), testlib.client_full)
	count(ibac.findings) == 0 with input as establishing
	same := testlib.step("steps/agentTrigger", {"trigger_type": "user_message", "intent": {"parsed": ["filesystem.read"]}}, intent_session("earlier-step"), testlib.client_full)
	count(ibac.findings) == 0 with input as same
}

test_steps_without_an_intent_do_not_trip_immutability if {
	inp := testlib.step("steps/toolCallRequest", {"tool": {"name": "read_file"}, "arguments": {}}, intent_session("earlier-step"), testlib.client_full)
	fs := ibac.findings with input as inp
	not "ibac_intent_immutable" in testlib.reason_codes(fs)
}
