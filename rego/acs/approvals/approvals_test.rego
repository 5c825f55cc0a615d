package acs.approvals_test

import data.acs.approvals
import data.acs.testlib

test_tool_needing_approval_asks if {
	fs := approvals.findings with input as testlib.tool_call("payments.transfer", {})
	some f in fs
	f.disposition == "ask"
	f.reason_code == "approval_required"
	f.ask_details.approver == {"type": "human", "id": "security-oncall"}
	f.ask_details.timeout_seconds == 600
	is_string(f.ask_details.question)
}

test_recorded_grant_satisfies_the_approval if {
	s := testlib.session_with_intent_and_approvals([], "moderate", [{"scope": "this_request", "tool": "payments.transfer", "capabilities": []}])
	fs := approvals.findings with input as testlib.tool_call_in("payments.transfer", {}, s)
	count(fs) == 0
}

test_capability_needing_approval_asks if {
	inp := testlib.step("steps/toolCallRequest", {"tool": {"name": "vault"}, "capability": "secrets.read", "arguments": {}}, testlib.empty_session, testlib.client_full)
	fs := approvals.findings with input as inp
	count(fs) == 1
}

test_other_tools_pass if {
	fs := approvals.findings with input as testlib.tool_call("read_file", {})
	count(fs) == 0
}
