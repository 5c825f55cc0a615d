package acs.fides_test

import data.acs.fides
import data.acs.testlib

prov_table := {
	"trust": {"u1": "trusted", "w1": "untrusted", "a1": "untrusted"},
	"lineage": {"a1": ["w1"]},
	"records": {},
}

test_untrusted_argument_into_consequential_tool_is_denied if {
	s := testlib.session(prov_table, testlib.no_taint, 1, testlib.base_counters, testlib.no_skills)
	inp := testlib.tool_call_in("email.send", {"to": testlib.arg("bob@example.com", "u1", "user_input"), "body": testlib.arg("see attached", "a1", "agent_generated")}, s)
	fs := fides.findings with input as inp
	some f in fs
	f.disposition == "deny"
	f.reason_code == "fides_p_t_violation"
	"untrusted_into_consequential" in f.extra_reason_codes
	f.policy_data.argument_paths == ["/arguments/body"]
	f.cited_provenance_ids == ["a1", "w1"]
}

test_trusted_arguments_pass if {
	s := testlib.session(prov_table, testlib.no_taint, 1, testlib.base_counters, testlib.no_skills)
	fs := fides.findings with input as testlib.tool_call_in("email.send", {"to": testlib.arg("bob@example.com", "u1", "user_input")}, s)
	count(fs) == 0
}

test_unknown_provenance_counts_as_untrusted if {
	s := testlib.session(prov_table, testlib.no_taint, 1, testlib.base_counters, testlib.no_skills)
	fs := fides.findings with input as testlib.tool_call_in("email.send", {"to": testlib.arg("x@example.com", "zz", "user_input")}, s)
	count(fs) == 1
}

test_untrusted_data_into_harmless_tool_passes if {
	s := testlib.session(prov_table, testlib.no_taint, 1, testlib.base_counters, testlib.no_skills)
	fs := fides.findings with input as testlib.tool_call_in("read_file", {"path": testlib.arg("/workspace/a", "w1", "retrieved")}, s)
	count(fs) == 0
}

test_argument_path_is_escaped if {
	s := testlib.session(prov_table, testlib.no_taint, 1, testlib.base_counters, testlib.no_skills)
	fs := fides.findings with input as testlib.tool_call_in("http.post", {"a/b": testlib.arg("x", "w1", "retrieved")}, s)
	some f in fs
	f.policy_data.argument_paths == ["/arguments/a~1b"]
}
