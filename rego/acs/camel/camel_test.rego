package acs.camel_test

import data.acs.camel
import data.acs.testlib

prov_table := {
	"trust": {"u1": "trusted", "a1": "untrusted", "w1": "untrusted"},
	"lineage": {"a1": ["u1", "w1"], "u1": []},
	"records": {
		"u1": {"origin": "user_input"},
		"a1": {"origin": "agent_generated"},
		"w1": {"origin": "retrieved"},
	},
}

test_recipient_from_user_input_passes if {
	s := testlib.session(prov_table, testlib.no_taint, 1, testlib.base_counters, testlib.no_skills)
	fs := camel.findings with input as testlib.tool_call_in("email.send", {"to": testlib.arg("bob@example.com", "u1", "user_input")}, s)
	count(fs) == 0
}

test_recipient_depending_on_retrieved_data_is_denied if {
	s := testlib.session(prov_table, testlib.no_taint, 1, testlib.base_counters, testlib.no_skills)
	fs := camel.findings with input as testlib.tool_call_in("email.send", {"to": testlib.arg("evil@example.com", "a1", "agent_generated")}, s)
	some f in fs
	f.reason_code == "camel_dependency_graph_violation"
	f.cited_provenance_ids == ["a1", "w1"]
	count(f.policy_data.violations) == 2
}

test_planned_argument_without_provenance_is_denied if {
	inp := testlib.step("steps/toolCallRequest", {"tool": {"name": "email.send"}, "arguments": {"to": {"value": "x@example.com"}}}, testlib.empty_session, testlib.client_full)
	fs := camel.findings with input as inp
	some f in fs
	f.policy_data.violations[0].origin == "missing"
}

test_unplanned_tools_pass if {
	s := testlib.session(prov_table, testlib.no_taint, 1, testlib.base_counters, testlib.no_skills)
	fs := camel.findings with input as testlib.tool_call_in("read_file", {"path": testlib.arg("/workspace/x", "w1", "retrieved")}, s)
	count(fs) == 0
}
